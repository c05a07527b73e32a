/** RFC 3339 section 5.6 `date-time`: full-date "T" full-time, with "t" and "z" accepted as the RFC's note allows. */
const DATE_TIME =
  /^(?<year>\d{4})-(?<month>\d{2})-(?<day>\d{2})[Tt](?<hour>\d{2}):(?<minute>\d{2}):(?<second>\d{2})(?:\.(?<fraction>\d+))?(?:[Zz]|(?<sign>[+-])(?<offsetHour>\d{2}):(?<offsetMinute>\d{2}))$/;

const isLeapYear = (year: number): boolean => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

/** Days of `month` (1-12) in `year` of the proleptic Gregorian calendar, as RFC 3339 section 5.7 counts them. */
export function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/**
 * Reads an RFC 3339 date-time as epoch milliseconds, strictly: every calendar field must be in its range
 * (month 01-12, a day that the month has in that year, hour 00-23, minute 00-59, second 00-59, offset
 * hours 00-23 and minutes 00-59), so a value never rolls over into another instant the way `Date.parse`
 * rolls `02-30` into March and `T24:00` into the next day. Throws an Error saying which field is wrong.
 *
 * A leap second (`:60`) is refused: RFC 3339 allows it only at the instants the IERS announces, which
 * this code cannot know, and ECMAScript time has no leap seconds to put it on; a time a second earlier
 * or later says the same for every use here. Digits of the fraction past milliseconds are dropped, which
 * moves the instant earlier, never later.
 */
export function parseRfc3339DateTime(text: string): number {
  const g = DATE_TIME.exec(text)?.groups;
  if (g === undefined) throw new Error('not of the form YYYY-MM-DDThh:mm:ss[.fraction](Z|+hh:mm|-hh:mm)');
  const [year, month, day, hour, minute, second] = [g.year, g.month, g.day, g.hour, g.minute, g.second].map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12) throw new Error(`month ${pad(month)} is not 01-12`);
  const lastDay = daysInMonth(year, month);
  if (day < 1 || day > lastDay) throw new Error(`day ${pad(day)} is not a day of ${pad(year, 4)}-${pad(month)} (01-${lastDay})`);
  if (hour > 23) throw new Error(`hour ${pad(hour)} is not 00-23`);
  if (minute > 59) throw new Error(`minute ${pad(minute)} is not 00-59`);
  if (second === 60) throw new Error('second 60 (a leap second) is not accepted; write :59 or the next minute');
  if (second > 59) throw new Error(`second ${pad(second)} is not 00-59`);
  let offsetMs = 0;
  if (g.sign !== undefined) {
    const oh = Number(g.offsetHour);
    const om = Number(g.offsetMinute);
    if (oh > 23) throw new Error(`offset hour ${pad(oh)} is not 00-23`);
    if (om > 59) throw new Error(`offset minute ${pad(om)} is not 00-59`);
    offsetMs = (g.sign === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  const ms = g.fraction === undefined ? 0 : Number(g.fraction.slice(0, 3).padEnd(3, '0'));
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0-99 as 1900-1999.
  const at = new Date(0);
  at.setUTCFullYear(year, month - 1, day);
  at.setUTCHours(hour, minute, second, ms);
  return at.getTime() - offsetMs;
}
