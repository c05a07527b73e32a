import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

describe('runtime', () => {
  it('tests run on Node 24, the pinned LTS, not the machine\'s own Node', () => {
    assert.match(process.version, /^v24\./);
  });

  it('the workspace pins Node 24 as a devDependency, allows its install script, and requires it in engines', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      engines: { node: string };
      devDependencies: Record<string, string>;
      pnpm: { onlyBuiltDependencies: string[] };
    };
    const workspace = readFileSync(new URL('../pnpm-workspace.yaml', import.meta.url), 'utf8');
    assert.equal(pkg.engines.node, '>=24');
    assert.equal(pkg.devDependencies.node, 'catalog:');
    assert.match(workspace, /^ {2}node: 24\.\d+\.\d+$/m);
    assert.ok(pkg.pnpm.onlyBuiltDependencies.includes('node'));
  });
});
