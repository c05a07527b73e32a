/** One CSV record: header name → raw text. */
export type CsvRecord = Readonly<Record<string, string>>;

/**
 * Parses RFC 4180 text (the format data/SOURCES.md promises): comma-separated, fields quoted only where
 * needed, `""` for a quote inside quotes, LF or CRLF line ends. The first line is the header; every
 * record must have exactly its number of fields.
 */
export function parseCsv(text: string): CsvRecord[] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  for (; i < text.length; i += 1) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 1;
      } else if (c === '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c === '"' && field === '') {
      quoted = true;
    } else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i += 1;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else {
      field += c;
    }
  }
  if (quoted) throw new Error('CSV ends inside a quoted field');
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  const [header, ...records] = rows;
  if (header === undefined) throw new Error('CSV has no header');
  return records.map((fields, n) => {
    if (fields.length !== header.length) {
      throw new Error(`CSV line ${n + 2} has ${fields.length} fields, the header has ${header.length}`);
    }
    return Object.fromEntries(header.map((name, k) => [name, fields[k] ?? '']));
  });
}
