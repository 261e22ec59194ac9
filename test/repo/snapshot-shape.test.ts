// A snapshot object that decrypts but whose fields have the wrong types (another writer's bug, an
// old version) is unreadable, named by id, and never crashes a reader: snapshots, forget, restore,
// status and check all go on with the readable ones. Real repository, real CLI.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { snapshotKey } from "../../src/repo/format.js";
import { snapshotShapeError } from "../../src/repo/repository.js";
import { cli, initRepo, ok, snapshot } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { openRepo } from "./prune-fixture.js";

const sandboxes: Sandbox[] = [];
afterEach(() => {
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

describe("snapshot objects of the wrong shape", () => {
  it("names each wrong field", () => {
    const good = { version: 1, time: "2026-12-01T10:00:00.000Z", host: "h", user: "u", tags: [], roots: [{ name: "agent", path: "/a" }], tree: ["ab"], program: "pi-guard", summary: {} };
    expect(snapshotShapeError(good)).toBeUndefined();
    expect(snapshotShapeError({ ...good, agents: { agent: "pi" }, parent: "x", skipped: [] })).toBeUndefined();
    const cases: [Record<string, unknown>, string][] = [
      [{ ...good, time: 5 }, "time"],
      [{ ...good, time: "yesterday" }, "time"],
      [{ ...good, tags: "x" }, "tags"],
      [{ ...good, tags: [1] }, "tags"],
      [{ ...good, host: null }, "host"],
      [{ ...good, roots: [{ name: "agent" }] }, "roots"],
      [{ ...good, tree: "ab" }, "tree"],
      [{ ...good, summary: [] }, "summary"],
      [{ ...good, parent: 7 }, "parent"],
      [{ ...good, agents: ["pi"] }, "agents"],
      [{ ...good, skipped: {} }, "skipped"],
      [{ ...good, version: "1" }, "version"],
    ];
    for (const [s, field] of cases) expect(snapshotShapeError(s)).toMatch(new RegExp(`^${field}[.:]`));
    for (const s of [null, [], "x", 3]) expect(snapshotShapeError(s)).toMatch(/^snapshot: expected an object, got /);
  });

  it("the CLI lists, forgets, restores and checks around one, naming it", async () => {
    const sb = makeSandbox("shape");
    sandboxes.push(sb);
    await initRepo(sb);
    const file = path.join(sb.sessionsDir, "--p--", "s.jsonl");
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, '{"type":"session","version":3,"id":"a","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/p"}\n');
    const first = await snapshot(sb, ["--quiet"]);
    writeFileSync(file, '{"type":"session","version":3,"id":"a","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/p"}\n{"type":"x"}\n');
    const second = await snapshot(sb, ["--quiet"]);
    const repo = await openRepo(sb);
    const good = await repo.loadSnapshot(second.snapshotId);
    // Sealed with the repository's own key: authentic, only its time is no time.
    const bad = await repo.saveSnapshot({ ...good, time: 5 as unknown as string, tags: ["odd"] });

    const list = await ok(sb, ["snapshots", "--json"]);
    const ids = (JSON.parse(list.stdout) as { id: string }[]).map((s) => s.id);
    expect(ids).toEqual(expect.arrayContaining([first.snapshotId, second.snapshotId]));
    expect(ids).not.toContain(bad);
    expect(list.stderr).toContain(bad.slice(0, 8));
    expect(list.stderr).toContain("is malformed: time: expected a string, got number");

    // forget by policy: no crash, the readable ones judged, the bad one named and left alone.
    const f = await cli(sb, ["forget", "--keep-last", "1", "--json"]);
    expect(f.stderr).not.toMatch(/TypeError|at .*\.js:\d+/);
    expect(f.stdout + f.stderr).toContain(bad.slice(0, 8));
    // forget by id is the way to get rid of it.
    await ok(sb, ["forget", bad]);
    expect(existsSync(path.join(sb.repo, snapshotKey(bad)))).toBe(false);

    const target = path.join(sb.root, "out");
    await ok(sb, ["restore", "latest", "--target", target]);
    const st = await cli(sb, ["status", "--json"]);
    expect(st.stderr).not.toMatch(/TypeError/);
    const chk = await cli(sb, ["check"]);
    expect(chk.stderr).not.toMatch(/TypeError/);
  }, 120_000);
});
