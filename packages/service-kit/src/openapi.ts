import type { RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { NotImplementedError } from '@platform/errors';

export interface OpenApiOptions {
  /** Path of the service's `openapi.yaml`: the contract the code is checked against. */
  apiSpec: string;
  /** Check every response against the document too: on in tests, so the code cannot drift from it. */
  validateResponses: boolean;
}

/**
 * express-openapi-validator on the service's own document. Requests are always checked (body,
 * path, query, content type; unknown fields and undocumented routes rejected); responses when asked.
 * Security is left to our own guards, which answer in the contract's words. Health and metrics are
 * not part of the document and are left alone.
 */
export function openApiValidator(options: OpenApiOptions): RequestHandler[] {
  return OpenApiValidator.middleware({
    apiSpec: options.apiSpec,
    // allErrors: every violation is reported, one `messages` entry each, not just the first.
    validateRequests: { allowUnknownQueryParameters: false, allErrors: true },
    validateResponses: options.validateResponses ? { removeAdditional: false } : false,
    validateSecurity: false,
    ignorePaths: /^\/(health\/(live|ready)|metrics)$/,
  }) as RequestHandler[];
}

/**
 * Mounted after a service's routers: a request that matched a documented operation but no built
 * handler answers 501 in the error shape, so an operation that has not landed yet is never a 404.
 */
export const operationNotBuilt: RequestHandler = (req, _res, next) => {
  const operation = (req as { openapi?: { schema?: { operationId?: string } } }).openapi?.schema?.operationId;
  if (operation === undefined) {
    next();
    return;
  }
  next(new NotImplementedError(`${req.method} ${req.path} is documented but not available yet`));
};
