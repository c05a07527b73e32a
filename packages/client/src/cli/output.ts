/** How a command's result is printed. */
export type OutputFormat = 'json' | 'table';

const cell = (value: unknown): string =>
  value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);

function grid(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => row[i]?.length ?? 0))) ?? [];
  return rows.map((row) => row.map((value, i) => value.padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}

/**
 * Renders a result: pretty JSON, or a table (arrays of objects get one row each and a column per
 * field; an object gets a field/value row per field; a list of strings one line each).
 */
export function render(value: unknown, format: OutputFormat): string {
  if (value === undefined) return '';
  if (format === 'json') return JSON.stringify(value, null, 2);
  if (Array.isArray(value)) {
    if (!value.every((v) => typeof v === 'object' && v !== null && !Array.isArray(v))) return value.map(cell).join('\n');
    const columns = [...new Set(value.flatMap((row: object) => Object.keys(row)))];
    return grid([columns, ...value.map((row: Record<string, unknown>) => columns.map((c) => cell(row[c])))]);
  }
  if (typeof value === 'object' && value !== null) return grid(Object.entries(value).map(([k, v]) => [k, cell(v)]));
  return cell(value);
}
