// The SDK's types, all taken from the generated OpenAPI types so they cannot drift from the documents.
import type { components as IdentityComponents, operations as IdentityOperations } from './generated/identity.ts';
import type { components as RiskComponents, operations as RiskOperations } from './generated/risk.ts';

type Identity = IdentityComponents['schemas'];
type Risk = RiskComponents['schemas'];

/** SPEC.md part 2's error body (`messages` always present on station errors). */
export type ErrorBody = Identity['ErrorBody'];

export type LoginRequest = Identity['LoginRequest'];
/** The authentication result of login and refresh; the client keeps it as its tokens. */
export type AuthenticationResult = Identity['AuthenticationResult'];
export type CreateUserRequest = Identity['CreateUserRequest'];
export type UpdateUserRequest = Identity['UpdateUserRequest'];
export type User = Identity['User'];
export type UserWithFullAccount = Identity['UserWithFullAccount'];
export type PasswordResetRequestBody = Identity['PasswordResetRequestBody'];
export type PasswordResetTicket = Identity['PasswordResetTicket'];
export type PasswordResetBody = Identity['PasswordResetBody'];
export type PasswordResetResult = Identity['PasswordResetResult'];
export type CreateAccountRequest = Identity['CreateAccountRequest'];
export type UpdateAccountRequest = Identity['UpdateAccountRequest'];
export type Account = Identity['Account'];
export type PhoneActivationRequestBody = Identity['PhoneActivationRequestBody'];
export type PhoneActivationTicket = Identity['PhoneActivationTicket'];
export type PhoneActivationBody = Identity['PhoneActivationBody'];
export type UserPage = Identity['UserPage'];
export type FindUsersQuery = NonNullable<IdentityOperations['findUsers']['parameters']['query']>;
export type AuditEvent = Identity['AuditEvent'];
export type AuditEventType = Identity['AuditEventType'];
export type AuditEventPage = Identity['AuditEventPage'];
export type AuditEventsQuery = NonNullable<IdentityOperations['listAuditEvents']['parameters']['query']>;
export type Session = Identity['Session'];
export type SecondFactorProof = Identity['SecondFactorProof'];
export type TotpEnrollment = Identity['TotpEnrollment'];
export type ConfirmTotpRequest = Identity['ConfirmTotpRequest'];
export type ConfirmedFactor = Identity['ConfirmedFactor'];
export type Factor = Identity['Factor'];
export type FactorPage = Identity['FactorPage'];
export type SessionPage = Identity['SessionPage'];
export type SessionsQuery = NonNullable<IdentityOperations['listSessions']['parameters']['query']>;
export type Role = Identity['Role'];
export type UserStatus = Identity['UserStatus'];
export type AccountType = Identity['AccountType'];
export type SubscriptionPlan = Identity['SubscriptionPlan'];

export type CityDistrictQuery = Risk['CityDistrictQuery'];
export type Station = Risk['Station'];
export type StationWithDistance = Risk['StationWithDistance'];
export type NearestQuery = RiskOperations['findNearestStations']['parameters']['query'];

/** `resetPassword` without `loginPageLink`: the service's message; with it: where the 303 points. */
export type PasswordResetOutcome = PasswordResetResult | { redirectTo: string };

/** A page of a list operation (CONTRACT.md part 11): pass `nextCursor` as `cursor` for the next; null on the last. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
