import type { KeyObject } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { type JwksKeySource, type TokenAlgorithm, algorithmOf, publicJwks } from '@platform/auth';
import { MethodNotAllowedError } from '@platform/errors';
import { type JsonRepresentation, jsonRepresentation, noneMatchHits, setRouteLabel } from '@platform/service-kit';
import { JWKS_PATH, METADATA_PATHS, TOKEN_ALGORITHMS, issuerMetadata } from './issuer-metadata.ts';

/** Public metadata: any page may read it, and any cache keep it for 5 minutes; 304 to a matching If-None-Match. */
function answer(req: Request, res: Response, { body, etag }: JsonRepresentation): void {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Cache-Control', 'public, max-age=300');
  res.setHeader('ETag', etag);
  if (noneMatchHits(req.get('if-none-match'), etag)) {
    res.status(304).end();
    return;
  }
  // A Buffer, so Express keeps this Content-Type as it is; it leaves the body out for HEAD.
  res.setHeader('Content-Type', 'application/json');
  res.send(body);
}

export interface DiscoveryOptions {
  /** TOKEN_ISSUER. */
  issuer: string;
  /** The keys the gateway verifies tokens with: what it publishes is exactly what it accepts. */
  keys: Pick<JwksKeySource, 'current'>;
}

/**
 * The discovery of CONTRACT.md part 16, unsigned: the issuer metadata under both well-known names and the
 * JWKS of the keys this gateway verifies with, so the check that stops a key identity withdrew verifying
 * (JWKS_REFRESH_MS) also stops publishing it, and the metadata names the algorithms of those keys alone.
 * GET and HEAD; another method 405; another `/.well-known/` path is left to the 404. Keys that cannot be
 * had answer the key source's 503 for the JWKS; the metadata, which a client needs for the endpoints, is
 * answered then as well, naming every algorithm a key may have.
 */
export function discoveryHandler(options: DiscoveryOptions): RequestHandler {
  // The key source replaces its map only when a fetch brought other keys: one export per key set, not per request.
  let published: { keys: ReadonlyMap<string, KeyObject>; jwks: JsonRepresentation; metadata: JsonRepresentation } | undefined;
  const documentsOf = (keys: ReadonlyMap<string, KeyObject>): { jwks: JsonRepresentation; metadata: JsonRepresentation } => {
    if (published?.keys !== keys) {
      const algorithms = [...keys.values()].map(algorithmOf).filter((algorithm): algorithm is TokenAlgorithm => algorithm !== undefined);
      published = { keys, jwks: jsonRepresentation(publicJwks(keys)), metadata: jsonRepresentation(issuerMetadata(options.issuer, algorithms)) };
    }
    return published;
  };
  const withoutKeys = jsonRepresentation(issuerMetadata(options.issuer, TOKEN_ALGORITHMS));
  const served = new Set<string>([...METADATA_PATHS, JWKS_PATH]);
  return (req, res, next) => {
    if (!served.has(req.path)) {
      next();
      return;
    }
    setRouteLabel(req, req.path);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      next(new MethodNotAllowedError(req.method, ['GET', 'HEAD']));
      return;
    }
    options.keys
      .current()
      .then((keys) => {
        const documents = documentsOf(keys);
        // The request deadline may have answered while the keys were fetched.
        if (!res.headersSent) answer(req, res, req.path === JWKS_PATH ? documents.jwks : documents.metadata);
      })
      .catch((err: unknown) => {
        if (req.path === JWKS_PATH || res.headersSent) next(err);
        else answer(req, res, withoutKeys);
      });
  };
}
