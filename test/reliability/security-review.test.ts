import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { claimsOf } from './support/forge-jwt.ts';
import { type LoggedInUser, type Stack, startStack } from './support/stack.ts';

interface AuditEvent {
  type: string;
  subjectUserId: string | null;
  details: Record<string, unknown>;
}

/**
 * Findings of the outside security review (issue "security findings"), each attacked again through the
 * whole stack: the audit trail keeps no password typed as a username, another user's session is no
 * different from an unknown one, and unblock lifts blocks only.
 */
describe('security review findings: audit trail, session oracle, unblock', function () {
  this.timeout(120_000);
  let stack: Stack;
  let admin: LoggedInUser;

  before(async () => {
    stack = await startStack();
    admin = await stack.userWith(['ADMIN']);
  });
  after(async () => {
    await stack?.close();
  });

  const auditEvents = async (query: string): Promise<AuditEvent[]> => {
    const res = await stack.call('GET', `/v1/audit/events?${query}`, { bearer: admin.accessToken });
    assert.equal(res.status, 200, res.body.toString());
    return (res.json() as { items: AuditEvent[] }).items;
  };

  describe('a password typed into the username field never reaches the audit trail', () => {
    it('the login fails as any other, and every ADMIN reading login.failed sees a digest, never the text', async () => {
      const user = await stack.userWith(['STANDARD_USER']);
      // The user's password in the username field, and the address in the password field: a classic slip.
      const res = await stack.call('POST', '/v1/auth/login', { body: { username: user.password, password: user.username } });
      assert.equal(res.status, 401);
      const trail = await stack.call('GET', '/v1/audit/events?type=login.failed&limit=200', { bearer: admin.accessToken });
      assert.equal(trail.status, 200);
      assert.ok(!trail.body.toString().includes(user.password), 'the password is in the audit trail');
      const rows = await stack.identity.db('audit_events').whereRaw('details::text LIKE ?', [`%${user.password}%`]).select('id');
      assert.deepEqual(rows, [], 'the password is stored in audit_events');
      const [latest] = await auditEvents('type=login.failed&limit=1');
      assert.deepEqual(Object.keys(latest!.details).sort(), ['reason', 'usernameDigest']);
    });

    it('an unknown username that is an address is kept as given; a known user\'s failure names the user', async () => {
      const stranger = `nobody-${randomUUID()}@example.com`;
      assert.equal((await stack.call('POST', '/v1/auth/login', { body: { username: stranger, password: 'whatever-password-1' } })).status, 401);
      const [latest] = await auditEvents('type=login.failed&limit=1');
      assert.deepEqual(latest!.details, { username: stranger, reason: 'unknown-username' });
      const user = await stack.userWith(['STANDARD_USER']);
      assert.equal((await stack.call('POST', '/v1/auth/login', { body: { username: user.username.toUpperCase(), password: 'wrong-password-1' } })).status, 401);
      const [own] = await auditEvents(`type=login.failed&subjectUserId=${user.id}`);
      assert.deepEqual(own!.details, { username: user.username, reason: 'wrong-password', failedLoginCount: 1 });
    });
  });

  describe('DELETE /v1/auth/sessions/{id} tells a non-ADMIN nothing about other users\' sessions', () => {
    it('another user\'s live session and an id no session has answer alike (404 Session not found), and the session lives on', async () => {
      const victim = await stack.userWith(['STANDARD_USER']);
      const prober = await stack.userWith(['POWER_USER']);
      const victimSession = String(claimsOf(victim.accessToken).sid);
      const [theirs, nobodys] = await Promise.all([
        stack.call('DELETE', `/v1/auth/sessions/${victimSession}`, { bearer: prober.accessToken }),
        stack.call('DELETE', `/v1/auth/sessions/${randomUUID()}`, { bearer: prober.accessToken }),
      ]);
      const shape = (res: typeof theirs) => {
        const { timestamp: _t, path: _p, ...rest } = res.json() as Record<string, unknown>;
        return [res.status, rest];
      };
      assert.deepEqual(shape(theirs), shape(nobodys));
      assert.deepEqual(shape(theirs), [404, { status: 404, error: 'Not Found', message: 'Session not found' }]);
      assert.equal((await stack.call('GET', '/v1/weather-stations/get-cities', { bearer: victim.accessToken })).status, 200, 'the victim\'s session still works');
    });
  });

  describe('unblock lifts a block and nothing else', () => {
    for (const status of ['DELETED', 'EXPIRED', 'INACTIVE', 'ACTIVE'] as const) {
      it(`a ${status} user answers ${status === 'ACTIVE' ? '200 (a retried unblock)' : '409 User is not blocked'}, stays ${status} and cannot log in unless it could before`, async () => {
        const user = await stack.userWith(['STANDARD_USER']);
        await stack.identity.db('users').where({ id: user.id }).update({ status });
        const before = await stack.snapshot();
        const res = await stack.call('GET', `/v1/users/unblock/${user.id}`, { bearer: admin.accessToken });
        if (status === 'ACTIVE') assert.equal(res.status, 200, res.body.toString());
        else assert.deepEqual([res.status, (res.json() as { message: string }).message], [409, 'User is not blocked']);
        assert.equal(await stack.snapshot(), before, 'nothing changed, nothing recorded');
        const login = await stack.call('POST', '/v1/auth/login', { body: { username: user.username, password: user.password } });
        assert.equal(login.status, status === 'ACTIVE' ? 200 : 401);
      });
    }

    it('a BLOCKED user becomes ACTIVE, recorded as a status change and an unblock', async () => {
      const user = await stack.userWith(['STANDARD_USER']);
      const block = await stack.call('PATCH', '/v1/users/update', { bearer: admin.accessToken, body: { userId: user.id, status: 'BLOCKED' } });
      assert.equal(block.status, 200, block.body.toString());
      const res = await stack.call('GET', `/v1/users/unblock/${user.id}`, { bearer: admin.accessToken });
      assert.deepEqual([res.status, (res.json() as { status: string }).status], [200, 'ACTIVE']);
      const events = await auditEvents(`subjectUserId=${user.id}&limit=2`);
      assert.deepEqual(
        events.map((e) => [e.type, e.details]).sort(),
        [
          ['user.status_changed', { previousStatus: 'BLOCKED', newStatus: 'ACTIVE' }],
          ['user.unblocked', { previousStatus: 'BLOCKED', previousFailedLoginCount: 0 }],
        ],
      );
      assert.equal((await stack.call('POST', '/v1/auth/login', { body: { username: user.username, password: user.password } })).status, 200);
    });
  });
});
