import express, { type Request, type Response, type Router } from 'express';
import { STATION_GENERATION_HEADER } from '@platform/service-kit';
import { type TokenVerifier, bearerAuth } from '@platform/auth';
import type { components } from '@platform/client/openapi/risk';
import { DEFAULT_NEAREST_LIMIT, findNearestStations } from './find-nearest-stations.ts';
import { DEFAULT_CITY_DISTRICT_LIMIT, findStationsByCityDistrict } from './find-stations-by-city-district.ts';
import { getDistrictsOfCity } from './get-districts-of-city.ts';
import { getStationById } from './get-station-by-id.ts';
import { sendStationAnswer } from './conditional-answer.ts';
import type { StationIndex } from './station-index.ts';
import { type StationIndexSource, requireStationIndex } from './station-index-loader.ts';

const BASE = '/v1/weather-stations';

export interface WeatherStationsRouterDeps {
  stations: StationIndexSource;
  verifier: TokenVerifier;
  /** True when the gateway's assertion vouches that it checked the request's token against the revocations (CONTRACT.md part 10). */
  checkedByGateway: (req: Request) => boolean;
}


/**
 * The station operations (CONTRACT.md part 7), HTTP only. The OpenAPI validator in front has already
 * checked types and bounds, so handlers only convert; every operation needs a valid bearer token. Every
 * answer goes out with its validators and is conditional (CONTRACT.md part 17, conditional-answer.ts),
 * keyed by what the answer depends on; answers serialised at index build go out as they are.
 */
export function weatherStationsRouter(deps: WeatherStationsRouterDeps): Router {
  const router = express.Router();
  // The index an answer comes from, its generation named on the answer (a 404 too) for the gateway's cache.
  const indexFor = (res: Response): StationIndex => {
    const index = requireStationIndex(deps.stations);
    res.setHeader(STATION_GENERATION_HEADER, String(index.version));
    return index;
  };
  // Through the gateway the token was checked against the revocations a moment ago, in its one Redis round
  // trip, so a token verified here before is taken at once; a direct call (no valid assertion) is checked fully.
  router.use(BASE, bearerAuth(deps.verifier, { checkedByGateway: deps.checkedByGateway }));

  router.post(`${BASE}/by/city-district`, (req, res) => {
    const body = req.body as components['schemas']['CityDistrictQuery'];
    const query = { city: body.city, district: body.district, limit: body.limit ?? DEFAULT_CITY_DISTRICT_LIMIT };
    const index = indexFor(res);
    const answer = findStationsByCityDistrict(index, query);
    sendStationAnswer(req, res, index, `city-district\n${query.city}\n${query.district}\n${query.limit}`, answer);
  });

  router.get(`${BASE}/by/id/:stationId`, (req, res) => {
    const index = indexFor(res);
    const id = Number(req.params.stationId);
    sendStationAnswer(req, res, index, `by-id\n${id}`, getStationById(index, id));
  });

  // Express has decoded the segment once (`%C4%B0stanbul` → `İstanbul`); it is used as is, never decoded
  // again, so `%25C4%25B0stanbul` stays the literal text `%C4%B0stanbul` and matches no city.
  router.get(`${BASE}/get-districts-of/:city`, (req, res) => {
    const index = indexFor(res);
    sendStationAnswer(req, res, index, `districts-of\n${req.params.city}`, getDistrictsOfCity(index, req.params.city));
  });

  router.get(`${BASE}/get-cities`, (req, res) => {
    const index = indexFor(res);
    sendStationAnswer(req, res, index, 'cities', index.citiesAnswer);
  });

  router.get(`${BASE}/nearest`, (req, res) => {
    const { latitude, longitude, limit } = req.query;
    const query = {
      latitude: Number(latitude),
      longitude: Number(longitude),
      limit: limit === undefined ? DEFAULT_NEAREST_LIMIT : Number(limit),
    };
    const index = indexFor(res);
    sendStationAnswer(req, res, index, `nearest\n${query.latitude}\n${query.longitude}\n${query.limit}`, JSON.stringify(findNearestStations(index, query)));
  });

  return router;
}
