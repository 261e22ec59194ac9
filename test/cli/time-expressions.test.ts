// Time expressions: a phrase counts only when all of it is understood, the future is refused, a
// time without a zone is local, and the moment a phrase was read as is shown in UTC and local time.

import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotRecord } from "../../src/repo/repository.js";
import { formatLocalTime } from "../../src/present/time.js";
import { parseTime, selectSnapshot, selectSnapshotAt } from "../../src/restore/select.js";
import { cli, expectOneLineError, initRepo, ok, restoreJson, snapshot, type SnapshotJson } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

describe("which phrases are times", () => {
  const rec = (id: string, time: string): SnapshotRecord => ({ id, snapshot: { time, tags: [] } as unknown as SnapshotRecord["snapshot"] });
  // Monday 2026-11-30, 15:00 UTC; snapshots every few hours since the Friday before last.
  const now = new Date("2026-11-30T15:00:00Z");
  const snaps = [rec("aaaa1111", "2026-11-20T10:00:00Z"), rec("aaab2222", "2026-11-29T00:00:00Z"), rec("bbbb3333", "2026-11-30T12:00:00Z")];
  const local = (y: number, mo: number, d: number, h = 0, mi = 0, sec = 0) => new Date(y, mo - 1, d, h, mi, sec);
  const yesterdayAt = (h: number) => new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1, h);

  const accepted: [string, Date | string][] = [
    ["2h ago", new Date("2026-11-30T13:00:00Z")],
    ["2 hours ago", new Date("2026-11-30T13:00:00Z")],
    ["  2h ago  ", new Date("2026-11-30T13:00:00Z")],
    ["yesterday 14:00", yesterdayAt(14)],
    ["yesterday at 2pm", yesterdayAt(14)],
    ["2026-11-30T14:00Z", new Date("2026-11-30T14:00:00Z")],
    ["2026-11-30T14:00:00+01:00", new Date("2026-11-30T13:00:00Z")],
    // Without a zone: local time (the day before, so that it is past in every zone).
    ["2026-11-29 09:30", local(2026, 11, 29, 9, 30)],
    ["2026-11-29T09:30:15", local(2026, 11, 29, 9, 30, 15)],
  ];
  for (const [phrase, expected] of accepted) {
    it(`reads ${JSON.stringify(phrase)} as one moment`, () => {
      expect(parseTime(phrase, now)?.toISOString()).toBe(new Date(expected).toISOString());
      expect(() => selectSnapshot(snaps, phrase, now)).not.toThrow();
    });
  }

  it('reads "last monday" as a day of the week before', () => {
    const t = parseTime("last monday", now);
    expect(t?.getDay()).toBe(1);
    expect(t!.getTime()).toBeLessThan(now.getTime());
    expect(now.getTime() - t!.getTime()).toBeLessThan(8 * 86_400_000);
  });

  it("takes latest and id prefixes without reading them as times", () => {
    expect(selectSnapshotAt(snaps, "latest", now)).toEqual({ record: snaps[2], warnings: [] });
    expect(selectSnapshotAt(snaps, "aaab", now)).toEqual({ record: snaps[1], warnings: [] });
    expect(selectSnapshotAt(snaps, "2h ago", now).resolved?.utc).toBe("2026-11-30T13:00:00.000Z");
  });

  const refused: [string, RegExp][] = [
    ["the day after never", /cannot read/],
    ["2h agoo", /cannot read/],
    ["banana", /cannot read/],
    ["14:00 and something", /cannot read/],
    ["2pm to 3pm", /cannot read/],
    ["2026-02-30T10:00", /cannot read/],
    ["2026-11-30T25:00", /cannot read/],
    ["tomorrow", /in the future/],
    ["in 2 hours", /in the future/],
    ["2026-12-01T00:00Z", /in the future/],
  ];
  for (const [phrase, why] of refused) {
    it(`refuses ${JSON.stringify(phrase)}`, () => {
      expect(() => selectSnapshot(snaps, phrase, now)).toThrow(why);
    });
  }

  it("a bare date is the end of that day, or now when it is today", () => {
    const day = (offset: number) => formatLocalTime(new Date(now.getFullYear(), now.getMonth(), now.getDate() + offset, 12)).slice(0, 10);
    expect(selectSnapshotAt(snaps, day(-1), now).resolved?.utc).toBe(new Date(`${day(-1)}T23:59:59.999`).toISOString());
    expect(selectSnapshotAt(snaps, day(0), now).resolved?.utc).toBe(now.toISOString());
    expect(() => selectSnapshot(snaps, day(1), now)).toThrow(/in the future/);
  });
});

describe("restore and snapshots show times in UTC and local time", () => {
  let sb: Sandbox;
  let s1: SnapshotJson;
  // A zone with a half-hour offset, so that local time cannot pass for UTC by accident.
  const env = { TZ: "Asia/Kolkata" };

  beforeAll(async () => {
    sb = makeSandbox("time");
    writePiConfigFiles(sb.agentDir);
    await initRepo(sb);
    s1 = await snapshot(sb);
  });

  afterAll(() => sb?.cleanup());

  it("refuses a phrase it only partly understands and a time in the future, with one line and exit 2", async () => {
    for (const when of ["the day after never", "2h agoo", "14:00 and something"]) {
      expect(expectOneLineError(await cli(sb, ["restore", when, "--dry-run"], { env }), 2)).toContain(`cannot read "${when}" as a time`);
    }
    for (const when of ["tomorrow", "in 2 hours"]) {
      const line = expectOneLineError(await cli(sb, ["restore", when, "--target", path.join(sb.root, "future")], { env }), 2);
      expect(line).toMatch(/in the future \(\S+Z UTC, \S+\+05:30 local\)/);
    }
  });

  it("a time without a zone is local time, and the JSON says what it was read as", async () => {
    // The snapshot's moment as a Kolkata wall clock (UTC+05:30), rounded up to the next second.
    const at = new Date(Math.ceil(Date.parse(s1.time) / 1000) * 1000);
    const wall = new Date(at.getTime() + 5.5 * 3600_000).toISOString().slice(0, 19);
    const r = await restoreJson(sb, [wall, "--target", path.join(sb.root, "wall")], { env });
    expect(r.snapshotId).toBe(s1.snapshotId);
    expect((r as unknown as { resolved: unknown }).resolved).toEqual({ input: wall, utc: at.toISOString(), local: `${wall}+05:30` });
    const latest = await restoreJson(sb, ["latest", "--target", path.join(sb.root, "latest")], { env });
    expect((latest as unknown as { resolved: unknown }).resolved).toBeNull();
  });

  it("restore's human output gives the moment in UTC and local time", async () => {
    const r = await ok(sb, ["restore", "0 seconds ago", "--dry-run"], { env });
    expect(r.stdout).toMatch(/"0 seconds ago" = \S+Z UTC = \S+\+05:30 local/);
  });

  it("snapshots shows local time beside UTC; --json adds localTime", async () => {
    const local = new Date(Date.parse(s1.time) + 5.5 * 3600_000).toISOString().slice(0, 19);
    const human = await ok(sb, ["snapshots"], { env });
    expect(human.stdout).toMatch(/TIME \(UTC\)\s+LOCAL TIME/);
    expect(human.stdout).toContain(`${local.replace("T", " ")}+05:30`);
    const [row] = (await ok(sb, ["snapshots", "--json"], { env })).json<{ time: string; localTime: string }[]>();
    expect(row.time).toBe(s1.time);
    expect(row.localTime).toBe(`${local}+05:30`);
  });

  it("--help says that a time without a zone is local", async () => {
    for (const cmd of ["restore", "archive", "snapshots"]) {
      expect((await ok(sb, [cmd, "--help"])).stdout).toMatch(/without a zone[^.]*is local/);
    }
  });

  it("formatLocalTime follows the process's zone", () => {
    const d = new Date("2026-11-30T12:00:00Z");
    const offset = -d.getTimezoneOffset() || 0;
    const text = formatLocalTime(d);
    expect(new Date(text).getTime()).toBe(d.getTime());
    const [, sign, h, m] = /([+-])(\d{2}):(\d{2})$/.exec(text)!;
    expect((sign === "-" ? -1 : 1) * (Number(h) * 60 + Number(m))).toBe(offset);
  });
});
