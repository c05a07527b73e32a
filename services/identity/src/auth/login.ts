import { TooManyRequestsError, UnauthorizedError } from '@platform/errors';
import { findUserByUsername, recordSuccessfulLogin } from '../users/users.repository.ts';
import type { AuthServices, AuthenticationResult } from './auth-services.ts';
import type { Caller } from './caller-throttle.ts';
import { countFailedLogin } from './count-failed-login.ts';
import { startSession } from './start-session.ts';

/**
 * POST /v1/auth/login. Unknown user, wrong password and a user who is not ACTIVE all end in the same
 * 401, and every path compares a password hash first, so neither body nor timing tells them apart.
 */
export async function login(
  services: AuthServices,
  input: { username: string; password: string },
  caller: Caller,
): Promise<AuthenticationResult> {
  try {
    await services.throttle.assertAllowed(caller);
  } catch (err) {
    if (err instanceof TooManyRequestsError) services.countLogin('throttled');
    throw err;
  }
  const user = await findUserByUsername(services.db, input.username);
  const passwordMatches = await services.hasher.verify(input.password, user?.passwordHash);

  if (user !== undefined && passwordMatches && user.status === 'ACTIVE') {
    await recordSuccessfulLogin(services.db, user.id);
    services.countLogin('succeeded');
    return startSession(services, user);
  }

  services.countLogin(user === undefined ? 'unknown_user' : passwordMatches ? 'not_active' : 'wrong_password');
  await services.throttle.record(caller);
  if (user !== undefined && !passwordMatches) await countFailedLogin(services, user);
  throw new UnauthorizedError('Bad Credentials', { cause: new Error(user === undefined ? 'unknown user' : 'login refused') });
}
