// The stored row of risk's station table, for the benchmark that writes copies of it (bench/groups/scale.ts):
// `@platform/risk/station-rows`. Types only; the running service is index.ts.
export type { StationRow } from './weather-stations/weather-stations.repository.ts';
