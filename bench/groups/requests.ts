// The two station lookups every service group measures, as request shapes.
import { CITY_DISTRICT_BODY, STATION_ID } from '../harness/context.ts';
import type { RequestShape } from '../harness/signer.ts';

export const BY_ID = `/v1/weather-stations/by/id/${STATION_ID}`;

/** `GET …/by/id/17130`, with a bearer token or without. */
export function byId(bearer: string | undefined): RequestShape {
  return { method: 'GET', target: BY_ID, bearer };
}

/** `POST …/by/city-district` (Ankara, Keçiören). */
export function cityDistrict(bearer: string): RequestShape {
  return { method: 'POST', target: '/v1/weather-stations/by/city-district', body: CITY_DISTRICT_BODY, bearer };
}

/** The lookups by the names the scenario ids use. */
export const LOOKUPS = { 'by-id': byId, 'city-district': cityDistrict } as const;
