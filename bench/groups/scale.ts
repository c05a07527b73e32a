import { createDatabase } from '@platform/service-kit/database';
import { type RunContext, CITY_DISTRICT_BODY, directTarget, measureFixedPair, needStack } from '../harness/context.ts';
import { freePort } from '@platform/stack';
import { memorySampler } from '../harness/processes.ts';
import type { RequestShape } from '../harness/signer.ts';
import { imageNodeOptions } from '../harness/stack.ts';
import type { StationRow } from '@platform/risk/station-rows';

// Real ids stay below these (station ids are 5 digits, centre ids too), so copy k of a row gets the
// original id plus k times the stride and never meets another row's id.
const STATION_STRIDE = 100_000;
const CENTRE_STRIDE = 1_000_000;
const CHUNK = 2000;

type CentreRow = Record<string, unknown> & { merkez_id: number; observation_station_id: number | null };

/** Up to ±0.05° of deterministic jitter, so copies are distinct points near the original. */
function jitter(id: number, k: number): number {
  return (((id * 31 + k * 7919) % 1000) - 500) / 10_000;
}

/**
 * Adds `scale - 1` synthetic copies of every station and of every MGM centre (each copy serving the same
 * district through its own station copy) to a risk database the service has already seeded, in one
 * transaction, so the service's index poll picks up the whole set at once. Only ever run on the
 * benchmark's own database.
 */
async function loadCopies(databaseUrl: string, scale: number): Promise<number> {
  const db = createDatabase({ url: databaseUrl, applicationName: 'bench', statementTimeoutMs: 120_000 });
  try {
    return await db.transaction(async (trx) => {
      const stations = await trx('stations').select<StationRow[]>('*');
      const centres = await trx('mgm_centers').select<CentreRow[]>('*');
      const stationCopies: StationRow[] = [];
      const centreCopies: CentreRow[] = [];
      for (let k = 1; k < scale; k += 1) {
        for (const s of stations) {
          const id = s.station_id + k * STATION_STRIDE;
          stationCopies.push({ ...s, station_id: id, station_name: `${s.station_name} ${k}`, latitude: s.latitude + jitter(id, k), longitude: s.longitude + jitter(id, k + 1) });
        }
        for (const c of centres) {
          const observation = c.observation_station_id === null ? null : c.observation_station_id + k * STATION_STRIDE;
          centreCopies.push({ ...c, merkez_id: c.merkez_id + k * CENTRE_STRIDE, observation_station_id: observation });
        }
      }
      // Parents first: centres refer to stations.
      for (let i = 0; i < stationCopies.length; i += CHUNK) await trx('stations').insert(stationCopies.slice(i, i + CHUNK));
      for (let i = 0; i < centreCopies.length; i += CHUNK) await trx('mgm_centers').insert(centreCopies.slice(i, i + CHUNK));
      return stations.length + stationCopies.length;
    });
  } finally {
    await db.destroy();
  }
}

/** Polls until the service answers a copy's id, i.e. its index holds the large set. */
async function waitForCopies(origin: string, token: string, scale: number): Promise<void> {
  const url = `${origin}/v1/weather-stations/by/id/${17130 + (scale - 1) * STATION_STRIDE}`;
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const status = await fetch(url, { headers: { authorization: `Bearer ${token}` } }).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the large station set was not loaded within 120 s (${url})`);
}

/**
 * Nearest and city-district lookups at the fixed rate against the stack's risk service (the real set)
 * and a second risk service whose database holds `BENCH_SCALE` times as many stations.
 */
export async function scaleScenarios(ctx: RunContext): Promise<void> {
  const { stack, session } = needStack(ctx);
  const { scale } = ctx.config;
  const port = await freePort();
  const databaseUrl = stack.database('risk_scaled');
  ctx.progress(`scale: starting a risk service and loading ${scale}× the station set`);
  // The image's heap flags without its old-space cap, which is sized for the real set: a deployment
  // holding 100× the stations would size its heap for them, and this measures lookups, not memory.
  const nodeOptions = imageNodeOptions('risk').replace(/\s*--max-old-space-size=\d+/, '').trim();
  // The stack's environment (its Redis prefix, identity's key set) with its own database, polled often:
  // the synthetic rows are inserted after the start's seed and must be picked up quickly.
  const scaled = await stack.start('risk', {
    as: 'risk-scaled',
    port,
    env: { RISK_DATABASE_URL: databaseUrl, RISK_INDEX_POLL_MS: '200' },
    nodeOptions: ctx.config.nodeOptions ?? nodeOptions,
  });
  try {
    ctx.facts.scaledStations = await loadCopies(databaseUrl, scale);
    await waitForCopies(scaled.url, session.token, scale);
    const memory = memorySampler({ scaled: scaled.pid });
    const nearest: RequestShape = { method: 'GET', target: '/v1/weather-stations/nearest?latitude=39.95&longitude=32.85&limit=5', bearer: session.token };
    const cityDistrict: RequestShape = { method: 'POST', target: '/v1/weather-stations/by/city-district', body: CITY_DISTRICT_BODY, bearer: session.token };
    await measureFixedPair(ctx, [
      { id: 'scale-nearest-1x', label: 'nearest, real set', target: directTarget(stack.riskUrl, nearest) },
      { id: 'scale-nearest-nx', label: `nearest, ${scale}× set`, target: directTarget(scaled.url, nearest) },
    ]);
    await measureFixedPair(ctx, [
      { id: 'scale-city-district-1x', label: 'by/city-district, real set', target: directTarget(stack.riskUrl, cityDistrict) },
      { id: 'scale-city-district-nx', label: `by/city-district, ${scale}× set`, target: directTarget(scaled.url, cityDistrict) },
    ]);
    memory.stop();
    const peak = memory.peaks().scaled;
    if (peak !== undefined) ctx.facts.scaledRiskRssMb = peak;
  } finally {
    await scaled.stop();
  }
}
