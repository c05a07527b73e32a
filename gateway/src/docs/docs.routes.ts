import express, { type Router } from 'express';
import { methodNotAllowedHandler } from '@platform/errors';
import { renderDocsPage } from './docs-page.ts';
import type { OpenApiDocument } from '@platform/service-kit';

/** No script, no outside resource: the page is plain HTML and inline CSS. */
const DOCS_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** `GET /openapi.json` (the merged document) and `GET /docs` (its reference page), unsigned and not proxied. */
export function docsRouter(document: OpenApiDocument): Router {
  const router = express.Router();
  const page = renderDocsPage(document);
  router
    .route('/openapi.json')
    .get((_req, res) => {
      res.json(document);
    })
    .all(methodNotAllowedHandler);
  router
    .route('/docs')
    .get((_req, res) => {
      res.set('Content-Security-Policy', DOCS_CSP).type('html').send(page);
    })
    .all(methodNotAllowedHandler);
  return router;
}
