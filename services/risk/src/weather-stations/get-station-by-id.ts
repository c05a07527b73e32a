import { NotFoundError } from '@platform/errors';
import type { StationIndex } from './station-index.ts';

/** One station as JSON; 404 when no station has the id. */
export function getStationById(index: StationIndex, stationId: number): Buffer {
  const found = index.station(stationId);
  if (found === undefined) throw new NotFoundError('Station not found', { messages: [`Station not found: ${stationId}`] });
  return found.answer;
}
