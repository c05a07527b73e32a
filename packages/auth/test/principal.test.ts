import assert from 'node:assert/strict';
import { ForbiddenError } from '@platform/errors';
import { type Principal, assertAnyRole, assertSelfOrRole, hasAnyRole } from '../src/principal.ts';
import { ROLES, type Role, isRole } from '../src/roles.ts';

function principal(roles: Role[], userId = 'user-1'): Principal {
  return { userId, username: 'someone@example.com', roles, sessionId: 'sid-1', tokenId: 'jti-1', expiresAt: 2_000_000_000, aal: 1, secondFactorRequired: false };
}

function assertForbidden(fn: () => void): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ForbiddenError, `expected ForbiddenError, got ${String(err)}`);
    assert.equal(err.status, 403);
    return true;
  });
}

describe('hasAnyRole', () => {
  it('when the principal holds one of the roles, answers true', () => {
    assert.equal(hasAnyRole(principal(['STANDARD_USER', 'POWER_USER']), ['POWER_USER', 'ADMIN']), true);
  });

  it('when the principal holds none of the roles, answers false', () => {
    assert.equal(hasAnyRole(principal(['STANDARD_USER']), ['POWER_USER', 'ADMIN']), false);
  });

  it('when the principal has no roles, answers false', () => {
    assert.equal(hasAnyRole(principal([]), ['GUEST']), false);
  });

  it('when no roles are asked for, answers false', () => {
    assert.equal(hasAnyRole(principal(['ADMIN']), []), false);
  });
});

describe('assertAnyRole', () => {
  it('when the principal holds one of the roles, returns', () => {
    assert.equal(assertAnyRole(principal(['ADMIN']), ['ADMIN']), undefined);
  });

  it('when the principal holds none of the roles, throws 403', () => {
    assertForbidden(() => assertAnyRole(principal(['POWER_USER']), ['ADMIN']));
  });
});

describe('assertSelfOrRole', () => {
  it('when the principal is the user, returns without any role', () => {
    assert.equal(assertSelfOrRole(principal(['GUEST'], 'u-7'), 'u-7', ['ADMIN']), undefined);
  });

  it('when the principal is another user holding one of the roles, returns', () => {
    assert.equal(assertSelfOrRole(principal(['ADMIN'], 'u-1'), 'u-7', ['POWER_USER', 'ADMIN']), undefined);
  });

  it('when the principal is another user without the roles, throws 403', () => {
    assertForbidden(() => assertSelfOrRole(principal(['STANDARD_USER', 'POWER_USER'], 'u-1'), 'u-7', ['ADMIN']));
  });

  it('when the named uuid is the principal\'s own in upper case, passes (uuids are case-insensitive)', () => {
    assert.doesNotThrow(() => assertSelfOrRole(principal(['STANDARD_USER'], '8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e'), '8F14E45F-CEEA-467F-A0E6-0F5B3C8A1D2E', ['ADMIN']));
  });
});

describe('isRole', () => {
  it('answers true for every role of the contract', () => {
    assert.deepEqual(ROLES, ['GUEST', 'API_USER', 'STANDARD_USER', 'POWER_USER', 'EXTENDED_USER', 'ADMIN']);
    for (const role of ROLES) assert.equal(isRole(role), true);
  });

  for (const value of ['admin', 'ROOT', '', ' ADMIN', 1, null, undefined, ['ADMIN']]) {
    it(`when the value is ${JSON.stringify(value)}, answers false`, () => {
      assert.equal(isRole(value), false);
    });
  }
});
