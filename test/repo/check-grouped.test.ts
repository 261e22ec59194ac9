// `check --read-data` on one damaged pack that 5 session files in 16 snapshots depend on: one
// line for the pack (what is wrong, how much it affects, a few file names), not one line per file
// and snapshot, and then the next step: `pi-guard repair --from <mirror>` when a mirror is
// configured, the general `repair --from A --to B` otherwise. --json keeps every detail.

import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, initRepo, snapshot } from "../helpers/cli.js";
import { bigText, makePiSession } from "../helpers/pi-factory.js";
import { listFiles, makeSandbox, type Sandbox } from "../helpers/tmp.js";

let sb: Sandbox;
let mirror: string;
let pack: string;
const SNAPSHOTS = 16;
const FILES = 5;

function writeConfig(config: unknown): void {
  mkdirSync(path.join(sb.configHome, "pi-guard"), { recursive: true });
  writeFileSync(path.join(sb.configHome, "pi-guard", "config.json"), JSON.stringify(config));
}

beforeAll(async () => {
  sb = makeSandbox("check-grouped");
  mirror = path.join(sb.root, "mirror");
  writeConfig({ mirrors: [mirror] });
  for (let i = 0; i < FILES; i++) {
    await makePiSession({
      agentDir: sb.agentDir,
      cwd: path.join(sb.root, "work", `project${i}`),
      captureEvents: false,
      turns: [{ user: `Write chapter ${i}`, assistant: [bigText(200_000, `chapter ${i} of the heron saga, `)] }],
    });
  }
  await initRepo(sb);
  await snapshot(sb);
  const packsBefore = new Set<string>();
  const biggest = listFiles(path.join(sb.repo, "data")).sort((a, b) => statSync(b).size - statSync(a).size)[0];
  packsBefore.add(biggest);
  pack = biggest;
  // Fifteen more snapshots that each change only a small file: every one still holds the 5 sessions.
  for (let i = 1; i < SNAPSHOTS; i++) {
    writeFileSync(path.join(sb.agentDir, "settings.json"), JSON.stringify({ round: i }));
    await snapshot(sb);
  }
  // Damage the sessions' data: a flipped byte in each fifth of the pack.
  const data = readFileSync(pack);
  for (let k = 0; k < FILES; k++) data[Math.floor(((k + 0.5) / FILES) * data.length * 0.9)] ^= 0x40;
  writeFileSync(pack, data);
}, 300_000);

afterAll(() => sb?.cleanup());

const short = () => path.basename(pack).slice(0, 12);

describe("check --read-data groups the damage of one pack", () => {
  it("--json keeps every damaged file of every snapshot", async () => {
    const r = await cli(sb, ["--json", "check", "--read-data"]);
    expect(r.code, r.stderr).toBe(3);
    const report = r.json<{ damagedFiles: { snapshot: string; path: string }[]; problems: { message: string }[] }>();
    expect(report.damagedFiles.length).toBeGreaterThanOrEqual(SNAPSHOTS);
    expect(new Set(report.damagedFiles.map((f) => f.snapshot)).size).toBe(SNAPSHOTS);
    expect(report.problems.length).toBeGreaterThan(report.damagedFiles.length);
  });

  it("prints one line for the pack, with counts and a few file names, then `repair --from <mirror>`", async () => {
    const r = await cli(sb, ["check", "--read-data"]);
    expect(r.code, r.stderr).toBe(3);
    const out = `${r.stderr}${r.stdout}`;
    const lines = out.split("\n").filter((l) => l.trim());
    expect(lines.length, out).toBeLessThanOrEqual(4);
    const about = lines.filter((l) => l.includes(short()));
    expect(about, out).toHaveLength(1);
    expect(about[0]).toMatch(/damaged/);
    expect(about[0]).toMatch(new RegExp(`in ${SNAPSHOTS} snapshots`));
    expect(about[0]).toMatch(/sessions\/--/);
    expect(out).toContain(`pi-guard repair --from ${mirror} --to ${sb.repo}`);
  });

  it("without a mirror it names the general repair", async () => {
    writeConfig({});
    try {
      const r = await cli(sb, ["check", "--read-data"]);
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr + r.stdout).toMatch(/pi-guard repair --from <[^>]+> --to /);
    } finally {
      writeConfig({ mirrors: [mirror] });
    }
  });
});
