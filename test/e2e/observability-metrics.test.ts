import assert from 'node:assert/strict';
import { freePort } from '@platform/stack';
import { signedHeaders } from '../../gateway/test/support/signing-client.ts';
import { DEPLOYABLE_NAMES, alertRules, asPrometheusQuery, exportedNames, queriesOf, selectorsOf } from '../observability-support/promql.ts';
import { sendRaw } from '../reliability/support/raw-http.ts';
import { type Stack, startStack } from './support/stack.ts';

const LOCAL_KEY = { keyId: 'local-dev', alg: 'hmac-sha256' as const, secret: 'local-dev-secret' };

// The dashboards and alerts of deploy/observability query only what the processes really export: the
// names are taken from a scrape of the three real processes, never from a list kept by hand.
describe('dashboards and alerts against a scrape of the running stack', function () {
  this.timeout(120_000);
  let stack: Stack;
  const scraped: Record<string, string> = {};
  let metricsUrls: Record<(typeof DEPLOYABLE_NAMES)[number], string>;

  before(async () => {
    // The services' metrics ports as the cluster sets them: Prometheus scrapes those, never the API ports.
    const metricsPorts = { identity: await freePort(), risk: await freePort() };
    stack = await startStack(
      { mailUrl: 'http://127.0.0.1:9/mail', smsUrl: 'http://127.0.0.1:9/sms' },
      { IDENTITY_METRICS_PORT: String(metricsPorts.identity), RISK_METRICS_PORT: String(metricsPorts.risk) },
    );
    // Some traffic first: a login that works, one that fails, a station lookup, a refused request.
    const login = async (password: string) => {
      const body = Buffer.from(JSON.stringify({ username: stack.admin.username, password }));
      return sendRaw(stack.gatewayUrl, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: LOCAL_KEY, body }), body);
    };
    const token = String((await login(stack.admin.password)).json().accessToken);
    assert.equal((await login('not-the-password')).status, 401);
    const cities = '/v1/weather-stations/get-cities';
    assert.equal((await sendRaw(stack.gatewayUrl, 'GET', cities, signedHeaders('GET', cities, { key: LOCAL_KEY, bearer: token }))).status, 200);
    assert.equal((await sendRaw(stack.gatewayUrl, 'GET', cities, { 'x-idempotency-key': 'unsigned-1' })).status, 401);
    const urls = { gateway: stack.gatewayManagementUrl, identity: stack.identityUrl, risk: stack.riskUrl };
    metricsUrls = { gateway: stack.gatewayManagementUrl, identity: `http://127.0.0.1:${metricsPorts.identity}`, risk: `http://127.0.0.1:${metricsPorts.risk}` };
    for (const name of DEPLOYABLE_NAMES) {
      // A readiness probe first, so that process_ready has a value.
      assert.equal((await fetch(`${urls[name]}/health/ready`)).status, 200);
      const res = await fetch(`${metricsUrls[name]}/metrics`);
      assert.equal(res.status, 200);
      scraped[name] = await res.text();
    }
  });
  after(async () => {
    await stack?.stop();
  });

  for (const name of DEPLOYABLE_NAMES) {
    it(`${name}'s dashboard queries only metrics ${name} exports`, () => {
      const exported = exportedNames(scraped[name]!);
      const missing = queriesOf(name).flatMap((q) => selectorsOf(asPrometheusQuery(q.expr)).filter((s) => !exported.has(s.metric)).map((s) => `${q.panel}: ${s.metric}`));
      assert.deepEqual(missing, []);
    });
  }

  it('every alert queries only metrics the processes export, each where its `service` filter says', () => {
    const missing: string[] = [];
    for (const rule of alertRules()) {
      for (const { metric, service } of selectorsOf(rule.expr)) {
        const exporters = DEPLOYABLE_NAMES.filter((name) => exportedNames(scraped[name]!).has(metric));
        if (exporters.length === 0 || (service !== undefined && !exporters.includes(service as (typeof DEPLOYABLE_NAMES)[number]))) missing.push(`${rule.alert}: ${metric}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it('serves the services\' metrics on their metrics ports, which serve nothing of the API', async () => {
    for (const url of [metricsUrls.identity, metricsUrls.risk]) {
      assert.equal((await fetch(`${url}/v1/weather-stations/get-cities`)).status, 404);
      assert.equal((await fetch(`${url}/health/ready`)).status, 404);
    }
    // Probes and scrapes are not traffic (the request metrics count users only).
    for (const name of DEPLOYABLE_NAMES) assert.doesNotMatch(scraped[name]!, /^http_requests_total\{[^}]*route="(\/health\/\w+|\/metrics)"/m, name);
  });

  it('labels every series with its service, and reports its dependencies reached and itself ready', () => {
    for (const name of DEPLOYABLE_NAMES) {
      const text = scraped[name]!;
      assert.match(text, new RegExp(`^http_requests_total\\{[^}]*service="${name}"[^}]*\\} [1-9]`, 'm'), name);
      assert.match(text, new RegExp(`^process_ready\\{service="${name}"\\} 1$`, 'm'), name);
      assert.match(text, new RegExp(`^dependency_up\\{dependency="redis",service="${name}"\\} 1$`, 'm'), name);
    }
    for (const name of ['identity', 'risk']) assert.match(scraped[name]!, new RegExp(`^dependency_up\\{dependency="postgres",service="${name}"\\} 1$`, 'm'));
    assert.match(scraped.identity!, /^identity_login_attempts_total\{outcome="wrong_password",service="identity"\} 1$/m);
    assert.match(scraped.gateway!, /^gateway_rejected_requests_total\{reason="signature",service="gateway"\} [1-9]/m);
    // Keys from GATEWAY_CLIENT_KEYS, no file: nothing to be invalid, and the alert's series is there all the same.
    assert.match(scraped.gateway!, /^gateway_client_keys_file_valid\{service="gateway"\} 1$/m);
  });
});
