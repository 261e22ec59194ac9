// The built `pi-guard watch` with a mirror: its first snapshot is shipped at once, later ones at
// most once per watch.remoteBatchMs (here a minute, so none in between), and SIGTERM ships the
// newest before the watcher exits.
import { appendFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readdirSync } from "node:fs";
import { cli, ok } from "../helpers/cli.js";
import { readLog, stopWatch, waitFor, waitReady, watchEnv, watchScene } from "../watch/watch-helpers.js";
import { writeConfig } from "./mirror-helpers.js";

const scene = watchScene();

describe("watch ships to mirrors", () => {
  it("ships the first snapshot, batches the next ones, and flushes the newest on SIGTERM", { timeout: 60_000 }, async () => {
    const sb = await scene.setup("mirror-watch");
    const mirror = path.join(sb.root, "mirror");
    writeConfig(sb, { mirrors: [mirror], watch: { remoteBatchMs: 60_000, debounceMs: 50 } });
    const w = scene.watch(sb);
    await waitReady(sb, w, 1);
    const shipped = await waitFor("the first shipment", () => readLog(sb).find((e) => e.event === "mirror"));
    expect(shipped).toMatchObject({ mirror, copied: 1 });
    const env = watchEnv(sb);
    const ids = async (repo: string) => (await ok(env, ["snapshots", "--json", "--repo", repo])).json<{ id: string }[]>().map((s) => s.id);
    for (let i = 0; i < 2; i++) {
      appendFileSync(path.join(sb.sessionsDir, "--proj--", "s0.jsonl"), `{"type":"custom","id":"c000000${i}","parentId":null,"timestamp":"2026-01-01T00:00:0${i}.000Z"}\n`);
      await waitReady(sb, w, 2 + i);
    }
    // Within the batch interval: the mirror still has only the first snapshot.
    expect(readLog(sb).filter((e) => e.event === "mirror")).toHaveLength(1);
    expect(await ids(mirror)).toHaveLength(1);
    const { code } = await stopWatch(w);
    expect(code).toBe(0);
    const primary = await ids(sb.repo);
    expect(primary.length).toBeGreaterThanOrEqual(3);
    const onMirror = await ids(mirror);
    expect(onMirror).toContain(primary.at(-1));
    expect(readLog(sb).filter((e) => e.event === "mirror")).toHaveLength(2);
    expect((await ok(env, ["check", "--read-data", "--json", "--repo", mirror])).json().ok).toBe(true);
    // status counts the requests the watcher sent to the mirror: each object there took a PUT.
    const objects = readdirSync(mirror, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).length;
    const status = (await cli(env, ["status", "--json"])).json<{ watcher: { mirrorRequests?: { mirror: string; puts: number; putsPerDay: number | null; why?: string }[] } }>();
    const counted = status.watcher.mirrorRequests?.find((m) => m.mirror === mirror);
    expect(counted?.puts).toBeGreaterThanOrEqual(objects);
    // A folder costs nothing per request: no PUTs per day for it.
    expect(counted).toMatchObject({ putsPerDay: null, why: "local storage: requests cost nothing" });
  });
});
