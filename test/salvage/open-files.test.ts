import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { macosSteps } from "../../src/salvage/open-files.js";
import { runCli, tempEnv } from "./cli.js";
import { tempRoot } from "../helpers/tmp.js";

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.pid) process.kill(c.pid);
});

/** A child process that opens the files and holds them until killed; resolves once they are open. */
async function holdOpen(files: string[]): Promise<ChildProcess> {
  const script = `const fs = require("fs"); for (const f of process.argv.slice(1)) fs.openSync(f, "r"); process.stdout.write("ready\\n"); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ["-e", script, ...files], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return child;
}

describe.runIf(process.platform === "linux")("salvage --from-open-files", () => {
  it("copies a deleted session held open by another process out byte-identical, with pid, command, fd and size", async () => {
    const root = tempRoot("openfiles");
    const env = tempEnv(root);
    const sessions = join(env.PI_CODING_AGENT_DIR, "sessions", "--proj--");
    mkdirSync(sessions, { recursive: true });
    const session = join(sessions, "2026-11-30T04-00-00-000Z_0197-test.jsonl");
    const db = join(env.PI_CODING_AGENT_DIR, "pi-hermes-memory", "sessions.db");
    mkdirSync(join(env.PI_CODING_AGENT_DIR, "pi-hermes-memory"));
    const outside = join(root, "web-ui.log");
    const ignored = join(root, "notes.txt");
    const bytes = { session: randomBytes(3 << 20), db: randomBytes(1 << 20), outside: Buffer.from("[pi-web] started\n"), ignored: Buffer.from("x") };
    writeFileSync(session, bytes.session);
    writeFileSync(db, bytes.db);
    writeFileSync(outside, bytes.outside);
    writeFileSync(ignored, bytes.ignored);
    const holder = await holdOpen([session, db, outside, ignored]);
    for (const f of [session, db, outside, ignored]) unlinkSync(f);

    const out = join(root, "out");
    const run = await runCli(["--json", "salvage", "--from-open-files", "--match", "*.log", "--out", out], env);
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    const files = JSON.parse(run.stdout).openFiles.files as { pid: number; command: string; fd: number; path: string; size: number; copy: string }[];
    const ours = files.filter((f) => f.pid === holder.pid).sort((a, b) => a.fd - b.fd);
    expect(ours.map((f) => f.path)).toEqual([session, db, outside]);
    for (const [f, b] of [
      [ours[0], bytes.session],
      [ours[1], bytes.db],
      [ours[2], bytes.outside],
    ] as const) {
      expect(f.size).toBe(b.length);
      expect(f.command).toContain("node");
      expect(f.fd).toBeGreaterThan(2);
      expect(sha(readFileSync(f.copy))).toBe(sha(b));
    }
  });

  it("says so when nothing is held open", async () => {
    const root = tempRoot("openfiles-none");
    const run = await runCli(["salvage", "--from-open-files", "--out", join(root, "out")], tempEnv(root));
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/no deleted files held open/);
  });
});

describe("macOS steps", () => {
  it("name lsof +L1 for finding the file and an lldb session that copies it and restores the offset", () => {
    const steps = macosSteps("/Users/me/.pi/agent", ["*.log"]);
    expect(steps).toContain("lsof -nP +L1 | grep -E '/Users/me/\\.pi/agent|[^/]*\\.log'");
    expect(steps).toMatch(/lldb -p PID/);
    expect(steps).toMatch(/lseek\(FD, 0, 1\)[\s\S]*open\([\s\S]*fcopyfile\(FD, OUT, 0, 8\)[\s\S]*lseek\(FD, OFF, 0\)[\s\S]*close\(OUT\)[\s\S]*detach/);
  });
});
