import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isErrorBody } from '@platform/errors';
import { parse } from 'yaml';
import { OPENAPI_PATH as IDENTITY_OPENAPI } from '../../services/identity/src/app.ts';
import { OPENAPI_PATH as RISK_OPENAPI } from '../../services/risk/src/app.ts';
import { signedHeaders } from '../../gateway/test/support/signing-client.ts';
import { type Stack, startStack } from '../e2e/support/stack.ts';

/** The operations that answer a malformed request in RFC 6749 §5.2's shape. */
const TOKEN_ENDPOINTS = new Set(['/v1/auth/introspect', '/v1/auth/revoke']);
import { type Json, allowedStatuses, documentedRoutes, isDocumented } from '../../scripts/fuzz/documented-routes.ts';
import { type Answer, sendRaw } from './support/raw-http.ts';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
const LOCAL_KEY = { keyId: 'local-dev', alg: 'hmac-sha256' as const, secret: 'local-dev-secret' };
const BODY = Buffer.from('{}');
const readYaml = (file: string) => parse(readFileSync(file, 'utf8')) as Json;

/** Valid values for the documents' path parameters, by name; anything else gets a well-formed id. */
function filled(template: string, userId: string): string {
  const values: Record<string, string> = { userId, stationId: '17130', city: 'Ankara' };
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => values[name] ?? randomUUID());
}

/** A path beside the documented one that documents nothing: its last literal segment renamed, or one more segment. */
function sibling(template: string, userId: string): string {
  const path = filled(template, userId);
  return template.endsWith('}') ? `${path}/no-such-operation` : `${path.slice(0, path.lastIndexOf('/'))}/no-such-operation`;
}

interface Target {
  name: string;
  document: Json;
  send(method: string, path: string, options: { body: boolean; token: string | undefined }): Promise<Answer>;
}

/**
 * Every documented path (a valid id filled in) and an unknown sibling of it, under every method, with and
 * without a JSON body and a token, twice, to the gateway (signed) and to each service directly: every
 * answer is a status the document lists for it (405 for another method, 404 for an unknown path), in the
 * error shape when it is an error, never a 5xx; and every process still answers at the end (CONTRACT.md
 * part 8: no request stops or stalls a process).
 */
describe('every method on every path, to every process (CONTRACT.md part 8)', function () {
  this.timeout(300_000);
  let stack: Stack;
  let token: string;
  let userId: string;

  before(async () => {
    // Mail and SMS go nowhere: no operation here gets as far as sending any.
    stack = await startStack({ mailUrl: 'http://127.0.0.1:9/mail', smsUrl: 'http://127.0.0.1:9/sms' });
    const body = Buffer.from(JSON.stringify(stack.admin));
    const login = await sendRaw(stack.gatewayUrl, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: LOCAL_KEY, body }), body);
    assert.equal(login.status, 200, login.body.toString());
    token = String(login.json().accessToken);
    userId = String(JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()).sub);
  });
  after(async () => {
    await stack?.stop();
  });

  const direct =
    (base: () => string): Target['send'] =>
    (method, path, { body, token: bearer }) =>
      sendRaw(base(), method, path, { ...(body ? { 'content-type': 'application/json' } : {}), ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }) }, body ? BODY : undefined);

  const targets = (): Target[] => [
    {
      name: 'gateway',
      document: {},
      send: (method, path, { body, token: bearer }) =>
        sendRaw(stack.gatewayUrl, method, path, signedHeaders(method, path, { key: LOCAL_KEY, bearer, body: body ? BODY : undefined, headers: body ? { 'content-type': 'application/json' } : {} }), body ? BODY : undefined),
    },
    { name: 'identity', document: readYaml(IDENTITY_OPENAPI), send: direct(() => stack.identityUrl) },
    { name: 'risk', document: readYaml(RISK_OPENAPI), send: direct(() => stack.riskUrl) },
  ];

  for (const target of ['gateway', 'identity', 'risk']) {
    it(`${target}: every answer is documented, in the error shape, never a 5xx, the second time too`, async () => {
      const chosen = targets().find((t) => t.name === target)!;
      // The gateway's promise is the merged document it serves.
      const document = target === 'gateway' ? ((await (await fetch(`${stack.gatewayUrl}/openapi.json`)).json()) as Json) : chosen.document;
      const routes = documentedRoutes(document);
      const paths = [...new Set(routes.operations.flatMap((op) => [filled(op.template, userId), sibling(op.template, userId)]))];
      const problems: string[] = [];
      let sent = 0;
      for (const path of paths) {
        for (const method of METHODS) {
          const verdict = routes.verdict(method, path);
          const statuses = verdict.kind === 'operation' ? verdict.operation.statuses : allowedStatuses(verdict);
          for (const body of [false, true]) {
            for (const bearer of [undefined, token]) {
              for (let round = 0; round < 2; round++) {
                const res = await chosen.send(method, path, { body, token: bearer });
                sent += 1;
                const what = `${method} ${path} (body: ${body}, token: ${bearer !== undefined}, round ${round + 1}) → ${res.status}`;
                if (res.status >= 500) problems.push(`${what}: a 5xx ${res.body.toString().slice(0, 200)}`);
                else if (!isDocumented(statuses, res.status)) problems.push(`${what}: not documented (${[...statuses].join(' ')})`);
                // Allow names a set: any order.
                const allowed = String(res.headers.allow ?? '').split(/\s*,\s*/).sort().join(', ');
                if (verdict.kind === 'method-not-allowed' && res.status === 405 && allowed !== [...verdict.allow].sort().join(', ')) {
                  problems.push(`${what}: Allow ${String(res.headers.allow)}, documented ${verdict.allow.join(', ')}`);
                }
                if (res.status >= 400 && method !== 'HEAD') {
                  const parsed = (() => {
                    try {
                      return JSON.parse(res.body.toString()) as unknown;
                    } catch {
                      return undefined;
                    }
                  })();
                  // A token endpoint's malformed request answers in RFC 6749 §5.2's shape (CONTRACT.md part 16).
                  const oauth = res.status === 400 && method === 'POST' && TOKEN_ENDPOINTS.has(path) && (parsed as { error?: unknown } | undefined)?.error === 'invalid_request';
                  if (!oauth && (!isErrorBody(parsed) || parsed.status !== res.status || parsed.path !== path)) problems.push(`${what}: not the error shape: ${res.body.toString().slice(0, 200)}`);
                }
              }
            }
          }
        }
      }
      assert.ok(sent > paths.length * METHODS.length * 8 - 1, `sent ${sent}`);
      assert.deepEqual(problems.slice(0, 40), [], `${problems.length} problems of ${sent} requests`);
    });
  }

  it('afterwards every process still answers /health/live', async () => {
    for (const url of [stack.gatewayUrl, stack.gatewayManagementUrl, stack.identityUrl, stack.riskUrl]) {
      assert.equal((await fetch(`${url}/health/live`)).status, 200, url);
    }
  });
});
