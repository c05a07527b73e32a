import assert from 'node:assert/strict';
import { parseCsv } from '../seeds/csv.ts';

describe('parseCsv', () => {
  it('reads plain, empty and quoted fields, with "" inside quotes, commas and line breaks in them', () => {
    const text = 'a,b,c\n1,,"x, ""y"""\n"multi\nline",2,3\n';
    assert.deepEqual(parseCsv(text), [
      { a: '1', b: '', c: 'x, "y"' },
      { a: 'multi\nline', b: '2', c: '3' },
    ]);
  });

  it('accepts CRLF line ends, a byte-order mark and a missing final newline', () => {
    assert.deepEqual(parseCsv('\ufeffcity,district\r\nAnkara,Keçiören\r\nİzmir,Buca'), [
      { city: 'Ankara', district: 'Keçiören' },
      { city: 'İzmir', district: 'Buca' },
    ]);
  });

  it('when a record has the wrong number of fields or a quote never closes, throws naming the line', () => {
    assert.throws(() => parseCsv('a,b\n1,2\n3\n'), /line 3 has 1 fields, the header has 2/);
    assert.throws(() => parseCsv('a,b\n"1,2\n'), /ends inside a quoted field/);
  });
});
