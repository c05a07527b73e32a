import assert from 'node:assert/strict';
import { ensureBootstrapAdmin } from '../src/users/bootstrap-admin.ts';
import { findUserByUsername } from '../src/user-records/users.repository.ts';
import { type IdentityHarness, startIdentity, uniqueUsername } from './support/identity-harness.ts';

describe('bootstrap ADMIN', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity();
  });
  after(async () => {
    await identity.close();
  });
  const deps = () => ({ db: identity.db, hasher: identity.hasher, logger: identity.log.logger });

  it('when the user is missing, creates an ACTIVE ADMIN who can log in', async () => {
    const username = uniqueUsername('admin');
    await ensureBootstrapAdmin(deps(), { username, password: 'first-password' });
    const admin = await findUserByUsername(identity.db, username);
    assert.deepEqual([admin?.roles, admin?.status], [['ADMIN'], 'ACTIVE']);
    assert.ok((await identity.login({ username, password: 'first-password' })).accessToken);
  });

  it('when the user exists (in any spelling), never overwrites it', async () => {
    const username = uniqueUsername('admin');
    await ensureBootstrapAdmin(deps(), { username, password: 'first-password' });
    await identity.db('users').where({ username }).update({ status: 'BLOCKED' });
    await ensureBootstrapAdmin(deps(), { username: username.toUpperCase(), password: 'second-password' });
    const rows = await identity.db('users').whereRaw('lower(username::text) = ?', [username.toLowerCase()]);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].status, 'BLOCKED');
    assert.ok(await identity.hasher.verify('first-password', rows[0].password_hash));
  });
});
