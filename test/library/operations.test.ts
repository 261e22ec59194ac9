// What the CLI does beyond snapshot, restore and find, a TypeScript program does through the
// library too (docs/LIBRARY.md): tag and trash a session, stats, forget and prune, check, verify,
// status, the keys, copy to a mirror. A program importing pi-guard by its package name (node_modules/pi-guard links
// to this checkout) runs them on a sandbox with a real pi session, and the real CLI sees each
// result: the same repository, tags, trash and snapshots.
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collect, ok } from "../helpers/cli.js";
import { fauxText, makePiSession } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";
import { makePackageApp } from "./package-app.js";

let sb: Sandbox;
let app: string;
let sessionId: string;
let sessionFile: string;

/** Run `body` (an async function body given `guard`) in a program of its own; its JSON result. */
async function withGuard<T>(body: string): Promise<T> {
  const file = path.join(app, `run-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, `import { openRepository } from "pi-guard";\nconst guard = await openRepository();\ntry {\n  const out = await (async () => {\n${body}\n  })();\n  process.stdout.write(JSON.stringify(out));\n} finally {\n  await guard.close();\n}\n`);
  const r = await collect(spawn(process.execPath, [file], { cwd: app, env: sb.env, stdio: ["ignore", "pipe", "pipe"] }));
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

beforeAll(async () => {
  sb = makeSandbox("lib-ops");
  writePiConfigFiles(sb.agentDir);
  const made = await makePiSession({ agentDir: sb.agentDir, cwd: path.join(sb.root, "project"), turns: [{ user: "name the release", assistant: [fauxText("call it aurora")] }] });
  sessionId = made.sessionId;
  sessionFile = made.file;
  await ok(sb, ["init"]);
  app = makePackageApp(sb);
}, 120_000);

afterAll(() => sb?.cleanup());

describe("the library's operations", () => {
  it("tags and untags a session as `sessions tag` does", { timeout: 60_000 }, async () => {
    const tags = await withGuard<string[][]>(`const s = await guard.session(${JSON.stringify(sessionId)});\n    return [await s.tag("release", "keep"), await s.untag("keep")];`);
    expect(tags).toEqual([["keep", "release"], ["release"]]);
    const listed = (await ok(sb, ["sessions", "list", "--tag", "release", "--json"])).json<{ id: string; tags: string[] }[]>();
    expect(listed.map((s) => [s.id, s.tags])).toEqual([[sessionId, ["release"]]]);
  });

  it("counts usage as `stats --json` does", { timeout: 60_000 }, async () => {
    const stats = await withGuard<{ totals: { sessions: number; turns: number } }>(`return await guard.stats();`);
    const cli = (await ok(sb, ["stats", "--json"])).json<{ totals: { sessions: number; turns: number } }>();
    expect(stats.totals.sessions).toBe(1);
    expect(stats.totals).toEqual(cli.totals);
  });

  it("forgets by a policy, refusing to empty a group, and prunes what no snapshot uses", { timeout: 120_000 }, async () => {
    await ok(sb, ["snapshot"]);
    await ok(sb, ["snapshot", "--tag", "second"]);
    const r = await withGuard<{ refused: { refused: boolean; removed: number }; dry: { remove: unknown[]; removed: number }; forgot: { removed: number; keep: { id: string }[] }; pruned: { dryRun: boolean; snapshots: number } }>(`
    const refused = await guard.forget({ policy: { keepTags: ["no-such-tag"] } });
    const dry = await guard.forget({ policy: { keepLast: 1 }, dryRun: true });
    const forgot = await guard.forget({ policy: { keepLast: 1 } });
    const pruned = await guard.prune();
    return { refused, dry, forgot, pruned };`);
    expect(r.refused).toMatchObject({ refused: true, removed: 0 });
    expect(r.dry).toMatchObject({ removed: 0 });
    expect(r.dry.remove).toHaveLength(1);
    expect(r.forgot.removed).toBe(1);
    expect(r.pruned).toMatchObject({ dryRun: false, snapshots: 1 });
    const left = (await ok(sb, ["snapshots", "--json"])).json<{ id: string; tags: string[] }[]>();
    expect(left.map((s) => s.id)).toEqual(r.forgot.keep.map((k) => k.id));
    expect(left[0].tags).toEqual(["second"]);
  });

  it("checks the repository, verifies the agent dir, reports status and manages the keys", { timeout: 120_000 }, async () => {
    const keyFile = path.join(sb.root, "second.key");
    const r = await withGuard<{ check: { ok: boolean }; verify: { identical: boolean; exit: number }; status: { healthy: boolean; lastGoodSnapshot: { id: string } | null }; keys: { id: string; current: boolean }[]; added: { id: string; kind: string } }>(`
    const added = await guard.addKey({ keyFile: ${JSON.stringify(keyFile)} });
    return { check: await guard.check({ readData: true }), verify: await guard.verify(), status: await guard.status(), keys: await guard.keys(), added };`);
    expect(r.check.ok).toBe(true);
    expect(r.verify).toMatchObject({ identical: true, exit: 0 });
    const newest = (await ok(sb, ["snapshots", "--json"])).json<{ id: string }[]>().at(-1)!;
    expect(r.status.lastGoodSnapshot?.id).toBe(newest.id);
    expect(r.added.kind).toBe("keyfile");
    expect(r.keys.filter((k) => !k.current).map((k) => k.id)).toEqual([r.added.id]);
    // The new key file opens the repository, as the CLI's --key-file.
    const listed = (await ok(sb, ["key", "list", "--json", "--key-file", keyFile])).json<{ id: string; current: boolean }[]>();
    expect(listed.find((k) => k.current)?.id).toBe(r.added.id);
  });

  it("copies the snapshots to a mirror, as `copy --to` does", { timeout: 120_000 }, async () => {
    const mirror = path.join(sb.root, "mirror");
    const r = await withGuard<{ exit: number; shipments: { mirror: string; error?: string; report?: { copied: string[] } }[] }>(`return await guard.copy({ to: ${JSON.stringify(mirror)} });`);
    expect(r.exit).toBe(0);
    expect(r.shipments.map((s) => [s.mirror, s.error])).toEqual([[mirror, undefined]]);
    const primary = (await ok(sb, ["snapshots", "--json"])).json<{ id: string }[]>().map((s) => s.id);
    const copied = (await ok(sb, ["snapshots", "--json", "--repo", mirror])).json<{ id: string }[]>().map((s) => s.id);
    expect(copied).toEqual(primary);
    expect(r.shipments[0].report?.copied).toHaveLength(primary.length);
  });

  it("moves a session into the trash after a snapshot, as `sessions delete` does", { timeout: 120_000 }, async () => {
    const r = await withGuard<{ from: string; to: string; snapshotId: string; restoreCommand: string }>(`return await (await guard.session(${JSON.stringify(sessionId)})).trash();`);
    expect(r.from).toBe(sessionFile);
    expect(existsSync(sessionFile)).toBe(false);
    expect(existsSync(r.to)).toBe(true);
    expect(r.restoreCommand).toContain(r.snapshotId.slice(0, 8));
    const deleted = (await ok(sb, ["sessions", "list", "--deleted", "--json"])).json<{ id: string }[]>();
    expect(deleted.map((s) => s.id)).toEqual([sessionId]);
  });
});
