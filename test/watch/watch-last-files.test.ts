// Issue 20: the watcher keeps its last snapshot's file nodes in memory (LastFiles) and reuses them
// as the next snapshot's parent. Other processes write beside it: a snapshot of another process (with
// this machine's data dir or another), a forget and prune, a kill -9 in the middle of a handed-off
// snapshot. After each, the snapshots `pi-guard snapshot` gets from the watcher must hold the live
// bytes, and check --read-data must pass.
import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cli, collect, ok, spawnCli } from "../helpers/cli.js";
import { restoredBytes, stopWatch, waitFor, waitReady, watchEnv, watchScene } from "./watch-helpers.js";
import type { Sandbox } from "../helpers/tmp.js";

const { setup, watch } = watchScene();

/**
 * A scene and a ready watcher that snapshots only when `pi-guard snapshot` hands it the work:
 * --debounce alone is not enough, a change is still taken watch.maxDelayMs (1 s) after it, and on a
 * busy machine that fell between another process's snapshot and the next handed-off one (whose
 * parent it then was).
 */
async function handOffOnly(label: string): Promise<{ sb: Sandbox; w: ReturnType<typeof watch> }> {
  const sb = await setup(label);
  mkdirSync(path.join(sb.configHome, "pi-guard"), { recursive: true });
  writeFileSync(path.join(sb.configHome, "pi-guard", "config.json"), JSON.stringify({ watch: { debounceMs: 600_000, maxDelayMs: 3_600_000 } }));
  const w = watch(sb);
  await waitReady(sb, w);
  return { sb, w };
}

interface Taken {
  snapshotId: string;
  parent: string | null;
  via: string;
  handOff?: string;
}

const REL = path.join("sessions", "--proj--", "s1.jsonl");
const session = (sb: Sandbox) => path.join(sb.agentDir, REL);
const append = (sb: Sandbox, tag: string) => appendFileSync(session(sb), `{"type":"message","id":"${tag}","text":"${"y".repeat(3000)}"}\n`);

async function handedOff(sb: Sandbox): Promise<Taken> {
  const taken = (await ok(watchEnv(sb), ["snapshot", "--json"])).json<Taken>();
  expect(taken.via, JSON.stringify(taken)).toBe("watcher");
  return taken;
}

async function holdsLive(sb: Sandbox, id: string, rels: string[] = [REL]): Promise<void> {
  for (const rel of rels) expect((await restoredBytes(sb, id, rel)).equals(readFileSync(path.join(sb.agentDir, rel))), `${rel} in ${id.slice(0, 8)}`).toBe(true);
}

async function checkPasses(sb: Sandbox): Promise<void> {
  const check = await cli(watchEnv(sb), ["check", "--read-data", "--json"]);
  expect(check.code, check.stderr).toBe(0);
}

describe("the watcher's remembered parent beside other writers", () => {
  it("a snapshot by another process: the next handed-off snapshot takes it as parent when this machine recorded it, and holds the live bytes either way", async () => {
    const { sb, w } = await handOffOnly("last-other");
    append(sb, "w1");
    const first = await handedOff(sb);

    // Another process with this machine's data dir (a tagged snapshot is never handed off).
    append(sb, "o1");
    const other = (await ok(watchEnv(sb), ["snapshot", "--json", "--tag", "other"])).json<Taken>();
    expect(other.via).toBe("direct");
    append(sb, "w2");
    const second = await handedOff(sb);
    expect(second.parent).toBe(other.snapshotId);
    expect(second.parent).not.toBe(first.snapshotId);
    await holdsLive(sb, second.snapshotId);

    // Another process with a data dir of its own: this machine's record does not know its snapshot.
    append(sb, "o2");
    const elsewhere = (await ok({ ...watchEnv(sb), XDG_DATA_HOME: sb.dir("other-data") }, ["snapshot", "--json", "--tag", "elsewhere"])).json<Taken>();
    expect(elsewhere.via).toBe("direct");
    append(sb, "w3");
    const third = await handedOff(sb);
    await holdsLive(sb, third.snapshotId);
    expect((await stopWatch(w)).code).toBe(0);
    await checkPasses(sb);
  }, 120_000);

  it("a forget and prune by another process, of old data and then of the remembered snapshot itself: the handed-off snapshots hold the live bytes and check --read-data passes", async () => {
    const { sb, w } = await handOffOnly("last-prune");
    const blob = path.join(sb.agentDir, "notes.bin");
    writeFileSync(blob, randomBytes(3 * 1024 * 1024));
    await handedOff(sb);
    // Its first bytes are now only in the snapshot above: prune deletes or repacks their packs.
    writeFileSync(blob, randomBytes(3 * 1024 * 1024));
    append(sb, "p1");
    const kept = await handedOff(sb);
    await ok(watchEnv(sb), ["forget", "--keep-last", "1", "--prune", "--max-unused", "0%", "--json"]);

    // New bytes only the next snapshot holds: pruned with it below.
    writeFileSync(blob, randomBytes(3 * 1024 * 1024));
    append(sb, "p2");
    const afterPrune = await handedOff(sb);
    expect(afterPrune.parent).toBe(kept.snapshotId);
    await holdsLive(sb, afterPrune.snapshotId, [REL, "notes.bin"]);

    // The snapshot the watcher remembers is forgotten and its own data pruned: the next one has another
    // parent, and notes.bin, unchanged since, is read again rather than named by blobs that are gone.
    await ok(watchEnv(sb), ["forget", afterPrune.snapshotId, "--prune", "--max-unused", "0%", "--json"]);
    append(sb, "p3");
    const afterForget = await handedOff(sb);
    expect(afterForget.parent).not.toBe(afterPrune.snapshotId);
    await holdsLive(sb, afterForget.snapshotId, [REL, "notes.bin"]);
    expect((await stopWatch(w)).code).toBe(0);
    await checkPasses(sb);
  }, 180_000);

  it("kill -9 of the watcher in the middle of a handed-off snapshot: the CLI takes it itself, and the repository checks clean", async () => {
    const { sb, w } = await handOffOnly("last-kill9");
    append(sb, "k1");
    await handedOff(sb);
    // A big new file: the next snapshot holds the repository lock long enough to be killed in it.
    const big = path.join(sb.agentDir, "big.bin");
    writeFileSync(big, randomBytes(96 * 1024 * 1024));
    append(sb, "k2");
    const running = collect(spawnCli(watchEnv(sb), ["snapshot", "--json"]));
    const locks = path.join(sb.repo, "locks");
    await waitFor("the handed-off snapshot to hold the repository lock", () => existsSync(locks) && readdirSync(locks).length > 0, 20_000, 5);
    await new Promise((r) => setTimeout(r, 150));
    w.child.kill("SIGKILL");
    await w.exited;
    const r = await running;
    expect(r.code, r.stderr).toBe(0);
    const taken = r.json<Taken>();
    expect(taken.via, "the kill came after the watcher's snapshot finished").toBe("direct");
    expect(taken.handOff).toMatch(/watcher/);
    await holdsLive(sb, taken.snapshotId, [REL, "big.bin"]);
    await checkPasses(sb);
  }, 180_000);
});
