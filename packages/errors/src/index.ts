export { type ErrorBody, errorBody, isErrorBody, reasonPhrase } from './error-body.ts';
export * from './http-errors.ts';
export { type RequestLine, toHttpError } from './to-http-error.ts';
export { type ErrorHandlerOptions, errorHandler, methodNotAllowedHandler, notFoundHandler, sendJson } from './express-handlers.ts';
export { type OAuthErrorBody, oauthErrorBody } from './oauth-error.ts';
export { parseUpstreamError } from './parse-upstream-error.ts';
export { isDependencyUnavailable } from './dependency-unavailable.ts';
