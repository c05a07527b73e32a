// The fuzzer's words for what it sends and what it finds, shared by the engine and the answer check.

/** Who a request is sent as. */
export type Caller = 'admin' | 'user' | 'anonymous' | 'forged';

/** One generated request. */
export interface FuzzRequest {
  operation: string;
  method: string;
  /** Path and query, exactly as sent. */
  target: string;
  body: Buffer | undefined;
  caller: Caller;
}

/**
 * An answer the document does not allow, or none at all: `transport-failure` is a request whose
 * connection failed or was cut, or that got no whole answer within the request timeout.
 */
export interface FuzzProblem {
  kind: '5xx' | 'undocumented-status' | 'schema-violation' | 'transport-failure' | 'check';
  request: FuzzRequest;
  /** Undefined when no answer came. */
  status: number | undefined;
  detail: string;
}
