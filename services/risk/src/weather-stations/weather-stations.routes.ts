import express, { type Request, type Response, type Router } from 'express';
import { type TokenVerifier, bearerAuth } from '@platform/auth';
import type { components } from '@platform/client/openapi/risk';
import { DEFAULT_NEAREST_LIMIT, findNearestStations } from './find-nearest-stations.ts';
import { DEFAULT_CITY_DISTRICT_LIMIT, findStationsByCityDistrict } from './find-stations-by-city-district.ts';
import { getDistrictsOfCity } from './get-districts-of-city.ts';
import { getStationById } from './get-station-by-id.ts';
import { type StationIndexSource, requireStationIndex } from './station-index-loader.ts';

const BASE = '/v1/weather-stations';

export interface WeatherStationsRouterDeps {
  stations: StationIndexSource;
  verifier: TokenVerifier;
  /** True when the gateway's assertion vouches that it checked the request's token against the revocations (CONTRACT.md part 10). */
  revocationsChecked: (req: Request) => boolean;
}

/** Answers serialised at index build go out as they are: no per-request JSON.stringify. */
function sendJson(res: Response, body: Buffer | string): void {
  res.type('application/json').send(body);
}

/**
 * The station operations (CONTRACT.md part 7), HTTP only. The OpenAPI validator in front has already
 * checked types and bounds, so handlers only convert; every operation needs a valid bearer token.
 */
export function weatherStationsRouter(deps: WeatherStationsRouterDeps): Router {
  const router = express.Router();
  // Through the gateway the token was checked against the revocations a moment ago, in its one Redis round
  // trip; a direct call (no valid assertion) is checked fully here.
  router.use(BASE, bearerAuth(deps.verifier, { revocationsChecked: deps.revocationsChecked }));

  router.post(`${BASE}/by/city-district`, (req, res) => {
    const body = req.body as components['schemas']['CityDistrictQuery'];
    const query = { city: body.city, district: body.district, limit: body.limit ?? DEFAULT_CITY_DISTRICT_LIMIT };
    sendJson(res, findStationsByCityDistrict(requireStationIndex(deps.stations), query));
  });

  router.get(`${BASE}/by/id/:stationId`, (req, res) => {
    sendJson(res, getStationById(requireStationIndex(deps.stations), Number(req.params.stationId)));
  });

  // Express has decoded the segment once (`%C4%B0stanbul` → `İstanbul`); it is used as is, never decoded
  // again, so `%25C4%25B0stanbul` stays the literal text `%C4%B0stanbul` and matches no city.
  router.get(`${BASE}/get-districts-of/:city`, (req, res) => {
    sendJson(res, getDistrictsOfCity(requireStationIndex(deps.stations), req.params.city));
  });

  router.get(`${BASE}/get-cities`, (_req, res) => {
    sendJson(res, requireStationIndex(deps.stations).citiesAnswer);
  });

  router.get(`${BASE}/nearest`, (req, res) => {
    const { latitude, longitude, limit } = req.query;
    const query = {
      latitude: Number(latitude),
      longitude: Number(longitude),
      limit: limit === undefined ? DEFAULT_NEAREST_LIMIT : Number(limit),
    };
    res.json(findNearestStations(requireStationIndex(deps.stations), query));
  });

  return router;
}
