import express, { type Router } from 'express';
import { methodNotAllowedHandler } from '@platform/errors';
import type { OpenApiDocument } from '@platform/service-kit';

/** No script, no outside resource: the page is plain HTML and inline CSS. */
const DOCS_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** `GET /openapi.json` (the merged document) and `GET /docs` (its reference page), unsigned and not proxied. */
export function docsRouter(document: OpenApiDocument): Router {
  const router = express.Router();
  // Rendered on its first request, not at start: the CommonMark renderer (markdown-it and its tables,
  // ~2 MB of heap) stays loaded for a process's life, and most gateways never serve this page
  // (the bench diary, `git show f0a4e11:bench/README.md`, issue 27). A failed render is tried again by the next request.
  let page: Promise<string> | undefined;
  const docsPage = (): Promise<string> =>
    (page ??= import('./docs-page.ts').then(({ renderDocsPage }) => renderDocsPage(document)).catch((err: unknown) => {
      page = undefined;
      throw err;
    }));
  router
    .route('/openapi.json')
    .get((_req, res) => {
      res.json(document);
    })
    .all(methodNotAllowedHandler);
  router
    .route('/docs')
    .get((_req, res, next) => {
      docsPage()
        .then((html) => {
          // The request deadline may have answered while the first render ran.
          if (!res.headersSent) res.set('Content-Security-Policy', DOCS_CSP).type('html').send(html);
        })
        .catch(next);
    })
    .all(methodNotAllowedHandler);
  return router;
}
