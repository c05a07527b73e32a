import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { composeProblems, composeSchemaProblems } from './deploy-support/compose-checks.ts';
import { DEPLOYABLES, REPO_ROOT } from './deploy-support/deployables.ts';
import { dockerfileProblems } from './deploy-support/dockerfile-checks.ts';
import { schemaProblems } from './deploy-support/k8s-schema.ts';
import { overlayProblems } from './deploy-support/k8s-checks.ts';
import { containersOf, kustomizeBuild, readManifests, strategicMerge } from './deploy-support/kustomize.ts';
import { operatorSecrets, secretReferenceProblems } from './deploy-support/secret-references.ts';
import { secretProblems } from './deploy-support/secret-scan.ts';

// No Docker engine and no cluster here: the deployment files are checked statically, against the
// code they deploy (each deployable's config.ts, package.json and scripts).
const ENVS = ['local', 'test', 'prod'] as const;
const overlay = (...path: string[]) => join(REPO_ROOT, 'deploy', 'k8s', 'overlays', ...path);
// {base_url} and {risk_base_url} of each environment (test and prod: the presets of packages/client).
const PUBLIC_HOSTS = {
  local: ['api.localhost', 'risk.localhost'],
  test: ['api.test.example.com', 'risk.test.example.com'],
  prod: ['api.example.com', 'risk.example.com'],
};
const publicHosts = (env: (typeof ENVS)[number]) => PUBLIC_HOSTS[env];

describe('deployment files', () => {
  describe('Dockerfiles', () => {
    for (const d of DEPLOYABLES) {
      it(`deploy/${d.name}/Dockerfile: multi-stage on the catalog's Node, only ${d.name} via pnpm deploy, non-root, production, health check on /health/live`, () => {
        assert.deepEqual(dockerfileProblems(REPO_ROOT, d), []);
      });
    }
  });

  describe('docker-compose.yml', () => {
    it('is valid against the Compose specification schema', () => {
      assert.deepEqual(composeSchemaProblems(REPO_ROOT), []);
    });

    it('runs the local environment: settings each config.ts accepts, only the gateway published, migrations and seed once before the services', () => {
      assert.deepEqual(composeProblems(REPO_ROOT), []);
    });
  });

  describe('Kubernetes (deploy/k8s)', () => {
    it('every manifest and kustomization parses as YAML', () => {
      const walk = (dir: string): string[] =>
        readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
      const files = walk(join(REPO_ROOT, 'deploy', 'k8s'));
      assert.ok(files.length > 20, `only ${files.length} files`);
      for (const file of files) assert.doesNotThrow(() => readManifests(file), relative(REPO_ROOT, file));
    });

    for (const env of ENVS) {
      it(`overlay ${env}: every object is valid for its kind, and each deployable would start with its settings`, () => {
        const objects = kustomizeBuild(overlay(env));
        assert.deepEqual(schemaProblems(objects), []);
        assert.deepEqual(overlayProblems(env, objects, REPO_ROOT, publicHosts(env)), []);
        assert.deepEqual(secretReferenceProblems(env, objects, operatorSecrets(REPO_ROOT)), []);
        assert.ok(objects.every((o) => o.metadata.namespace === `platform-${env}`));
      });

      for (const d of DEPLOYABLES) {
        it(`overlay ${env}/${d.name} deploys ${d.name} on its own`, () => {
          const objects = kustomizeBuild(overlay(env, d.name));
          assert.deepEqual(schemaProblems(objects), []);
          assert.deepEqual(overlayProblems(env, objects, REPO_ROOT, d.name === 'gateway' ? publicHosts(env) : undefined), []);
          assert.deepEqual(secretReferenceProblems(env, objects, operatorSecrets(REPO_ROOT)), []);
          const others = new Set<string>(DEPLOYABLES.filter((x) => x.name !== d.name).map((x) => x.name));
          assert.ok(!objects.some((o) => others.has(o.metadata.labels?.['app.kubernetes.io/name'] ?? '')), 'contains another deployable');
        });
      }
    }

    it('the redis-cluster component on the prod overlay: each deployable reads its cluster seeds and password from its own Secret instead of REDIS_URL, and would start with them', () => {
      const dir = join(REPO_ROOT, 'deploy', 'k8s', 'components', 'redis-cluster');
      const component = readManifests(join(dir, 'kustomization.yaml'))[0] as unknown as { kind: string; patches: Array<{ path: string }> };
      assert.equal(component.kind, 'Component');
      const objects = kustomizeBuild(overlay('prod'));
      // What `components: [../../components/redis-cluster]` in the overlay does: its patches on the built objects.
      const patched = new Set<string>();
      for (const { path } of component.patches) {
        for (const patch of readManifests(join(dir, path))) {
          const target = objects.find((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name);
          assert.ok(target !== undefined, `${path} patches ${patch.kind} ${patch.metadata.name}, which the overlay does not have`);
          strategicMerge(target as unknown as Record<string, unknown>, { spec: patch.spec });
          patched.add(patch.metadata.name);
        }
      }
      assert.deepEqual([...patched].sort(), DEPLOYABLES.map((d) => d.name).sort());
      for (const d of DEPLOYABLES) {
        const container = containersOf(objects.find((o) => o.kind === 'Deployment' && o.metadata.name === d.name)!).find((c) => c.name === d.name)!;
        const env = container.env as Array<{ name: string; valueFrom?: { secretKeyRef?: { name: string } } }>;
        assert.ok(!env.some((e) => e.name === 'REDIS_URL'), `${d.name} still names REDIS_URL`);
        for (const name of ['REDIS_CLUSTER_NODES', 'REDIS_PASSWORD']) assert.equal(env.find((e) => e.name === name)?.valueFrom?.secretKeyRef?.name, `${d.name}-secrets`, `${d.name} ${name}`);
      }
      assert.deepEqual(overlayProblems('prod', objects, REPO_ROOT, publicHosts('prod')), []);
      assert.deepEqual(secretReferenceProblems('prod', objects, operatorSecrets(REPO_ROOT)), []);
      assert.deepEqual(schemaProblems(objects), []);
    });

    it('local needs no Secret of the operator: `kubectl apply -k deploy/k8s/overlays/local` starts as it is', () => {
      const secrets = operatorSecrets(REPO_ROOT);
      assert.deepEqual(secrets.map((s) => s.name).sort(), ['gateway-client-keys', 'gateway-secrets', 'identity-secrets', 'risk-secrets']);
      assert.deepEqual(secrets.filter((s) => s.envs === undefined || s.envs.includes('local')).map((s) => s.name), []);
    });

    it('scales the risk service on its own, within bounds that grow from local to prod', () => {
      const bounds = ENVS.map((env) => {
        const hpa = kustomizeBuild(overlay(env, 'risk')).find((o) => o.kind === 'HorizontalPodAutoscaler')!;
        const spec = hpa.spec as { minReplicas: number; maxReplicas: number };
        return [spec.minReplicas, spec.maxReplicas];
      });
      assert.deepEqual(bounds, [
        [1, 2],
        [2, 4],
        [3, 20],
      ]);
    });
  });

  it('no secret value is committed: no keys, passwords, tokens or Secret objects with data', () => {
    assert.deepEqual(secretProblems(REPO_ROOT), []);
  });
});
