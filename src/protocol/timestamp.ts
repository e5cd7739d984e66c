/**
 * Timestamps of protocol v4: ISO-8601 UTC strings exactly as `Date.prototype.toISOString()`
 * writes them for years 0000-9999 (`2025-01-31T12:00:00.000Z`).
 *
 * A fixed character layout pins the spelling; then the calendar fields are range-checked (month, day
 * of that month with leap years, hour, minute, second). That accepts exactly the strings for
 * which `new Date(Date.parse(s)).toISOString() === s`, without allocating a Date: the
 * equivalence is pinned by a property test, and parsing stays cheap on the read path.
 */

// Layout of `YYYY-MM-DDTHH:mm:ss.sssZ`: the separator expected at each position, or '' for a digit.
const LAYOUT = ['', '', '', '', '-', '', '', '-', '', '', 'T', '', '', ':', '', '', ':', '', '', '.', '', '', '', 'Z'];
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** Decimal value of the digits in `text[from, to)` (the layout check guarantees they are digits). */
function digits(text: string, from: number, to: number): number {
  let value = 0;
  for (let index = from; index < to; index++) value = value * 10 + (text.charCodeAt(index) - 48);
  return value;
}

/** True when `value` is a UTC timestamp in `toISOString()` form naming a real instant. */
export function isIsoTimestamp(value: unknown): value is string {
  if (typeof value !== 'string' || value.length !== LAYOUT.length) return false;
  for (let index = 0; index < LAYOUT.length; index++) {
    const expected = LAYOUT[index];
    if (expected === '') {
      const code = value.charCodeAt(index);
      if (code < 48 || code > 57) return false;
    } else if (value[index] !== expected) {
      return false;
    }
  }
  const year = digits(value, 0, 4);
  const month = digits(value, 5, 7);
  const day = digits(value, 8, 10);
  if (month < 1 || month > 12 || day < 1) return false;
  const monthDays = month === 2 && isLeapYear(year) ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
  return day <= monthDays && digits(value, 11, 13) < 24 && digits(value, 14, 16) < 60 && digits(value, 17, 19) < 60;
}

/** The current time as a protocol timestamp. */
export function nowIsoTimestamp(): string {
  return new Date().toISOString();
}
