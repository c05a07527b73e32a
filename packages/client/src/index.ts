// @platform/client: the typed SDK of the platform API. Runs on any runtime with fetch and WebCrypto.
export { type Client, type ClientOptions, createClient } from './client.ts';
export { allPages } from './operations.ts';
export { type BaseUrls, ENVIRONMENTS, type Environment, isEnvironment, resolveBaseUrls } from './environments.ts';
export { ApiError, NetworkError, isErrorBody } from './errors.ts';
export type { ApiRequest, ApiResponse, CallOptions, Service } from './transport.ts';
export { type RequestToSign, type SignedHeaders, newNonce, signRequest } from './signing/sign-request.ts';
export { NONCE_PATTERN, type SignatureBase, type SignatureBaseInput, type SigningAlgorithm, queryComponent, signatureBase } from './signing/signature-base.ts';
export { type Signer, type SigningKey, type WebCryptoKey, createSigner } from './signing/signer.ts';
export { contentDigest } from './signing/encoding.ts';
export { signedFetch } from './signing/signed-fetch.ts';
export type * from './types.ts';
