// Limit H: risk's own work for GET /v1/weather-stations/by/id/{stationId}, with nothing around it: a plain
// node:http server (no Express, validator or router) doing per request what risk must do for it.
// - Reused as risk runs them (their packages' entry points): service-kit's response class (HeadResponse)
//   and requestEnvelope (the request id, from a valid assertion or fresh; X-Request-Id and the security
//   headers, or only Cache-Control under the gateway's assertion; the deadline; one access line at info on
//   stdout, which the harness sends to the limit's log file as it sends risk's; observeRequest on a registry
//   collecting the default metrics), gatewayRequestId, trustForwardingOnlyFromGateway (the assertion's
//   verdict), rejectMalformedText and inSequence; @platform/auth's bearerAuth with gatewayCheckedBearer on
//   createTokenVerifier (identity's JWKS; the revocations read in Redis for a direct call, skipped under a
//   valid v3 assertion); @platform/errors' errorHandler, with `messages` always as risk renders it.
// - Written here, the smallest equivalent (risk's modules are exported by no entry point, and its
//   validator is express-openapi-validator): the path matched by hand (as loosely as Express routes:
//   any case, a trailing slash); the query, the conditional headers and the id held to risk's
//   openapi.yaml, with the validator's words and then strictNumericParameters' (the same 400s); the
//   station answers serialised once from services/risk/data/stations.csv as risk's index serialises them
//   (a Map by id, as its index looks them up); the ETag, Last-Modified, Cache-Control, generation header
//   and 304 of weather-stations/conditional-answer.ts, written in one writeHead. H's index is generation 1,
//   loaded now: its ETags and Last-Modified are of the same making as risk's, not the same values.
// - Left out: tracing (off in the bench), the body parsers (a GET has no body), the index's reload poll.
// Usage: node bench/limits/lean-risk.ts --port <port> --redis-url <url> --redis-prefix <prefix> --jwks-url <url> --issuer <origin> --assertion-key <key>
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type IncomingHttpHeaders, createServer } from 'node:http';
import { bearerAuth, createRevocationReader, createTokenVerifier, jwksKeySource } from '@platform/auth';
import { BadRequestError, MethodNotAllowedError, NotFoundError, errorHandler } from '@platform/errors';
import {
  HeadResponse,
  STATION_GENERATION_HEADER,
  clientCopyCurrent,
  createLogger,
  createMetrics,
  createRedis,
  gatewayCheckedBearer,
  gatewayRequestId,
  inSequence,
  rejectMalformedText,
  requestEnvelope,
  setRouteLabel,
  trustForwardingOnlyFromGateway,
} from '@platform/service-kit';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { parse } from 'yaml';
import { AUDIENCE, answeredHealth, limitOptions, listen } from './common.ts';

const USAGE = 'usage: node bench/limits/lean-risk.ts --port <port> --redis-url <redis-url> --redis-prefix <redis-prefix> --jwks-url <jwks-url> --issuer <issuer> --assertion-key <assertion-key>\n';
const options = limitOptions('lean-risk', ['redisUrl', 'redisPrefix', 'jwksUrl', 'issuer']);
const { assertionKey } = options;
if (assertionKey === undefined) {
  process.stderr.write(USAGE);
  process.exit(2);
}

const RISK = new URL('../../services/risk/', import.meta.url);
const ROUTE = '/v1/weather-stations/by/id/{stationId}';
const BY_ID = /^\/v1\/weather-stations\/by\/id\/([^/]+)\/?$/i;

/** Station answers by id, serialised once in the key order of risk's index (station-index.ts, stationJsonOf). */
function stationAnswers(): Map<number, Buffer> {
  const [header, ...lines] = readFileSync(new URL('data/stations.csv', RISK), 'utf8').trimEnd().split(/\r?\n/);
  if (header !== 'stationId,stationName,latitude,longitude,city,district') throw new Error(`stations.csv has other columns: ${header}`);
  const answers = new Map<number, Buffer>();
  for (const line of lines) {
    const fields = line.split(',');
    // Plain fields only: a quoted one needs risk's RFC 4180 reading (seeds/csv.ts).
    if (line.includes('"') || fields.length !== 6) throw new Error(`stations.csv: a line this limit cannot read: ${line}`);
    const [stationId, stationName, latitude, longitude, city, district] = fields as [string, string, string, string, string, string];
    const station = { stationId: Number(stationId), stationName, latitude: Number(latitude), longitude: Number(longitude), city, district };
    answers.set(station.stationId, Buffer.from(JSON.stringify(station), 'utf8'));
  }
  return answers;
}

interface Schema {
  type?: string;
  format?: string;
  minimum?: number;
  maxLength?: number;
}

/** What risk's openapi.yaml asks of this operation: the id's schema, and the longest conditional headers. */
function documentRules(): { minimum: number; maximum: number; headers: ReadonlyArray<readonly [string, number]> } {
  const doc = parse(readFileSync(new URL('openapi.yaml', RISK), 'utf8')) as {
    paths: Record<string, { get: { parameters: Array<{ name?: string; schema?: Schema }> } }>;
    components: { parameters: Record<string, { name: string; schema: Schema }> };
  };
  const id = doc.paths[ROUTE]?.get.parameters.find((p) => p.name === 'stationId')?.schema;
  if (id?.type !== 'integer' || id.format !== 'int32' || typeof id.minimum !== 'number') throw new Error(`risk's stationId is no longer an int32 with a minimum: ${JSON.stringify(id)}`);
  const header = (name: string): readonly [string, number] => {
    const parameter = doc.components.parameters[name];
    if (parameter === undefined || typeof parameter.schema.maxLength !== 'number') throw new Error(`risk's ${name} has no maxLength`);
    return [parameter.name.toLowerCase(), parameter.schema.maxLength];
  };
  return { minimum: id.minimum, maximum: 2 ** 31 - 1, headers: [header('IfNoneMatch'), header('IfModifiedSince')] };
}

const answers = stationAnswers();
const rules = documentRules();
const GENERATION = '1';
const LAST_MODIFIED = new Date().toUTCString();
/** conditional-answer.ts: any client may keep a station answer for a minute, shared caches may not. */
const CACHE_CONTROL = 'private, max-age=60';
const PLAIN_INTEGER = /^-?[0-9]+$/;

/**
 * What risk's validator says of the headers and the id, in its words: the id coerced as Ajv coerces a path
 * parameter (a text that is a whole number, or ±Infinity), then its minimum and int32 format; ±Infinity
 * passes the validator (as observed of risk) and is refused by the plain-digits rule below.
 */
function validatorProblems(headers: IncomingHttpHeaders, raw: string): string[] {
  const problems: string[] = [];
  for (const [name, most] of rules.headers) {
    const value = headers[name];
    if (typeof value === 'string' && value.length > most) problems.push(`headers.${name} must NOT have more than ${most} characters`);
  }
  const id = Number(raw);
  if (raw === '' || Number.isNaN(id) || (Number.isFinite(id) && !Number.isInteger(id))) problems.push('path.stationId must be integer');
  else if (Number.isFinite(id)) {
    if (id < rules.minimum) problems.push(`path.stationId must be >= ${rules.minimum}`);
    if (id > rules.maximum || id < -(2 ** 31)) problems.push('path.stationId must match format "int32"');
  }
  return problems;
}

/** strictNumericParameters' rule (service-kit's numeric-parameters.ts): plain digits, within the bounds. */
function plainDigitsProblem(raw: string): string | undefined {
  const id = Number(raw);
  if (PLAIN_INTEGER.test(raw) && id >= rules.minimum && id <= rules.maximum) return undefined;
  const shown = raw.length > 40 ? `${raw.slice(0, 40)}…` : raw;
  return `path.stationId must be an integer from ${rules.minimum} to ${rules.maximum}, in plain digits like 42, got ${JSON.stringify(shown)}`;
}

const logger = createLogger({ service: 'limit-h', level: 'info' });
const metrics = createMetrics('limit-h', { collectDefault: true });
// A client made as risk makes its own (auto-pipelined), in the stack's prefix; the JWKS re-validated as
// often as risk's default JWKS_REFRESH_MS.
const redis = createRedis({ url: options.redisUrl, keyPrefix: options.redisPrefix, logger });
const verifier = createTokenVerifier({
  keys: jwksKeySource({ url: options.jwksUrl, refreshIntervalMs: 2000 }),
  issuer: options.issuer,
  audience: AUDIENCE,
  revocations: createRevocationReader(redis, { logger }),
});
const bearer = bearerAuth(verifier, { checkedByGateway: gatewayCheckedBearer(assertionKey) });

/** The answer as weather-stations.routes.ts and conditional-answer.ts give it; a 404 for an unknown id. */
function answer(req: Request, res: Response, id: number, next: NextFunction): void {
  const body = answers.get(id);
  if (body === undefined) {
    res.setHeader(STATION_GENERATION_HEADER, GENERATION);
    next(new NotFoundError('Station not found', { messages: [`Station not found: ${id}`] }));
    return;
  }
  const etag = `"${GENERATION}-${createHash('sha256').update(`by-id\n${id}`).digest('base64url').slice(0, 27)}"`;
  const head = { etag, 'last-modified': LAST_MODIFIED, 'cache-control': CACHE_CONTROL, [STATION_GENERATION_HEADER]: GENERATION };
  // If-None-Match wins; If-Modified-Since counts only without it (a date that does not parse is ignored).
  if (clientCopyCurrent(req, { etag, lastModified: LAST_MODIFIED })) {
    res.writeHead(304, head).end();
    return;
  }
  res.writeHead(200, { ...head, 'content-type': 'application/json; charset=utf-8', 'content-length': body.length }).end(body);
}

/** The operation: its path, method, query, headers and id checked in the validator's order, then the bearer token, then the answer. */
const stationById: RequestHandler = (req, res, next) => {
  const url = req.originalUrl;
  const at = url.indexOf('?');
  const path = at === -1 ? url : url.slice(0, at);
  const matched = BY_ID.exec(path);
  if (matched === null) return next(new NotFoundError(`No route for ${req.method} ${path}`));
  if (req.method !== 'GET') return next(new MethodNotAllowedError(req.method, ['GET']));
  setRouteLabel(req, ROUTE);
  for (const name of new URLSearchParams(at === -1 ? '' : url.slice(at + 1)).keys()) {
    const problem = `query.${name} Unknown query parameter '${name}'`;
    return next(new BadRequestError(problem, { messages: [problem] }));
  }
  let raw: string;
  try {
    raw = decodeURIComponent(matched[1] as string);
  } catch {
    const problem = `${path.replace(/^[./]+/, '').replaceAll('/', '.')} malformed uri'`;
    return next(new BadRequestError(problem, { messages: [problem] }));
  }
  const problems = validatorProblems(req.headers, raw);
  const plain = problems.length === 0 ? plainDigitsProblem(raw) : undefined;
  if (plain !== undefined) problems.push(plain);
  if (problems.length > 0) return next(new BadRequestError(problems.join('; '), { messages: problems }));
  bearer(req, res, (err?: unknown) => {
    if (err !== undefined && err !== null) return next(err);
    try {
      answer(req, res, Number(raw), next);
    } catch (error) {
      next(error);
    }
  });
};

const chain = inSequence([
  // Risk's REQUEST_DEADLINE_MS default; the lifecycle of a process that is not draining.
  requestEnvelope({ logger, metrics, requestIdFrom: gatewayRequestId(assertionKey), deadlineMs: 8000, lifecycle: { draining: false } }),
  trustForwardingOnlyFromGateway(assertionKey, logger),
  rejectMalformedText,
  stationById,
]);
const handleError = errorHandler({ messages: 'always' });

// Risk's server options (service-kit's `listen` with risk's HTTP limits): its response class, the Host left to the envelope.
const server = createServer({ ServerResponse: HeadResponse, requireHostHeader: false, headersTimeout: 10_000, requestTimeout: 30_000, connectionsCheckingInterval: 1000 }, (req, res) => {
  if (answeredHealth(req, res)) return;
  // What Express would have set, and what the envelope, the assertion and the error handler read the target from.
  const request = Object.assign(req, { originalUrl: req.url ?? '/' }) as Request;
  const response = res as unknown as Response;
  const fail = (err: unknown) => void handleError(err, request, response, () => req.socket.destroy());
  try {
    chain(request, response, (err?: unknown) => fail(err ?? new NotFoundError()));
  } catch (err) {
    fail(err);
  }
});
listen(server, options.port);
