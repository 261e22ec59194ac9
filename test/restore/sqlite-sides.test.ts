// A restore deletes the -wal, -shm and -journal beside each file it writes when the snapshot does
// not hold them (restorer.ts, dropStaleSqliteSides): found by one listing per folder, in sub-
// folders too, for a file replaced or created; a name that only starts like a side file, a folder
// with a side file's name, and a side file the snapshot holds all stay.
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { planRestore, restoreSnapshot } from "../../src/restore/restorer.js";
import { initRepo } from "../helpers/cli.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";
import { openEngine } from "../snapshot/engine.js";

let sb: Sandbox | undefined;
afterEach(() => {
  sb?.cleanup();
  sb = undefined;
});

describe("stale SQLite side files", () => {
  it("are deleted beside the files a restore writes, and nothing else is", async () => {
    sb = makeSandbox("sqlite-sides");
    await initRepo(sb);
    const at = (rel: string) => path.join(sb!.agentDir, rel);
    mkdirSync(at("sub/deep"), { recursive: true });
    writeFileSync(at("sub/deep/app.db"), "app db v1\n");
    writeFileSync(at("top.db"), "top db\n");
    writeFileSync(at("kept.db"), "kept db\n");
    writeFileSync(at("kept.db-wal"), "a wal the snapshot holds\n");
    writeFileSync(at("same.db"), "unchanged\n");
    const engine = await openEngine(sb);
    const snap = await engine.snap();
    const record = { id: snap.id, snapshot: snap.snapshot };

    writeFileSync(at("sub/deep/app.db"), "app db v2, replaced by the restore\n");
    writeFileSync(at("sub/deep/app.db-wal"), "stale wal\n");
    writeFileSync(at("sub/deep/app.db-shm"), "stale shm\n");
    writeFileSync(at("sub/deep/app.db-walrus"), "not a side file\n");
    mkdirSync(at("sub/deep/other.db-wal"));
    rmSync(at("top.db"));
    writeFileSync(at("top.db-journal"), "stale journal of a db that is gone\n");
    writeFileSync(at("kept.db-wal"), "changed wal\n");
    writeFileSync(at("same.db-wal"), "beside a file the restore leaves alone\n");

    const plan = await planRestore(engine.repo, record, { destinations: { agent: sb.agentDir }, dryRun: true });
    const deletes = plan.items.filter((i) => i.type === "delete").map((i) => i.rel);
    expect(deletes.sort()).toEqual(["sub/deep/app.db-shm", "sub/deep/app.db-wal", "top.db-journal"]);

    const report = await restoreSnapshot(engine.repo, record, { destinations: { agent: sb.agentDir } });
    expect(report.failed).toEqual([]);
    expect(["-wal", "-shm"].filter((s) => existsSync(at(`sub/deep/app.db${s}`)))).toEqual([]);
    expect(existsSync(at("top.db-journal"))).toBe(false);
    expect(readFileSync(at("top.db"), "utf8")).toBe("top db\n");
    expect(readFileSync(at("sub/deep/app.db-walrus"), "utf8")).toBe("not a side file\n");
    expect(statSync(at("sub/deep/other.db-wal")).isDirectory()).toBe(true);
    expect(readFileSync(at("kept.db-wal"), "utf8")).toBe("a wal the snapshot holds\n");
    expect(readFileSync(at("same.db-wal"), "utf8")).toBe("beside a file the restore leaves alone\n");
  });

  it("into an empty target folder there is nothing to delete", async () => {
    sb = makeSandbox("sqlite-sides-target");
    await initRepo(sb);
    mkdirSync(path.join(sb.agentDir, "sub"), { recursive: true });
    writeFileSync(path.join(sb.agentDir, "sub", "app.db"), "db\n");
    const engine = await openEngine(sb);
    const snap = await engine.snap();
    const target = sb.dir("target");
    const plan = await planRestore(engine.repo, { id: snap.id, snapshot: snap.snapshot }, { destinations: { agent: target }, dryRun: true });
    expect(plan.items.filter((i) => i.type === "delete")).toEqual([]);
    expect(plan.items.filter((i) => i.type === "file").map((i) => i.action)).toEqual(["create"]);
  });
});
