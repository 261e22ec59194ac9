// Which host's snapshots restore chooses among (docs/TARGETS.md, "A new machine, and several hosts").
import os from "node:os";
import { describe, expect, it } from "vitest";
import { hostName } from "../../src/host.js";
import { selectSnapshot, snapshotsOfHost } from "../../src/restore/select.js";

const snap = (id: string, host: string, time: string) => ({ id: id.padEnd(64, "0"), snapshot: { time, host, tags: [] as string[] } });
const all = [snap("aa01", "alpha", "2026-11-01T10:00:00Z"), snap("bb01", "beta", "2026-11-01T11:00:00Z"), snap("aa02", "alpha", "2026-11-01T09:00:00Z"), snap("bb02", "beta", "2026-11-01T12:00:00Z")]
  .sort((x, y) => x.snapshot.time.localeCompare(y.snapshot.time));

describe("snapshotsOfHost", () => {
  it("--host keeps that host's; latest is then that host's newest", () => {
    expect(selectSnapshot(snapshotsOfHost(all, "latest", "alpha", "gamma"), "latest").id.slice(0, 4)).toBe("aa01");
    expect(selectSnapshot(snapshotsOfHost(all, "2026-11-01T11:30:00Z", "beta", "alpha"), "2026-11-01T11:30:00Z").id.slice(0, 4)).toBe("bb01");
  });

  it("without --host: this host's when it has any, else a refusal listing the hosts", () => {
    expect(snapshotsOfHost(all, "latest", undefined, "alpha").map((s) => s.snapshot.host)).toEqual(["alpha", "alpha"]);
    expect(() => snapshotsOfHost(all, "latest", undefined, "gamma")).toThrow(/several hosts and none of this one \(gamma\): choose one with --host: alpha \(2\), beta \(2\)/);
    const one = all.filter((s) => s.snapshot.host === "beta");
    expect(snapshotsOfHost(one, "latest", undefined, "gamma")).toBe(one);
    expect(snapshotsOfHost([], "latest", undefined, "gamma")).toEqual([]);
  });

  it("an id is taken whatever its host, but must agree with --host", () => {
    expect(snapshotsOfHost(all, "bb01", undefined, "alpha")).toBe(all);
    expect(selectSnapshot(snapshotsOfHost(all, "bb01", undefined, "alpha"), "bb01").snapshot.host).toBe("beta");
    expect(() => snapshotsOfHost(all, "bb01", "alpha", "alpha")).toThrow(/snapshot bb010000 is from host beta, not alpha/);
    expect(() => snapshotsOfHost(all, "latest", "gamma", "alpha")).toThrow(/no snapshot is from host "gamma"; hosts here: alpha \(2\), beta \(2\)/);
  });

  it("PI_GUARD_HOST names this host; a multi-line or padded one is a usage error", () => {
    expect(hostName({})).toBe(os.hostname());
    expect(hostName({ PI_GUARD_HOST: "laptop" })).toBe("laptop");
    expect(() => hostName({ PI_GUARD_HOST: "a\nb" })).toThrow(/PI_GUARD_HOST must be one line/);
    expect(() => hostName({ PI_GUARD_HOST: " laptop" })).toThrow(/PI_GUARD_HOST/);
  });
});
