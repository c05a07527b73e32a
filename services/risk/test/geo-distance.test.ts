import assert from 'node:assert/strict';
import { EARTH_RADIUS_KM, chordSquared, greatCircleKm, roundKm, unitVector } from '../src/weather-stations/geo-distance.ts';

/** Deterministic pseudo-random numbers, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

describe('greatCircleKm', () => {
  it('is zero from a point to itself and the same in both directions', () => {
    assert.equal(greatCircleKm(40.128, 32.995, 40.128, 32.995), 0);
    assert.equal(greatCircleKm(40.128, 32.995, 41.0082, 28.9784), greatCircleKm(41.0082, 28.9784, 40.128, 32.995));
  });

  it('measures one degree along a meridian as 1/360 of the circumference', () => {
    assert.ok(Math.abs(greatCircleKm(40, 30, 41, 30) - (2 * Math.PI * EARTH_RADIUS_KM) / 360) < 1e-9);
  });

  it('measures a quarter of the equator and antipodal points as a quarter and half of the circumference', () => {
    assert.ok(Math.abs(greatCircleKm(0, 0, 0, 90) - (Math.PI * EARTH_RADIUS_KM) / 2) < 1e-9);
    assert.ok(Math.abs(greatCircleKm(0, 0, 0, 180) - Math.PI * EARTH_RADIUS_KM) < 1e-9);
    assert.ok(Math.abs(greatCircleKm(90, 0, -90, 0) - Math.PI * EARTH_RADIUS_KM) < 1e-9);
  });

  it('crosses the antimeridian the short way', () => {
    assert.ok(Math.abs(greatCircleKm(0, 179.5, 0, -179.5) - (2 * Math.PI * EARTH_RADIUS_KM) / 360) < 1e-9);
  });

  it('agrees with the chord between unit vectors (d = 2R·asin(c/2)) for random pairs', () => {
    const next = random(7);
    for (let i = 0; i < 500; i += 1) {
      const [lat1, lon1, lat2, lon2] = [next() * 180 - 90, next() * 360 - 180, next() * 180 - 90, next() * 360 - 180];
      const chord = Math.sqrt(chordSquared(unitVector(lat1, lon1), unitVector(lat2, lon2)));
      const viaChord = 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, chord / 2));
      assert.ok(Math.abs(greatCircleKm(lat1, lon1, lat2, lon2) - viaChord) < 1e-6, `${lat1},${lon1} → ${lat2},${lon2}`);
    }
  });
});

describe('roundKm', () => {
  it('rounds to 0.01 km', () => {
    assert.equal(roundKm(0.5712), 0.57);
    assert.equal(roundKm(9.7189), 9.72);
    assert.equal(roundKm(123.4), 123.4);
    assert.equal(roundKm(0.004), 0);
  });
});
