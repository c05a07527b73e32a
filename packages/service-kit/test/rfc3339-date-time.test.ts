import assert from 'node:assert/strict';
import { daysInMonth, parseRfc3339DateTime } from '../src/rfc3339-date-time.ts';

/** The message parseRfc3339DateTime throws for `text`. */
function refusal(text: string): string {
  let caught: unknown;
  try {
    parseRfc3339DateTime(text);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof Error, `expected ${text} to be refused`);
  return caught.message;
}

const iso = (text: string) => new Date(parseRfc3339DateTime(text)).toISOString();

describe('parseRfc3339DateTime', () => {
  describe('reads', () => {
    it('a UTC time, with Z or z and T or t', () => {
      for (const text of ['2027-01-31T12:34:56Z', '2027-01-31t12:34:56z']) assert.equal(iso(text), '2027-01-31T12:34:56.000Z');
    });

    it('an offset, east or west, of up to 23:59, and -00:00 as UTC', () => {
      assert.equal(iso('2027-01-31T12:00:00+01:00'), '2027-01-31T11:00:00.000Z');
      assert.equal(iso('2027-01-31T12:00:00-05:30'), '2027-01-31T17:30:00.000Z');
      assert.equal(iso('2027-01-31T12:00:00+23:59'), '2027-01-30T12:01:00.000Z');
      assert.equal(iso('2027-01-31T12:00:00-00:00'), '2027-01-31T12:00:00.000Z');
    });

    it('an offset that moves the instant over a month or year end (the local fields are what must be valid)', () => {
      assert.equal(iso('2027-01-01T00:30:00+01:00'), '2026-12-31T23:30:00.000Z');
      assert.equal(iso('2028-02-29T23:00:00-02:00'), '2028-03-01T01:00:00.000Z');
    });

    it('the last day of every month, and Feb 29 in leap years (2024, 2000) only', () => {
      for (const [month, last] of [[1, 31], [3, 31], [4, 30], [5, 31], [6, 30], [7, 31], [8, 31], [9, 30], [10, 31], [11, 30], [12, 31]] as const) {
        const text = `2026-${String(month).padStart(2, '0')}-${last}T00:00:00Z`;
        assert.equal(iso(text), text.replace('Z', '.000Z'));
      }
      assert.equal(iso('2026-02-28T23:59:59Z'), '2026-02-28T23:59:59.000Z');
      assert.equal(iso('2024-02-29T00:00:00Z'), '2024-02-29T00:00:00.000Z');
      assert.equal(iso('2000-02-29T00:00:00Z'), '2000-02-29T00:00:00.000Z');
    });

    it('fractions of a second, keeping milliseconds and dropping what is finer (earlier, never later)', () => {
      assert.equal(iso('2027-01-31T00:00:00.5Z'), '2027-01-31T00:00:00.500Z');
      assert.equal(iso('2027-01-31T00:00:00.123Z'), '2027-01-31T00:00:00.123Z');
      assert.equal(iso('2027-01-31T00:00:00.999999999Z'), '2027-01-31T00:00:00.999Z');
    });

    it('years 0000-0099 as such, not as 1900-1999', () => {
      assert.equal(iso('0099-12-31T00:00:00Z'), '0099-12-31T00:00:00.000Z');
      assert.equal(iso('0000-02-29T00:00:00Z'), '0000-02-29T00:00:00.000Z');
    });

    it('the same instants as Date.parse wherever Date.parse does not roll over', () => {
      for (const text of ['2026-03-29T01:59:59Z', '1999-12-31T23:59:59.999+14:00', '2038-01-19T03:14:08-12:00']) {
        assert.equal(parseRfc3339DateTime(text), Date.parse(text), text);
      }
    });
  });

  describe('refuses, saying which field is wrong', () => {
    it('a day the month does not have, which Date.parse would roll into the next month', () => {
      assert.equal(refusal('2026-02-30T00:00:00Z'), 'day 30 is not a day of 2026-02 (01-28)');
      assert.equal(refusal('2026-02-29T00:00:00Z'), 'day 29 is not a day of 2026-02 (01-28)');
      assert.equal(refusal('1900-02-29T00:00:00Z'), 'day 29 is not a day of 1900-02 (01-28)');
      assert.equal(refusal('2024-02-30T00:00:00Z'), 'day 30 is not a day of 2024-02 (01-29)');
      for (const month of ['04', '06', '09', '11']) assert.equal(refusal(`2026-${month}-31T00:00:00Z`), `day 31 is not a day of 2026-${month} (01-30)`);
      assert.equal(refusal('2026-01-32T00:00:00Z'), 'day 32 is not a day of 2026-01 (01-31)');
      assert.equal(refusal('2026-01-00T00:00:00Z'), 'day 00 is not a day of 2026-01 (01-31)');
    });

    it('a month outside 01-12', () => {
      assert.equal(refusal('2026-13-01T00:00:00Z'), 'month 13 is not 01-12');
      assert.equal(refusal('2026-00-01T00:00:00Z'), 'month 00 is not 01-12');
    });

    it('hour 24, which Date.parse reads as midnight of the next day, and minutes or seconds past 59', () => {
      assert.equal(refusal('2026-01-01T24:00:00Z'), 'hour 24 is not 00-23');
      assert.equal(refusal('2026-01-01T99:00:00Z'), 'hour 99 is not 00-23');
      assert.equal(refusal('2026-01-01T23:60:00Z'), 'minute 60 is not 00-59');
      assert.equal(refusal('2026-01-01T23:59:61Z'), 'second 61 is not 00-59');
    });

    it('a leap second, even at the end of June or December', () => {
      for (const text of ['2016-12-31T23:59:60Z', '2015-06-30T23:59:60Z', '2026-01-01T12:00:60Z']) {
        assert.equal(refusal(text), 'second 60 (a leap second) is not accepted; write :59 or the next minute');
      }
    });

    it('an offset hour past 23 or an offset minute past 59', () => {
      assert.equal(refusal('2026-01-01T00:00:00+24:00'), 'offset hour 24 is not 00-23');
      assert.equal(refusal('2026-01-01T00:00:00-00:60'), 'offset minute 60 is not 00-59');
    });

    it('anything that is not the RFC 3339 date-time syntax', () => {
      for (const text of [
        '2026-01-01',
        '2026-01-01T00:00:00',
        '2026-01-01 00:00:00Z',
        '2026-1-01T00:00:00Z',
        '26-01-01T00:00:00Z',
        '+002026-01-01T00:00:00Z',
        '2026-01-01T00:00Z',
        '2026-01-01T00:00:00.Z',
        '2026-01-01T00:00:00+0100',
        '2026-01-01T00:00:00+01',
        '2026-01-01T00:00:00UTC',
        ' 2026-01-01T00:00:00Z',
        '2026-01-01T00:00:00Z\n',
        '２０２６-01-01T00:00:00Z',
        '',
      ]) {
        assert.equal(refusal(text), 'not of the form YYYY-MM-DDThh:mm:ss[.fraction](Z|+hh:mm|-hh:mm)', JSON.stringify(text));
      }
    });
  });
});

describe('daysInMonth', () => {
  it('follows the Gregorian leap rule: every 4th year, not every 100th, but every 400th', () => {
    assert.deepEqual([2023, 2024, 1900, 2000, 2100, 2400].map((y) => daysInMonth(y, 2)), [28, 29, 28, 29, 28, 29]);
    assert.deepEqual(
      Array.from({ length: 12 }, (_, i) => daysInMonth(2026, i + 1)),
      [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31],
    );
  });
});
