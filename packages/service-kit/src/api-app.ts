import express, { type Express, type RequestHandler } from 'express';
import type { ErrorHandlerOptions } from '@platform/errors';
import { type BaseAppOptions, createBaseApp, finishApp, inSequence } from './http-app.ts';
import { noteFormFields, rejectDroppedFormFields, rejectMalformedText, requireUtf8 } from './http-guards.ts';
import { gatewayDeadline, gatewayRequestId, trustForwardingOnlyFromGateway } from './internal-assertion.ts';
import { strictNumericParameters } from './numeric-parameters.ts';
import { openApiRouteOf } from './openapi-route.ts';
import { openApiValidator, operationNotBuilt } from './openapi.ts';
import { nameServerSpan } from './trace-context.ts';

// `@platform/service-kit/api-app`: a service whose API is an OpenAPI document. Apart from the main entry,
// so that a process which validates nothing (the gateway) does not load express-openapi-validator, Ajv and
// their document parsers.
export { type OpenApiOptions, openApiValidator, operationNotBuilt } from './openapi.ts';
export { strictNumericParameters } from './numeric-parameters.ts';

export interface ApiAppOptions extends BaseAppOptions {
  /** Path of the service's `openapi.yaml`. */
  apiSpec: string;
  /** Also check responses against the document (tests). */
  validateResponses: boolean;
  /** The service's component routers, mounted behind the validator. */
  routers: readonly RequestHandler[];
  /** How the error handler fills `messages`. */
  errors?: ErrorHandlerOptions;
  /** INTERNAL_ASSERTION_KEY: forwarded addresses and client key ids are believed only under its assertion. */
  internalAssertionKey: string;
}

/**
 * Names the request's server span by the documented operation the validator matched
 * (`GET /v1/weather-stations/by/id/{stationId}`), as the gateway names its own: for a service that makes
 * its HTTP spans itself (risk, `httpSpans: 'own'`), whose span would otherwise carry the method alone.
 * Where OpenTelemetry's instrumentation makes the span, it names it again from Express's route at its end.
 */
const nameSpanByOperation: RequestHandler = (req, _res, next) => {
  const route = openApiRouteOf(req);
  if (route !== undefined) nameServerSpan(req.method, route);
  next();
};

/**
 * A service app whose API is an OpenAPI document: the base app (taking the gateway's request id and deadline
 * only under its assertion), the origin of the request (forwarded facts only under the gateway's assertion), JSON
 * bodies (UTF-8 only) and flat form bodies up to 100 kB, no NUL characters, the validator, numeric parameters as plain finite numbers in bounds, the component routers, 501 for documented operations no router handles
 * yet, then the 404 and error handlers.
 */
export function createApiApp(options: ApiAppOptions): Express {
  const app = createBaseApp({ ...options, requestIdFrom: gatewayRequestId(options.internalAssertionKey), deadlineFrom: gatewayDeadline(options.internalAssertionKey) });
  app.use(
    inSequence([
      trustForwardingOnlyFromGateway(options.internalAssertionKey, options.logger),
      express.json({ limit: '100kb', verify: requireUtf8 }),
      // The form bodies of the token endpoints (RFC 7662, RFC 7009): flat fields only, never nested objects.
      express.urlencoded({ extended: false, limit: '100kb', parameterLimit: 20, verify: noteFormFields }),
      rejectDroppedFormFields,
      rejectMalformedText,
      ...openApiValidator({ apiSpec: options.apiSpec, validateResponses: options.validateResponses }),
      strictNumericParameters(options.apiSpec),
      nameSpanByOperation,
    ]),
  );
  for (const router of options.routers) app.use(router);
  app.use(operationNotBuilt);
  return finishApp(app, options.errors);
}
