import assert from 'node:assert/strict';
import { greatCircleKm } from '../src/weather-stations/geo-distance.ts';
import { type Station, type StationData, buildStationIndex } from '../src/weather-stations/station-index.ts';
import { files } from './support/station-files.ts';

/** The shipped files as the repository would read them from a freshly seeded database. */
function dataFromFiles(): StationData {
  return {
    version: 1,
    districts: files.districts.map(({ city, district }) => ({ city, district })),
    stations: files.stations.map((s) => ({
      stationId: s.station_id,
      stationName: s.station_name,
      latitude: s.latitude,
      longitude: s.longitude,
      city: s.city,
      district: s.district,
    })),
    servings: files.centres
      .filter((c) => c.observation_station_id !== null && c.district !== '')
      .map((c) => ({ city: c.city, district: c.district, stationId: c.observation_station_id! })),
  };
}

function station(stationId: number, latitude: number, longitude: number, city = 'Ankara', district = 'Çankaya'): Station {
  return { stationId, stationName: `S${stationId}`, latitude, longitude, city, district };
}

/** Deterministic pseudo-random numbers, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

const json = (buffer: Buffer | undefined): unknown => JSON.parse(buffer!.toString('utf8'));

describe('buildStationIndex', () => {
  const data = dataFromFiles();
  const index = buildStationIndex(data);

  it('indexes the 81 cities, 973 districts and 1026 stations of the shipped files, every centre matched', () => {
    assert.deepEqual(index.counts, { cities: 81, districts: 973, stations: 1026 });
    assert.equal(index.unmatchedServings, 0);
  });

  it('finds exactly 3 official districts no station serves: Beşikdüzü, Dernekpazarı (Trabzon) and Derecik (Hakkari)', () => {
    const unserved: string[] = [];
    for (const { city, district } of data.districts) {
      if (index.city(city)!.district(district)!.stationJson.length === 0) unserved.push(`${city}/${district}`);
    }
    assert.deepEqual(unserved.sort(), ['Hakkari/Derecik', 'Trabzon/Beşikdüzü', 'Trabzon/Dernekpazarı']);
  });

  it('lists a station under every district it serves, each list ordered by stationId', () => {
    const small = buildStationIndex({
      version: 1,
      districts: [
        { city: 'Ankara', district: 'Çankaya' },
        { city: 'Ankara', district: 'Keçiören' },
      ],
      stations: [station(30, 39.9, 32.8), station(10, 39.9, 32.9), station(20, 40, 32.8, 'Ankara', 'Keçiören')],
      servings: [
        { city: 'Ankara', district: 'Çankaya', stationId: 30 },
        { city: 'Ankara', district: 'Çankaya', stationId: 10 },
        { city: 'ANKARA', district: 'KEÇİÖREN', stationId: 30 },
        { city: 'Ankara', district: 'Keçiören', stationId: 20 },
        { city: 'Ankara', district: 'Keçiören', stationId: 20 },
        { city: 'Ankara', district: 'Nowhere', stationId: 20 },
      ],
    });
    const ids = (district: string) => (json(small.city('ankara')!.district(district)!.answer) as Station[]).map((s) => s.stationId);
    assert.deepEqual(ids('cankaya'), [10, 30]);
    assert.deepEqual(ids('kecioren'), [20, 30]);
    assert.equal(small.unmatchedServings, 1);
  });

  it('serialises each answer once, with the Station fields in the documented order', () => {
    const answer = index.station(17128)!.answer.toString('utf8');
    assert.deepEqual(Object.keys(JSON.parse(answer) as object), ['stationId', 'stationName', 'latitude', 'longitude', 'city', 'district']);
    assert.equal(index.station(17128)!.answer, index.station(17128)!.answer);
    assert.deepEqual(json(index.citiesAnswer), [...new Set(data.districts.map((d) => d.city))].sort(new Intl.Collator('tr').compare));
  });

  it('refuses data in which two names of one city differ only in case or diacritics', () => {
    assert.throws(
      () =>
        buildStationIndex({
          version: 1,
          districts: [
            { city: 'Ankara', district: 'Çankaya' },
            { city: 'Ankara', district: 'Cankaya' },
          ],
          stations: [],
          servings: [],
        }),
      /"Çankaya" and "Cankaya" match the same spellings/,
    );
  });

  describe('nearest', () => {
    /** Every station by great-circle distance, ties by id: the slow, obviously right answer. */
    const bruteForce = (stations: readonly Station[], latitude: number, longitude: number, k: number) =>
      stations
        .map((s) => ({ id: s.stationId, km: greatCircleKm(latitude, longitude, s.latitude, s.longitude) }))
        .sort((a, b) => a.km - b.km || a.id - b.id)
        .slice(0, k)
        .map((s) => s.id);

    it('agrees with a scan of every station for 300 random points in and around Turkey, for limits 1 to 100', () => {
      const next = random(42);
      for (let i = 0; i < 300; i += 1) {
        const [latitude, longitude, k] = [34 + next() * 10, 24 + next() * 22, 1 + Math.floor(next() * 100)];
        const answer = index.nearest(latitude, longitude, k);
        assert.deepEqual(
          answer.map((a) => a.station.stationId),
          bruteForce(data.stations, latitude, longitude, k),
          `${latitude},${longitude} k=${k}`,
        );
        for (const a of answer) assert.equal(a.distanceKm, greatCircleKm(latitude, longitude, a.station.latitude, a.station.longitude));
      }
    });

    it('agrees with a scan at the poles and across the antimeridian, and breaks ties by stationId', () => {
      const next = random(3);
      const stations = Array.from({ length: 200 }, (_, i) => station(1000 - i, next() * 180 - 90, next() * 360 - 180));
      // Same place, three ids: equal distances must come out by id.
      stations.push(station(5, 10, 179.99), station(3, 10, 179.99), station(4, 10, 179.99));
      const world = buildStationIndex({ version: 1, districts: [], stations, servings: [] });
      for (const [latitude, longitude] of [
        [90, 0],
        [-90, 45],
        [10, -179.99],
        [10, 180],
        [0, 0],
      ] as const) {
        for (const k of [1, 3, 7, 100]) {
          assert.deepEqual(
            world.nearest(latitude, longitude, k).map((a) => a.station.stationId),
            bruteForce(stations, latitude, longitude, k),
            `${latitude},${longitude} k=${k}`,
          );
        }
      }
      assert.deepEqual(
        world.nearest(10, 179.99, 3).map((a) => a.station.stationId),
        [3, 4, 5],
      );
    });

    it('answers all stations when the limit is larger than their number, and none for an empty index', () => {
      assert.equal(index.nearest(39, 35, 2000).length, 1026);
      assert.deepEqual(buildStationIndex({ version: 1, districts: [], stations: [], servings: [] }).nearest(39, 35, 5), []);
    });
  });
});
