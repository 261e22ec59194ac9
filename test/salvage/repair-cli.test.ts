import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseSessionText } from "../../src/agents/pi/parse.js";
import { fauxText, fauxToolCall, makePiSession } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { runCli, tempEnv } from "./cli.js";
import { tempRoot } from "../helpers/tmp.js";

let root: string;
let env: Record<string, string>;
let lines: string[];
let ids: string[];
let sessionName: string;

const sha = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

/** A damaged copy of the real session: line 6 torn and pi's next entry glued onto it, plus a torn tail. */
function damaged(dir: string): string {
  const broken = [...lines.slice(0, 5), lines[5].slice(0, 50) + lines[6], ...lines.slice(7)];
  const file = join(dir, sessionName);
  writeFileSync(file, `${broken.join("\n")}\n${lines[3].slice(0, 30)}`);
  return file;
}

beforeAll(async () => {
  root = tempRoot("repair-cli");
  env = tempEnv(root);
  const made = await makePiSession({
    agentDir: join(root, "agent"),
    cwd: join(root, "proj"),
    turns: [
      { user: "run it", assistant: [[fauxText("running"), fauxToolCall("bash", { command: "echo repaired" })], "done"] },
      { user: "again", assistant: ["second"] },
    ],
  });
  const text = readFileSync(made.file, "utf8");
  lines = text.trimEnd().split("\n");
  ids = parseSessionText(text).entries.map((e) => e.id as string);
  sessionName = basename(made.file);
});

describe("pi-guard repair", () => {
  it("writes FILE.repaired.jsonl beside a damaged file and leaves the original byte-identical", async () => {
    const dir = mkdtempSync(join(root, "copy-"));
    const file = damaged(dir);
    const before = sha(file);
    const run = await runCli(["--json", "repair", file], env);
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out.output).toBe(file.replace(/\.jsonl$/, ".repaired.jsonl"));
    expect(out.recoveredEntries).toBe(1);
    expect(out.actions.join(" ")).toMatch(/glued/);
    expect(sha(file)).toBe(before);
    const kept = ids.filter((_, i) => i !== 4);
    expect(validateWithPi(readFileSync(out.output, "utf8")).entries.map((e) => e.id)).toEqual(kept);

    // A second run never overwrites the first repaired copy.
    const again = JSON.parse((await runCli(["--json", "repair", file], env)).stdout);
    expect(again.output).toBe(file.replace(/\.jsonl$/, ".repaired-2.jsonl"));
  });

  it("--in-place keeps a backup of the original bytes and swaps the repaired file in", async () => {
    const dir = mkdtempSync(join(root, "inplace-"));
    const file = damaged(dir);
    const original = readFileSync(file);
    const mode = statSync(file).mode;
    const run = await runCli(["repair", file, "--in-place"], env);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/backup/);
    const backups = readdirSync(dir).filter((n) => n.endsWith(".bak"));
    expect(backups).toHaveLength(1);
    expect(readFileSync(join(dir, backups[0]))).toEqual(original);
    expect(statSync(file).mode).toBe(mode);
    validateWithPi(readFileSync(file, "utf8"));
    // No temp files left behind.
    expect(readdirSync(dir).filter((n) => n.endsWith(".tmp"))).toEqual([]);
  });

  it("reports a sound file as such and writes nothing", async () => {
    const dir = mkdtempSync(join(root, "sound-"));
    const file = join(dir, sessionName);
    writeFileSync(file, `${lines.join("\n")}\n`);
    const run = await runCli(["repair", file], env);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/no damage found/);
    expect(readdirSync(dir)).toEqual([sessionName]);
  });

  it("--out writes exactly there and refuses to overwrite", async () => {
    const dir = mkdtempSync(join(root, "out-"));
    const file = damaged(dir);
    const target = join(dir, "fixed.jsonl");
    expect((await runCli(["repair", file, "--out", target], env)).exitCode).toBe(0);
    expect(existsSync(target)).toBe(true);
    const second = await runCli(["repair", file, "--out", target], env);
    expect(second.exitCode).not.toBe(0);
    expect(second.stderr.trim()).toMatch(/^pi-guard: .*fixed.jsonl already exists; pick another --out$/);
    expect(dirname(target)).toBe(dir);
  });
});
