// Issue 17: FIFOs, sockets and device nodes in a source were dropped without a word. They cannot
// be backed up (a FIFO has no bytes, a socket is a live endpoint), and they are not failures; but
// the snapshot now lists them (snapshot JSON, a warning line each, the snapshot's `special`), and
// a filtered-out one is not mentioned. A real FIFO, a real Unix socket and a real device node.

import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, initRepo, ok } from "../helpers/cli.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.stderr || r.error}`);
}

describe("special files in a source", () => {
  let sb: Sandbox;
  let server: net.Server;

  beforeAll(async () => {
    sb = makeSandbox("special");
    writePiConfigFiles(sb.agentDir);
    const ext = path.join(sb.agentDir, "extensions", "bridge");
    mkdirSync(ext, { recursive: true });
    run("mkfifo", [path.join(ext, "events.fifo")]);
    run("mknod", [path.join(ext, "null.dev"), "c", "1", "3"]);
    server = net.createServer();
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen(path.join(ext, "control.sock"), resolve));
    // Excluded by the default filter: not worth a line.
    mkdirSync(path.join(sb.agentDir, "node_modules"), { recursive: true });
    run("mkfifo", [path.join(sb.agentDir, "node_modules", "ignored.fifo")]);
    await initRepo(sb);
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    sb?.cleanup();
  });

  it("lists each FIFO, socket and device in the JSON, warns once per path, and exits 0", async () => {
    const r = await ok(sb, ["snapshot", "--json"]);
    const j = r.json();
    expect(j.special).toEqual([
      { root: "agent", path: "extensions/bridge/control.sock", kind: "socket" },
      { root: "agent", path: "extensions/bridge/events.fifo", kind: "fifo" },
      { root: "agent", path: "extensions/bridge/null.dev", kind: "char-device" },
    ]);
    // Not failures: the snapshot is whole, not "incomplete".
    expect(j.tags).not.toContain("incomplete");
    expect(j.skipped).toEqual([]);
    for (const p of ["control.sock", "events.fifo", "null.dev"]) expect(r.stderr).toMatch(new RegExp(`not backed up: extensions/bridge/${p.replace(".", "\\.")} \\(`));
    expect(r.stderr).not.toContain("ignored.fifo");
    const list = (await ok(sb, ["snapshots", "--json"])).json();
    expect(list.at(-1).special).toHaveLength(3);
  });

  it("verify does not count them as differences", async () => {
    const v = await cli(sb, ["verify", "--json"]);
    expect(v.code, v.stderr).toBe(0);
    expect(v.json().special).toHaveLength(3);
  });
});
