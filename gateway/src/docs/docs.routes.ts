import express, { type Router } from 'express';
import { ServiceUnavailableError, methodNotAllowedHandler } from '@platform/errors';
import { renderDocsPage } from './docs-page.ts';
import type { OpenApiDocument } from './openapi-merge.ts';

/** No script, no outside resource: the page is plain HTML and inline CSS. */
const DOCS_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * `GET /openapi.json` (the merged document) and `GET /docs` (its reference page), unsigned and not
 * proxied. Without a document (the services' files were not found at start) both answer 503.
 */
export function docsRouter(document: OpenApiDocument | undefined): Router {
  const router = express.Router();
  const page = document === undefined ? undefined : renderDocsPage(document);
  const unavailable = () => new ServiceUnavailableError('The API documents are not available on this gateway');
  router
    .route('/openapi.json')
    .get((_req, res) => {
      if (document === undefined) throw unavailable();
      res.json(document);
    })
    .all(methodNotAllowedHandler);
  router
    .route('/docs')
    .get((_req, res) => {
      if (page === undefined) throw unavailable();
      res.set('Content-Security-Policy', DOCS_CSP).type('html').send(page);
    })
    .all(methodNotAllowedHandler);
  return router;
}
