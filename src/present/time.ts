// Times as the CLI shows them: in local time (set by TZ), beside the UTC they are stored in.

export const LOCAL_TIME_NOTE = 'A time without a zone (2026-11-30T14:00, "yesterday 14:00") is local time;\nadd Z or +01:00 for another zone.';

/** Local wall-clock time with its offset, e.g. 2026-11-30T15:00:00+01:00 (TZ decides the zone). */
export function formatLocalTime(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  const offset = -d.getTimezoneOffset();
  const zone = `${offset < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${zone}`;
}

const ZERO = 0x30;
/** Room writeLocalTime needs in the buffer: more than any local time formatLocalTime makes. */
export const LOCAL_TIME_ROOM = 64;

/**
 * formatLocalTime(d) written into `out` at `at` (which has LOCAL_TIME_ROOM bytes free); returns
 * where it ends. The same bytes without a string per call: `snapshots --json` writes 100,000 of
 * them, and their garbage was a tenth of a second. Years outside 1000-9999, invalid dates and
 * offsets of a fraction of a minute (local mean time before 1900) take formatLocalTime itself.
 */
export function writeLocalTime(d: Date, out: Buffer, at: number): number {
  const year = d.getFullYear();
  const offset = -d.getTimezoneOffset();
  if (!(year >= 1000 && year <= 9999) || !Number.isInteger(offset)) return at + out.write(formatLocalTime(d), at, "latin1");
  twoDigits(out, Math.floor(year / 100), at);
  twoDigits(out, year % 100, at + 2);
  out[at + 4] = 0x2d; // -
  twoDigits(out, d.getMonth() + 1, at + 5);
  out[at + 7] = 0x2d;
  twoDigits(out, d.getDate(), at + 8);
  out[at + 10] = 0x54; // T
  twoDigits(out, d.getHours(), at + 11);
  out[at + 13] = 0x3a; // :
  twoDigits(out, d.getMinutes(), at + 14);
  out[at + 16] = 0x3a;
  twoDigits(out, d.getSeconds(), at + 17);
  const abs = Math.abs(offset);
  if (abs >= 6000) return at + out.write(formatLocalTime(d), at, "latin1");
  out[at + 19] = offset < 0 ? 0x2d : 0x2b; // - or +
  twoDigits(out, Math.floor(abs / 60), at + 20);
  out[at + 22] = 0x3a;
  twoDigits(out, abs % 60, at + 23);
  return at + 25;
}

function twoDigits(out: Buffer, n: number, at: number): void {
  out[at] = ZERO + Math.floor(n / 10);
  out[at + 1] = ZERO + (n % 10);
}
