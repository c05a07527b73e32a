import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeProblems, composeSchemaProblems } from './deploy-support/compose-checks.ts';
import { REPO_ROOT, deployable } from './deploy-support/deployables.ts';
import { dockerfileProblems } from './deploy-support/dockerfile-checks.ts';
import { schemaProblems } from './deploy-support/k8s-schema.ts';
import { overlayProblems } from './deploy-support/k8s-checks.ts';
import { kustomizeBuild, resolveKustomization } from './deploy-support/kustomize.ts';
import { operatorSecrets, secretReferenceProblems } from './deploy-support/secret-references.ts';
import { secretProblems } from './deploy-support/secret-scan.ts';

// Each test breaks one thing in a copy of the deployment files and expects the checks of
// deploy.test.ts to say so: a check that never fails proves nothing.
describe('deployment checks on a broken copy', () => {
  let root = '';

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'deploy-copy-'));
    for (const path of ['deploy', 'docker-compose.yml', '.dockerignore', 'docs/deploy.md']) cpSync(join(REPO_ROOT, path), join(root, path), { recursive: true });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  /** Replaces text in a copied file; the text must be there, so a changed manifest fails loudly here. */
  function mutate(path: string, from: string | RegExp, to: string): void {
    const file = join(root, path);
    const text = readFileSync(file, 'utf8');
    assert.match(text, typeof from === 'string' ? new RegExp(from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : from, `${path} no longer contains ${from}`);
    writeFileSync(file, text.replace(from, to));
  }

  const built = (...path: string[]) => kustomizeBuild(join(root, 'deploy', 'k8s', 'overlays', ...path));
  const includes = (problems: string[], fragment: string) =>
    assert.ok(problems.some((p) => p.includes(fragment)), `expected a problem with "${fragment}", got:\n${problems.join('\n')}`);

  it('rejects a manifest field of the wrong type (the Kubernetes schema)', () => {
    mutate('deploy/k8s/base/identity/deployment.yaml', 'containerPort: 8081', 'containerPort: "8081"');
    includes(schemaProblems(built('test', 'identity')), 'containerPort must be integer');
  });

  it('rejects a gateway whose metrics the ingress controller could reach, or whose management port is not declared', () => {
    mutate('deploy/k8s/base/gateway/network-policy.yaml', /ports:\n\s+- port: http/, 'ports:\n        - port: http\n        - port: management');
    includes(overlayProblems('prod', built('prod', 'gateway'), root), 'ingress-nginx may reach the http port only');
    mutate('deploy/k8s/base/gateway/deployment.yaml', 'containerPort: 9080', 'containerPort: 9081');
    includes(overlayProblems('prod', built('prod', 'gateway'), root), 'container port management must be 9080');
  });

  it('rejects a setting that config.ts requires in prod and the overlay forgot', () => {
    mutate('deploy/k8s/overlays/prod/identity/kustomization.yaml', /\s+- BOOTSTRAP_ADMIN_USERNAME=\S+/, '');
    includes(overlayProblems('prod', built('prod', 'identity'), root), 'BOOTSTRAP_ADMIN_USERNAME is required in APP_ENV=prod');
  });

  it('rejects a setting that config.ts refuses in prod (a cross-key rule)', () => {
    mutate('deploy/k8s/overlays/prod/identity/kustomization.yaml', 'MAIL_PROVIDER=http', 'MAIL_PROVIDER=log');
    includes(overlayProblems('prod', built('prod', 'identity'), root), 'MAIL_PROVIDER=log is not allowed in prod');
  });

  it('rejects a TOKEN_ISSUER that is not the gateway\'s public origin, or that differs between the deployables', () => {
    mutate('deploy/k8s/overlays/prod/gateway/kustomization.yaml', 'TOKEN_ISSUER=https://api.example.com', 'TOKEN_ISSUER=https://gateway.internal.example.com');
    includes(overlayProblems('prod', built('prod', 'gateway'), root, ['api.example.com', 'risk.example.com']), 'TOKEN_ISSUER must be the origin of one of the gateway\'s public hosts');
    includes(overlayProblems('prod', built('prod'), root), 'TOKEN_ISSUER differs between the deployables');
  });

  it('rejects a secret written into a manifest instead of referenced', () => {
    mutate(
      'deploy/k8s/base/identity/deployment.yaml',
      /- name: JWT_PRIVATE_KEY\n(\s+)valueFrom:\n\s+secretKeyRef:\n\s+name: identity-secrets\n\s+key: JWT_PRIVATE_KEY/,
      '- name: JWT_PRIVATE_KEY\n$1value: "-----BEGIN PRIVATE KEY-----MC4CAQAwBQYDK2VwBCIEIAx-----END PRIVATE KEY-----"',
    );
    includes(secretProblems(root), 'a private key');
    includes(overlayProblems('prod', built('prod', 'identity'), root), 'JWT_PRIVATE_KEY is a secret');
  });

  it('rejects a pod that reads a Secret nobody creates: not the overlay, not the operator by docs/deploy.md (CreateContainerConfigError)', () => {
    const secretsProblems = (env: 'local' | 'test', ...path: string[]) => secretReferenceProblems(env, built(env, ...path), operatorSecrets(root));
    mutate('deploy/k8s/overlays/local/risk/local-env.yaml', /\n\s+- name: INTERNAL_ASSERTION_KEY\n\s+\$patch: delete/, '');
    includes(secretsProblems('local', 'risk'), 'local Deployment risk container risk INTERNAL_ASSERTION_KEY: reads Secret risk-secrets, which the overlay does not create');
    mutate('docs/deploy.md', '| `gateway-secrets` (test, prod) |', '| `gateway-secrets` (prod) |');
    includes(secretsProblems('test', 'gateway'), 'test Deployment gateway container gateway REDIS_URL: reads Secret gateway-secrets');
    mutate('deploy/k8s/base/identity/deployment.yaml', 'key: SMS_CODE_HMAC_KEY', 'key: SMS_CODE_KEY');
    includes(secretsProblems('test', 'identity'), 'reads key SMS_CODE_KEY of Secret identity-secrets, which docs/deploy.md does not list');
  });

  it('rejects a password in a URL anywhere in the deployment files', () => {
    mutate('docker-compose.yml', 'postgres://postgres@postgres:5432/identity', 'postgres://postgres:hunter2@postgres:5432/identity');
    includes(secretProblems(root), 'a URL with a password');
  });

  it('rejects a readiness probe on the wrong path and a grace period shorter than the drain', () => {
    mutate('deploy/k8s/base/risk/deployment.yaml', /readinessProbe:\n(\s+)httpGet:\n(\s+)path: \/health\/ready/, 'readinessProbe:\n$1httpGet:\n$2path: /health/live');
    mutate('deploy/k8s/base/gateway/deployment.yaml', 'terminationGracePeriodSeconds: 30', 'terminationGracePeriodSeconds: 10');
    includes(overlayProblems('prod', built('prod'), root), 'readinessProbe must GET /health/ready');
    includes(overlayProblems('prod', built('prod'), root), 'terminationGracePeriodSeconds 10');
  });

  it('rejects a NetworkPolicy that lets any pod reach the risk service', () => {
    mutate('deploy/k8s/base/risk/network-policy.yaml', '    - from:\n', '    - from:\n        - podSelector: {}\n');
    includes(overlayProblems('test', built('test'), root), 'NetworkPolicy for risk: lets in {"podSelector":{}}');
  });

  it('rejects Prometheus reaching a service\'s API port, and a metrics port the pods do not open', () => {
    mutate('deploy/k8s/base/identity/network-policy.yaml', '        - port: metrics', '        - port: metrics\n        - port: http');
    includes(overlayProblems('prod', built('prod', 'identity'), root), 'NetworkPolicy for identity: monitoring may reach the metrics port only');
    mutate('deploy/k8s/base/risk/deployment.yaml', 'containerPort: 9082', 'containerPort: 9083');
    includes(overlayProblems('test', built('test', 'risk'), root), 'container port metrics must be 9082 (RISK_METRICS_PORT)');
  });

  it('rejects egress beyond what a deployable\'s settings name, and settings its egress does not allow', () => {
    // The mail and SMS providers of prod, left out: identity could not send.
    mutate('deploy/k8s/overlays/prod/identity/kustomization.yaml', '  - notifications-egress.yaml\n', '');
    includes(overlayProblems('prod', built('prod', 'identity'), root), 'prod Deployment identity: cannot reach MAIL_HTTP_URL (outside the cluster, port 443/TCP)');
    // HTTPS anywhere for every environment: test writes mail and SMS to the log.
    mutate('deploy/k8s/base/identity/network-policy.yaml', /(\n {2}egress:\n)/, '$1    - ports:\n        - port: 443\n');
    includes(overlayProblems('test', built('test', 'identity'), root), 'test Deployment identity: NetworkPolicy identity lets it reach anywhere on port 443/TCP, which none of its settings needs');
    // Every port of the upstreams, and risk reaching the gateway instead of identity's token keys.
    mutate('deploy/k8s/base/gateway/network-policy.yaml', /(app\.kubernetes\.io\/name: risk\n\s+app\.kubernetes\.io\/component: api\n)\s+ports:\n\s+- port: http\n/, '$1');
    includes(overlayProblems('test', built('test', 'gateway'), root), 'NetworkPolicy gateway lets it reach every port of identity pods, risk pods');
    mutate('deploy/k8s/base/risk/network-policy.yaml', /(egress:[^]*?app\.kubernetes\.io\/name: )identity/, '$1gateway');
    const risk = overlayProblems('test', built('test', 'risk'), root);
    includes(risk, 'test Deployment risk: cannot reach IDENTITY_JWKS_URL (identity pods, port 8081/TCP)');
    includes(risk, 'lets it reach gateway pods on port http/TCP, which none of its settings needs');
  });

  it('rejects a kustomization feature the resolver does not implement, rather than skipping it', () => {
    mutate('deploy/k8s/overlays/test/risk/kustomization.yaml', 'patches:', 'namePrefix: blue-\npatches:');
    // The resolver itself: kubectl kustomize, used where kubectl is, implements namePrefix.
    assert.throws(() => resolveKustomization(join(root, 'deploy', 'k8s', 'overlays', 'test', 'risk')), /does not implement namePrefix/);
  });

  it('rejects a compose file the Compose specification does not allow', () => {
    mutate('docker-compose.yml', 'identity-migrate: { condition: service_completed_successfully }', 'identity-migrate: { condition: service_done }');
    includes(composeSchemaProblems(root), '/services/identity/depends_on');
  });

  it('rejects a compose Redis that would lose its data on a restart', () => {
    mutate('docker-compose.yml', '"--appendonly", "yes"', '"--appendonly", "no"');
    includes(composeProblems(root), 'redis: must run with --appendonly yes --appendfsync everysec');
  });

  it('rejects a compose Redis that may evict keys (nonces, revocations) under memory pressure', () => {
    mutate('docker-compose.yml', '"--maxmemory-policy", "noeviction"', '"--maxmemory-policy", "volatile-lru"');
    includes(composeProblems(root), 'redis: must run with --maxmemory-policy noeviction');
  });

  it('rejects a compose variable that no config.ts reads (a typo)', () => {
    mutate('docker-compose.yml', '      IDENTITY_DATABASE_URL: postgres://postgres@postgres:5432/identity\n    volumes', '      IDENTITY_DATABSE_URL: postgres://postgres@postgres:5432/identity\n    volumes');
    includes(composeProblems(root), 'IDENTITY_DATABSE_URL is set but read by no config.ts');
  });

  it('rejects an image that runs as root or on a port the code does not use', () => {
    mutate('deploy/risk/Dockerfile', 'USER node\n', '');
    mutate('deploy/risk/Dockerfile', 'EXPOSE 8082', 'EXPOSE 8083');
    const problems = dockerfileProblems(root, deployable('risk'));
    includes(problems, 'must end as USER node');
    includes(problems, 'EXPOSE 8083 is not the port 8082');
  });

  it('rejects an image build that runs the `node` package\'s install script (Node downloaded again onto a Node base)', () => {
    mutate('deploy/identity/Dockerfile', ' --config.ignore-dep-scripts=true', '');
    includes(dockerfileProblems(root, deployable('identity')), 'the build stage must `pnpm install --config.ignore-dep-scripts=true`');
  });

  it('rejects NODE_OPTIONS in an image that does more than size the heap (a debugger port, a preloaded file)', () => {
    mutate('deploy/risk/Dockerfile', 'ENV NODE_OPTIONS="--max-semi-space-size=8 --max-old-space-size=192"', 'ENV NODE_OPTIONS="--max-semi-space-size=8 --inspect=0.0.0.0:9229"');
    includes(dockerfileProblems(root, deployable('risk')), 'NODE_OPTIONS may only size the V8 heap');
  });

  it('rejects a MALLOC_ARENA_MAX that is no small count of arenas', () => {
    mutate('deploy/gateway/Dockerfile', 'ENV MALLOC_ARENA_MAX=2', 'ENV MALLOC_ARENA_MAX=64');
    mutate('deploy/risk/Dockerfile', 'ENV MALLOC_ARENA_MAX=2', 'ENV MALLOC_ARENA_MAX=two');
    const message = 'MALLOC_ARENA_MAX must be a count of glibc malloc arenas from 1 to 8';
    includes(dockerfileProblems(root, deployable('gateway')), message);
    includes(dockerfileProblems(root, deployable('risk')), message);
    assert.deepEqual(dockerfileProblems(root, deployable('identity')), []);
  });

  it('rejects a CMD that passes node more than the memory flags (a debugger port, a preloaded file)', () => {
    mutate('deploy/gateway/Dockerfile', 'CMD ["node", "--heap-growing-percent=20", "--no-maglev", "dist/src/index.js"]', 'CMD ["node", "--inspect=0.0.0.0:9229", "dist/src/index.js"]');
    mutate('deploy/risk/Dockerfile', 'CMD ["node", "--no-maglev", "dist/src/index.js"]', 'CMD ["node", "--no-maglev", "--require=/tmp/x.js", "dist/src/index.js"]');
    mutate('deploy/identity/Dockerfile', 'CMD ["node", "dist/src/index.js"]', 'CMD ["node", "--no-maglev", "--heap-growing-percent=20", "dist/src/index.js"]');
    const message = 'CMD must be ["node", "dist/src/index.js"], with at most --heap-growing-percent=<n> and --no-maglev';
    includes(dockerfileProblems(root, deployable('gateway')), message);
    includes(dockerfileProblems(root, deployable('risk')), message);
    // In their one order: a reader of the CMD line always finds them the same way.
    includes(dockerfileProblems(root, deployable('identity')), message);
  });
});
