import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

// No Docker engine runs here: the deployment files are checked statically.
const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

interface ComposeService {
  image?: string;
  build?: { dockerfile: string; args: Record<string, string> };
  ports?: string[];
  healthcheck?: unknown;
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
}

describe('deployment files', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, ComposeService> };
  const apps = ['identity', 'risk', 'gateway'];

  it('images start from node:24, run as a non-root user in production mode, with a health check', () => {
    const dockerfile = read('deploy/Dockerfile');
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    assert.ok(bases.length >= 2 && bases.every((b) => b?.startsWith('node:24')), bases.join(', '));
    assert.match(dockerfile, /^USER node$/m);
    assert.match(dockerfile, /NODE_ENV=production/);
    assert.match(dockerfile, /^HEALTHCHECK .*\n.*\/health\/live/m);
  });

  it('compose publishes only the gateway, on 8080', () => {
    const published = Object.entries(compose.services).filter(([, s]) => s.ports !== undefined);
    assert.deepEqual(published, [['gateway', compose.services.gateway]]);
    assert.deepEqual(compose.services.gateway?.ports, ['8080:8080']);
  });

  it('every piece has a health check or waits on healthy dependencies, in the right order', () => {
    assert.ok(compose.services.postgres?.healthcheck && compose.services.redis?.healthcheck);
    for (const app of apps) {
      const service = compose.services[app]!;
      assert.equal(service.build?.dockerfile, 'deploy/Dockerfile');
      assert.equal(service.build?.args.DEPLOYABLE, app);
      assert.ok(Object.values(service.depends_on ?? {}).every((d) => d.condition === 'service_healthy'), app);
      assert.equal(service.environment?.HOST, '0.0.0.0');
    }
    assert.deepEqual(Object.keys(compose.services.gateway?.depends_on ?? {}).sort(), ['identity', 'redis', 'risk']);
  });

  it('compose uses the environment names the services read', () => {
    const names = new Set(apps.flatMap((app) => Object.keys(compose.services[app]?.environment ?? {})));
    const configs = read('services/identity/src/config.ts') + read('services/risk/src/config.ts') + read('gateway/src/config.ts');
    for (const name of names) {
      if (name === 'APP_ENV') continue;
      assert.match(configs, new RegExp(`^  ${name}: env\\.`, 'm'), `${name} is read by no service`);
    }
  });
});
