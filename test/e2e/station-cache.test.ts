import assert from 'node:assert/strict';
import { createClient } from '@platform/client';
import { type Knex, createDatabase } from '@platform/service-kit/database';
import { type CaptureServer, startCaptureServer } from '../../services/identity/test/support/capture-server.ts';
import { type Stack, startStack } from './support/stack.ts';

const KEY = { keyId: 'app', alg: 'hmac-sha256', secret: 'e2e-app-secret-0123456789' } as const;
const STATION = 17130;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * CONTRACT.md part 17 through the real stack: two gateways with their station caches in front of risk;
 * a station renamed in risk's tables under traffic reaches every gateway's clients within 2 s of risk
 * first serving it; the SDK revalidates the city list with its ETag.
 */
describe('end to end: station answers cached at the gateways (CONTRACT.md part 17)', function () {
  this.timeout(120_000);
  let stack: Stack;
  let mail: CaptureServer;
  let sms: CaptureServer;
  let db: Knex;

  before(async () => {
    mail = await startCaptureServer();
    sms = await startCaptureServer();
    stack = await startStack({ mailUrl: mail.url, smsUrl: sms.url }, { GATEWAY_CLIENT_KEYS: JSON.stringify([KEY]), RISK_INDEX_POLL_MS: '200', TOKEN_BINDING: 'off' });
    db = createDatabase({ url: stack.databaseUrls.risk, applicationName: 'e2e-station-cache' });
  });
  after(async () => {
    await db?.destroy();
    await stack?.stop();
    await mail?.close();
    await sms?.close();
  });

  const client = (baseUrl: string) => createClient({ env: 'local', baseUrl, keyId: KEY.keyId, key: { alg: KEY.alg, secret: KEY.secret } });

  it('serves hits after every check, and a renamed station from every gateway within 2 s of risk serving it', async () => {
    const second = await stack.startGatewayReplica();
    const gateways = [client(stack.gatewayUrl), client(second)];
    const [login] = await Promise.all(gateways.map((gateway) => gateway.auth.login(stack.admin)));
    const direct = { authorization: `Bearer ${String(login?.accessToken)}` };
    // Each gateway stores the station's answer and answers it from memory next time.
    const raw = async (origin: string) => {
      const sdk = origin === stack.gatewayUrl ? gateways[0] : gateways[1];
      return sdk?.stations.byId(STATION);
    };
    for (const origin of [stack.gatewayUrl, second]) {
      await raw(origin);
      await raw(origin);
    }
    const metrics = await (await fetch(`${stack.gatewayManagementUrl}/metrics`)).text();
    assert.ok(Number(/^gateway_cache_hits_total(?:\{[^}]*\})? (\d+)/m.exec(metrics)?.[1]) >= 1, 'the first gateway answered from its cache');

    const renamed = `Keçiören Test ${Date.now()}`;
    // Traffic the whole time: every gateway's answer, and risk's own, read in a loop.
    const firstSeen = new Map<string, number>();
    let stop = false;
    const watch = async (name: string, read: () => Promise<string | undefined>) => {
      while (!stop) {
        const seen = await read().catch(() => undefined);
        if (seen === renamed && !firstSeen.has(name)) firstSeen.set(name, Date.now());
        await sleep(20);
      }
    };
    const watchers = [
      watch('risk', async () => ((await (await fetch(`${stack.riskUrl}/v1/weather-stations/by/id/${STATION}`, { headers: direct })).json()) as { stationName?: string }).stationName),
      watch('gateway-1', async () => (await raw(stack.gatewayUrl))?.stationName),
      watch('gateway-2', async () => (await raw(second))?.stationName),
    ];
    try {
      await db('stations').where({ station_id: STATION }).update({ station_name: renamed });
      const deadline = Date.now() + 15_000;
      while (firstSeen.size < 3 && Date.now() < deadline) await sleep(50);
    } finally {
      stop = true;
      await Promise.all(watchers);
    }
    const risk = firstSeen.get('risk');
    assert.ok(risk !== undefined, 'risk never served the new name');
    for (const gateway of ['gateway-1', 'gateway-2']) {
      const at = firstSeen.get(gateway);
      assert.ok(at !== undefined, `${gateway} never served the new name`);
      assert.ok(at - risk < 2000, `${gateway} served the old name ${at - risk} ms after risk served the new one`);
    }
  });

  it('a risk replica whose own poll is a minute away follows the generation another published: a gateway in front of it relays the renamed station within 2 s', async () => {
    const lagging = await stack.startRiskReplica({ RISK_INDEX_POLL_MS: '60000' });
    // Its start seeded the data again (local): the first replica has loaded that generation before the rename.
    await sleep(1000);
    const behind = client(await stack.startGatewayReplica({ RISK_URL: lagging, GATEWAY_CACHE_MB: '0' }));
    await behind.auth.login(stack.admin);
    const renamed = `Keçiören Takip ${Date.now()}`;
    await db('stations').where({ station_id: STATION }).update({ station_name: renamed });
    const first = client(stack.gatewayUrl);
    await first.auth.login(stack.admin);
    const deadline = Date.now() + 10_000;
    let firstServed: number | undefined;
    while (firstServed === undefined && Date.now() < deadline) {
      if ((await first.stations.byId(STATION))?.stationName === renamed) firstServed = Date.now();
      else await sleep(20);
    }
    assert.ok(firstServed !== undefined, 'the first replica never served the new name');
    let followed: number | undefined;
    while (followed === undefined && Date.now() < firstServed + 5000) {
      if ((await behind.stations.byId(STATION))?.stationName === renamed) followed = Date.now();
      else await sleep(20);
    }
    assert.ok(followed !== undefined && followed - firstServed < 2000, `the lagging replica served the old name ${followed === undefined ? 'for 5 s' : `${followed - firstServed} ms`} after the first served the new one`);
  });

  it('the SDK keeps the city list\'s ETag and revalidates: the gateway answers 304, the SDK gives the list again', async () => {
    const seen: Array<{ status: number; ifNoneMatch: string | null }> = [];
    const recording: typeof fetch = async (input, init) => {
      const res = await globalThis.fetch(input, init);
      if (String(input).endsWith('/v1/weather-stations/get-cities')) seen.push({ status: res.status, ifNoneMatch: new Headers(init?.headers).get('if-none-match') });
      return res;
    };
    const sdk = createClient({ env: 'local', baseUrl: stack.gatewayUrl, keyId: KEY.keyId, key: { alg: KEY.alg, secret: KEY.secret }, fetch: recording });
    await sdk.auth.login(stack.admin);
    const first = await sdk.stations.cities();
    const second = await sdk.stations.cities();
    assert.equal(first.length, 81);
    assert.deepEqual(second, first);
    assert.equal(seen[0]?.status, 200);
    assert.equal(seen[0]?.ifNoneMatch, null);
    assert.match(String(seen[1]?.ifNoneMatch), /^"/);
    assert.equal(seen[1]?.status, 304);
  });
});
