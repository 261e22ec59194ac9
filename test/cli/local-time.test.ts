// writeLocalTime (src/present/time.ts) writes the bytes formatLocalTime makes, for `snapshots
// --json`'s 100,000 local times without a string each: checked against formatLocalTime itself in
// zones with half-hour, quarter-hour and half-hour-DST offsets, across DST changes, and at the
// edges that take formatLocalTime's own path (years outside 1000-9999, invalid dates, local mean
// time offsets of a fraction of a minute).

import { afterAll, describe, expect, it } from "vitest";
import { formatLocalTime, LOCAL_TIME_ROOM, writeLocalTime } from "../../src/present/time.js";

const savedTz = process.env.TZ;
afterAll(() => {
  if (savedTz === undefined) delete process.env.TZ;
  else process.env.TZ = savedTz;
});

const ZONES = ["UTC", "Asia/Kolkata", "America/St_Johns", "Asia/Kathmandu", "Australia/Lord_Howe", "Europe/Amsterdam", "Pacific/Chatham", "America/Los_Angeles"];

function times(): number[] {
  const out = [NaN, Date.UTC(999, 11, 31, 23, 59, 59), Date.UTC(1000, 0, 1), Date.UTC(1800, 5, 1), Date.UTC(1900, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59), Date.UTC(10000, 0, 1), -1, 0];
  // Every 7 h 13 min 17.123 s over three years: both DST changes of every zone above, and all digits.
  for (let t = Date.UTC(2025, 0, 1); t < Date.UTC(2028, 0, 1); t += 26_000_000 + 397_123) out.push(t);
  // Around the 2026 changes in Europe and on Lord Howe Island, minute by minute.
  for (const at of [Date.UTC(2026, 2, 29, 1), Date.UTC(2026, 3, 4, 15), Date.UTC(2026, 9, 3, 15)]) for (let m = -90; m <= 90; m++) out.push(at + m * 60_000);
  return out;
}

describe("writeLocalTime", () => {
  it("writes exactly what formatLocalTime makes", () => {
    const buf = Buffer.alloc(LOCAL_TIME_ROOM + 8, 0xff);
    let checked = 0;
    for (const zone of ZONES) {
      process.env.TZ = zone;
      for (const t of times()) {
        const d = new Date(t);
        const end = writeLocalTime(d, buf, 3);
        expect(buf.toString("latin1", 3, end)).toBe(formatLocalTime(d));
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(8 * 4000);
  });
});
