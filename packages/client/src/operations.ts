// One method per operation of the two OpenAPI documents. Each returns the typed success body or throws
// ApiError (an error answer) or NetworkError (no answer).
import type { ApiRequest, CallOptions, Transport } from './transport.ts';
import type {
  Account,
  AuditEventPage,
  AuditEventsQuery,
  AuthenticationResult,
  CityDistrictQuery,
  ConfirmTotpRequest,
  ConfirmedFactor,
  FactorPage,
  CreateAccountRequest,
  CreateUserRequest,
  FindUsersQuery,
  LoginRequest,
  NearestQuery,
  Page,
  PasswordResetBody,
  PasswordResetOutcome,
  PasswordResetRequestBody,
  PasswordResetTicket,
  PhoneActivationBody,
  SecondFactorProof,
  TotpEnrollment,
  PhoneActivationRequestBody,
  PhoneActivationTicket,
  SessionPage,
  SessionsQuery,
  Station,
  StationWithDistance,
  UpdateAccountRequest,
  UpdateUserRequest,
  User,
  UserPage,
  UserWithFullAccount,
} from './types.ts';

/** What the operation groups need from the client besides the transport. */
export interface TokenAccess {
  get: () => AuthenticationResult | undefined;
  set: (tokens: AuthenticationResult | undefined) => void;
}

type Call = Omit<ApiRequest, 'options'>;

const segment = (value: string | number): string => encodeURIComponent(String(value));

async function call<T>(transport: Transport, request: Call, options: CallOptions | undefined): Promise<T> {
  return (await transport.send({ ...request, options })).body as T;
}

/** `/v1/auth/**`: login, refresh and logout; the client keeps the tokens they return. */
export function authOperations(transport: Transport, tokens: TokenAccess) {
  return {
    /** Logs in and stores the tokens in the client; later calls send `Authorization: Bearer`. */
    async login(credentials: LoginRequest, options?: CallOptions): Promise<AuthenticationResult> {
      const result = await call<AuthenticationResult>(transport, { service: 'identity', method: 'POST', path: '/v1/auth/login', body: credentials, bearer: false }, options);
      tokens.set(result);
      return result;
    },
    /** Exchanges a refresh token (default: the stored one) for new tokens, and stores them. */
    async refresh(refreshToken?: string, options?: CallOptions): Promise<AuthenticationResult> {
      const token = refreshToken ?? tokens.get()?.refreshToken;
      if (token === undefined) throw new TypeError('no refresh token: log in first or pass one');
      const result = await call<AuthenticationResult>(transport, { service: 'identity', method: 'POST', path: '/v1/auth/refresh', body: { refreshToken: token }, bearer: false }, options);
      tokens.set(result);
      return result;
    },
    /**
     * Shows the second factor (a current TOTP code, or a recovery code): the session is lifted to `aal` 2 and
     * its new tokens are stored (CONTRACT.md part 15).
     */
    async secondFactor(proof: SecondFactorProof, options?: CallOptions): Promise<AuthenticationResult> {
      const result = await call<AuthenticationResult>(transport, { service: 'identity', method: 'POST', path: '/v1/auth/second-factor', body: proof, bearer: true }, options);
      tokens.set(result);
      return result;
    },
    /** Whether the stored access token is `aal` 1 of a user who must show a second factor (`secondFactor` next). */
    needsSecondFactor(): boolean {
      const token = tokens.get()?.accessToken;
      if (token === undefined) return false;
      try {
        // base64url, read with what every runtime has (no Buffer in a browser).
        const part = (token.split('.')[1] ?? '').replaceAll('-', '+').replaceAll('_', '/');
        const claims = JSON.parse(atob(part.padEnd(Math.ceil(part.length / 4) * 4, '='))) as { aal?: unknown; sfr?: unknown };
        return claims.sfr === true && claims.aal !== 2;
      } catch {
        return false;
      }
    },
    /** Blacklists an access token (default: the stored one) and ends its session; forgets the stored tokens if they were that session's. */
    async logout(jwtToken?: string, options?: CallOptions): Promise<void> {
      const stored = tokens.get();
      const token = jwtToken ?? stored?.accessToken;
      if (token === undefined) throw new TypeError('no access token: log in first or pass one');
      await call<undefined>(transport, { service: 'identity', method: 'POST', path: '/v1/auth/logout', body: { jwtToken: token }, bearer: false }, options);
      if (stored !== undefined && stored.accessToken === token) tokens.set(undefined);
    },
  };
}

/** `/v1/users/**`. */
export function userOperations(transport: Transport) {
  return {
    /** Creates a user (ADMIN). */
    create: (body: CreateUserRequest, options?: CallOptions): Promise<User> =>
      call(transport, { service: 'identity', method: 'POST', path: '/v1/users/create', body, bearer: true }, options),
    /** Changes the fields present in `body` of user `body.userId`. */
    update: (body: UpdateUserRequest, options?: CallOptions): Promise<User> =>
      call(transport, { service: 'identity', method: 'PATCH', path: '/v1/users/update', body, bearer: true }, options),
    /**
     * Finds users (ADMIN) by `username` (exact), `q` (a prefix of username, first or last name), `status`
     * and `role`, in creation order, one page at a time (`allPages` walks them all).
     */
    find: (query: FindUsersQuery = {}, options?: CallOptions): Promise<UserPage> =>
      call(transport, { service: 'identity', method: 'GET', path: '/v1/users', query, bearer: true }, options),
    /** Reads a user with its account (the user itself or an ADMIN). */
    get: (userId: string, options?: CallOptions): Promise<UserWithFullAccount> =>
      call(transport, { service: 'identity', method: 'GET', path: `/v1/users/${segment(userId)}`, bearer: true }, options),
    /** Lifts the brute-force block of a user (ADMIN). */
    unblock: (userId: string, options?: CallOptions): Promise<UserWithFullAccount> =>
      call(transport, { service: 'identity', method: 'GET', path: `/v1/users/unblock/${segment(userId)}`, bearer: true }, options),
    /**
     * Asks for a password reset token. Anonymous (or non-ADMIN) callers get `null` (202: an e-mail is
     * sent if the user exists); an ADMIN caller gets the ticket itself (201).
     */
    async requestPasswordReset(body: PasswordResetRequestBody, options?: CallOptions): Promise<PasswordResetTicket | null> {
      const res = await transport.send({ service: 'identity', method: 'POST', path: '/v1/users/password-reset-request', body, bearer: true, options });
      return res.status === 201 ? (res.body as PasswordResetTicket) : null;
    },
    /** Sets a new password with a reset token. With `loginPageLink` the 303 is not followed: its target is returned. */
    async resetPassword(body: PasswordResetBody, options?: CallOptions): Promise<PasswordResetOutcome> {
      const res = await transport.send({ service: 'identity', method: 'POST', path: '/v1/users/password-reset', body, bearer: false, redirect: 'manual', options });
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location !== null) return { redirectTo: location };
      return res.body as PasswordResetOutcome;
    },
  };
}

/** `/v1/auth/sessions/**`: the caller's sessions (an ADMIN: anyone's, with `userId`). */
export function sessionOperations(transport: Transport) {
  return {
    /** The live sessions, newest first; `current` marks the one of the stored token. */
    list: (query: SessionsQuery = {}, options?: CallOptions): Promise<SessionPage> =>
      call(transport, { service: 'identity', method: 'GET', path: '/v1/auth/sessions', query, bearer: true }, options),
    /** Ends one session: its tokens are refused at once everywhere. */
    revoke: (sessionId: string, options?: CallOptions): Promise<void> =>
      call(transport, { service: 'identity', method: 'DELETE', path: `/v1/auth/sessions/${segment(sessionId)}`, bearer: true }, options),
    /** Ends every session of the caller (the stored token's too), or of `userId` for an ADMIN. */
    revokeAll: (query: { userId?: string } = {}, options?: CallOptions): Promise<void> =>
      call(transport, { service: 'identity', method: 'DELETE', path: '/v1/auth/sessions', query, bearer: true }, options),
  };
}

/** `/v1/auth/factors/**`: the caller's second factors (CONTRACT.md part 15). */
export function factorOperations(transport: Transport) {
  return {
    /** Starts a TOTP enrolment: the secret and its `otpauth://` URI, shown once. */
    enrollTotp: (options?: CallOptions): Promise<TotpEnrollment> =>
      call(transport, { service: 'identity', method: 'POST', path: '/v1/auth/factors/totp', bearer: true }, options),
    /** Confirms the pending factor with a current code: the recovery codes, shown once. A refresh then gives `aal` 2 tokens. */
    confirmTotp: (body: ConfirmTotpRequest, options?: CallOptions): Promise<ConfirmedFactor> =>
      call(transport, { service: 'identity', method: 'POST', path: '/v1/auth/factors/totp/confirm', body, bearer: true }, options),
    /** The caller's factors, never a secret. */
    list: (options?: CallOptions): Promise<FactorPage> => call(transport, { service: 'identity', method: 'GET', path: '/v1/auth/factors', bearer: true }, options),
    /** Removes a factor: an active one needs a current code or a recovery code. Every other session ends. */
    remove: (factorId: string, proof?: SecondFactorProof, options?: CallOptions): Promise<void> =>
      call(transport, { service: 'identity', method: 'DELETE', path: `/v1/auth/factors/${segment(factorId)}`, body: proof, bearer: true }, options),
    /** Removes every factor of `userId` and ends its sessions (ADMIN): a user who lost device and recovery codes. */
    resetForUser: (userId: string, options?: CallOptions): Promise<void> =>
      call(transport, { service: 'identity', method: 'DELETE', path: `/v1/users/${segment(userId)}/factors`, bearer: true }, options),
  };
}

/** `/v1/audit/**` (ADMIN). */
export function auditOperations(transport: Transport) {
  return {
    /** Audit events matching every filter given, newest first, one page at a time. */
    events: (query: AuditEventsQuery = {}, options?: CallOptions): Promise<AuditEventPage> =>
      call(transport, { service: 'identity', method: 'GET', path: '/v1/audit/events', query, bearer: true }, options),
  };
}

/** `/v1/accounts/**`. */
export function accountOperations(transport: Transport) {
  return {
    /** Creates the one account of a user. */
    create: (body: CreateAccountRequest, options?: CallOptions): Promise<Account> =>
      call(transport, { service: 'identity', method: 'POST', path: '/v1/accounts/create', body, bearer: true }, options),
    /** Changes the fields present in `body` of account `body.accountId`. */
    update: (body: UpdateAccountRequest, options?: CallOptions): Promise<Account> =>
      call(transport, { service: 'identity', method: 'PATCH', path: '/v1/accounts/update', body, bearer: true }, options),
    /** Reads the account of a user. */
    get: (userId: string, options?: CallOptions): Promise<Account> =>
      call(transport, { service: 'identity', method: 'GET', path: `/v1/accounts/${segment(userId)}`, bearer: true }, options),
    /** Sends a 6-digit activation code by SMS to the account's phone. */
    requestPhoneActivation: (body: PhoneActivationRequestBody, options?: CallOptions): Promise<PhoneActivationTicket> =>
      call(transport, { service: 'identity', method: 'POST', path: '/v1/accounts/phone-number-activation-request', body, bearer: true }, options),
    /** Confirms the phone number with the code from the SMS. */
    activatePhone: (body: PhoneActivationBody, options?: CallOptions): Promise<Account> =>
      call(transport, { service: 'identity', method: 'POST', path: '/v1/accounts/phone-number-activation', body, bearer: true }, options),
  };
}

/** `/v1/weather-stations/**`, under the risk base URL. */
export function stationOperations(transport: Transport) {
  return {
    /** The stations that serve a district, ordered by id. */
    byCityDistrict: (body: CityDistrictQuery, options?: CallOptions): Promise<Station[]> =>
      call(transport, { service: 'risk', method: 'POST', path: '/v1/weather-stations/by/city-district', body, bearer: true }, options),
    /** One station by its MGM number. */
    byId: (stationId: number, options?: CallOptions): Promise<Station> =>
      call(transport, { service: 'risk', method: 'GET', path: `/v1/weather-stations/by/id/${segment(stationId)}`, bearer: true }, options),
    /** The official districts of a city (any case, with or without Turkish diacritics). */
    districtsOf: (city: string, options?: CallOptions): Promise<string[]> =>
      call(transport, { service: 'risk', method: 'GET', path: `/v1/weather-stations/get-districts-of/${segment(city)}`, bearer: true, revalidate: true }, options),
    /** The 81 official cities, in Turkish alphabetical order. */
    cities: (options?: CallOptions): Promise<string[]> =>
      call(transport, { service: 'risk', method: 'GET', path: '/v1/weather-stations/get-cities', bearer: true, revalidate: true }, options),
    /** The stations nearest to a point, nearest first, with their distance. */
    nearest: (query: NearestQuery, options?: CallOptions): Promise<StationWithDistance[]> =>
      call(transport, { service: 'risk', method: 'GET', path: '/v1/weather-stations/nearest', query, bearer: true }, options),
  };
}

/**
 * Every item of a list operation, page after page: `allPages((cursor) => client.users.find({ status: 'BLOCKED', cursor }))`.
 * Each page is fetched when the previous one is used up.
 */
export async function* allPages<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield* page.items;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}
