/** The error body of RFC 6749 §5.2, in which the token endpoints (RFC 7662, RFC 7009) answer a malformed request. */
export interface OAuthErrorBody {
  error: 'invalid_request';
  error_description: string;
}

/** A malformed request to a token endpoint in RFC 6749 §5.2's shape: `invalid_request`, and what is wrong with it. */
export function oauthErrorBody(message: string): OAuthErrorBody {
  return { error: 'invalid_request', error_description: message };
}
