import { escapeControls } from './terminal.ts';

/** How a command's result is printed. */
export type OutputFormat = 'json' | 'table';

const isPrimitive = (value: unknown) => value === null || typeof value !== 'object';

/**
 * A value as one table cell. Escaped here already (print escapes again, a no-op then) so that the columns
 * are as wide as what the terminal shows, and a line break in a value cannot start a forged row.
 */
const cell = (value: unknown): string => {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value) && value.every(isPrimitive)) return escapeControls(value.join(','));
  return escapeControls(typeof value === 'object' ? JSON.stringify(value) : String(value));
};

function grid(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => row[i]?.length ?? 0))) ?? [];
  return rows.map((row) => row.map((value, i) => value.padEnd(widths[i] ?? 0)).join('  ').trimEnd());
}

/** A page of a list operation: `{ items, nextCursor }`. */
function isPage(value: unknown): value is { items: unknown[]; nextCursor: string | null } {
  return typeof value === 'object' && value !== null && Array.isArray((value as { items?: unknown }).items) && 'nextCursor' in value;
}

/** One row per object, a column per field (or per `columns`, when given); a list of plain values one line each. */
function table(rows: unknown[], columns: readonly string[] | undefined): string[] {
  if (!rows.every((v) => typeof v === 'object' && v !== null && !Array.isArray(v))) return rows.map(cell);
  const shown = columns ?? [...new Set(rows.flatMap((row) => Object.keys(row as object)))];
  if (shown.length === 0) return [];
  return grid([[...shown], ...rows.map((row) => shown.map((c) => cell((row as Record<string, unknown>)[c])))]);
}

/**
 * Renders a result as the lines to print: pretty JSON, or a table (arrays of objects get one row each and
 * a column per field, or the `columns` given; a page its items, then the cursor of the next one; an object
 * gets a field/value row per field; a list of strings one line each). Lines, not one text, so that only
 * the printer joins them and a line break inside a value can never pass for one between rows. JSON needs
 * no care for that: JSON.stringify escapes every line break inside a string.
 */
export function render(value: unknown, format: OutputFormat, columns?: readonly string[]): string[] {
  if (value === undefined) return [];
  if (format === 'json') return JSON.stringify(value, null, 2).split('\n');
  if (isPage(value)) {
    const rows = table(value.items, columns);
    return value.nextCursor === null ? rows : [...rows, '', `more: --cursor ${value.nextCursor}`];
  }
  if (Array.isArray(value)) return table(value, columns);
  if (typeof value === 'object' && value !== null) return grid(Object.entries(value).map(([k, v]) => [escapeControls(k), cell(v)]));
  return [cell(value)];
}
