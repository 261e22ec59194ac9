// Times as the CLI shows them: in local time (set by TZ), beside the UTC they are stored in.

export const LOCAL_TIME_NOTE = 'A time without a zone (2026-11-30T14:00, "yesterday 14:00") is local time;\nadd Z or +01:00 for another zone.';

/** Local wall-clock time with its offset, e.g. 2026-11-30T15:00:00+01:00 (TZ decides the zone). */
export function formatLocalTime(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  const offset = -d.getTimezoneOffset();
  const zone = `${offset < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${zone}`;
}
