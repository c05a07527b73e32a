import assert from 'node:assert/strict';
import { clientCopyCurrent, parseHttpDate } from '../src/representation.ts';

describe('HTTP-dates and conditional requests (RFC 9110 sections 5.6.7 and 13.1.3)', () => {
  const at = (iso: string) => Date.parse(iso);

  it('reads the IMF-fixdate and both obsolete forms recipients must accept, to the same instant', () => {
    for (const text of ['Sun, 06 Nov 1994 08:49:37 GMT', 'Sunday, 06-Nov-94 08:49:37 GMT', 'Sun Nov  6 08:49:37 1994']) {
      assert.equal(parseHttpDate(text, at('2026-11-29T00:00:00Z')), at('1994-11-06T08:49:37Z'), text);
    }
    // A leap second is in the grammar: one past 59.
    assert.equal(parseHttpDate('Tue, 30 Jun 2015 23:59:60 GMT'), at('2015-07-01T00:00:00Z'));
  });

  it('takes an RFC 850 two-digit year as the latest such year not more than 50 years ahead', () => {
    const now = at('2026-11-29T00:00:00Z');
    assert.equal(parseHttpDate('Friday, 01-Jan-76 00:00:00 GMT', now), at('2076-01-01T00:00:00Z'));
    assert.equal(parseHttpDate('Saturday, 01-Jan-77 00:00:00 GMT', now), at('1977-01-01T00:00:00Z'));
  });

  it('reads nothing else, however Date.parse would take it: no instant that does not exist, no other format, no other zone', () => {
    for (const text of [
      '2090',
      '99999',
      '2090-01-01',
      '2090-01-01T00:00:00Z',
      'Fri, 31 Feb 2090 00:00:00 GMT',
      'Sun, 06 Nov 1994 24:00:00 GMT',
      'Sun, 06 Nov 1994 08:60:00 GMT',
      'Sun, 6 Nov 1994 08:49:37 GMT',
      'Sun, 06 Nov 1994 08:49:37 UTC',
      'Sun, 06 Nov 1994 08:49:37 +0000',
      'sun, 06 nov 1994 08:49:37 GMT',
      ' Sun, 06 Nov 1994 08:49:37 GMT',
      'Sun Nov 6 08:49:37 1994',
      'Thu Jan 01 2090 00:00:00 GMT+0000',
      '',
    ]) {
      assert.equal(parseHttpDate(text), undefined, JSON.stringify(text));
    }
  });

  it('ignores an If-Modified-Since that is no HTTP-date: the answer is sent whole, not 304', () => {
    const validators = { etag: '"e"', lastModified: 'Sun, 06 Nov 1994 08:49:37 GMT' };
    const get = (since: string) => clientCopyCurrent({ method: 'GET', headers: { 'if-modified-since': since } }, validators);
    assert.equal(get('Sun, 06 Nov 1994 08:49:37 GMT'), true);
    assert.equal(get('Mon, 07 Nov 1994 00:00:00 GMT'), true);
    assert.equal(get('Sat, 05 Nov 1994 00:00:00 GMT'), false);
    for (const since of ['2090', '99999', '2090-01-01', 'Fri, 31 Feb 2090 00:00:00 GMT', 'Fri Jan 01 2090 00:00:00']) assert.equal(get(since), false, since);
    // If-None-Match decides when sent, and If-Modified-Since counts only on GET and HEAD.
    assert.equal(clientCopyCurrent({ method: 'GET', headers: { 'if-none-match': '"x"', 'if-modified-since': 'Mon, 07 Nov 1994 00:00:00 GMT' } }, validators), false);
    assert.equal(clientCopyCurrent({ method: 'POST', headers: { 'if-modified-since': 'Mon, 07 Nov 1994 00:00:00 GMT' } }, validators), false);
  });
});
