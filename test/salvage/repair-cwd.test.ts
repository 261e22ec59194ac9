// `repair FILE` when the header line is lost and no --cwd is given: the project dir must not
// silently become "". pi names a session's folder after its cwd (--<cwd with / turned into ->--),
// lossy because a "-" in the path reads the same; the folders that exist on this machine decide
// between the readings, and the report says where the cwd came from. A file outside such a
// folder is refused until --cwd names the project.

import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { fauxText, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { runCli, tempEnv } from "./cli.js";
import { tempRoot } from "../helpers/tmp.js";

let root: string;
let env: Record<string, string>;
let made: PiSessionResult;
/** The project dir: its path has dashes of its own ("my-app", and the temp folder's name). */
let project: string;
let original: string;

/** The session with its header line torn to a fragment that holds no cwd. */
function headerless(file: string): string {
  const lines = original.split("\n");
  lines[0] = lines[0].slice(0, 12);
  writeFileSync(file, lines.join("\n"));
  return file;
}

beforeAll(async () => {
  root = tempRoot("repair-cwd");
  env = tempEnv(root);
  project = join(root, "code", "my-app");
  made = await makePiSession({ agentDir: join(root, "agent"), cwd: project, turns: [{ user: "hello there", assistant: [fauxText("hi back")] }] });
  original = readFileSync(made.file, "utf8");
});

const cwdOf = (file: string) => (JSON.parse(readFileSync(file, "utf8").split("\n")[0]) as { cwd: string }).cwd;

describe("repair of a file whose header is lost", () => {
  it("in pi's folder for its project: the cwd comes from the folder name, resolved against the disk, and the report says so", async () => {
    const file = headerless(join(dirname(made.file), basename(made.file).replace(/^[^_]+/, "2000-01-01T00-00-00-000Z")));
    const run = await runCli(["--json", "repair", file], env);
    expect(run.exitCode, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as { output: string; actions: string[] };
    expect(cwdOf(out.output)).toBe(project);
    expect(out.actions.join("\n")).toMatch(new RegExp(`project dir ${project.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} .*folder name`));
    expect(out.actions.join("\n")).toMatch(/lossy|--cwd/);
    const pi = validateWithPi(readFileSync(out.output, "utf8"), { expectMessages: true });
    expect(pi.header.cwd).toBe(project);
  });

  it("outside such a folder and without --cwd: refused (exit 2), nothing written; with --cwd it is repaired", async () => {
    const dir = mkdtempSync(join(root, "loose-"));
    const file = headerless(join(dir, basename(made.file)));
    const run = await runCli(["repair", file], env);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(/^pi-guard: .*--cwd/);
    expect(run.stderr.split("\n")).toHaveLength(1);
    expect(run.stdout).toBe("");
    const other = join(root, "elsewhere");
    mkdirSync(other, { recursive: true });
    const fixed = await runCli(["--json", "repair", file, "--cwd", other], env);
    expect(fixed.exitCode, fixed.stderr).toBe(0);
    const out = JSON.parse(fixed.stdout) as { output: string };
    expect(cwdOf(out.output)).toBe(other);
    validateWithPi(readFileSync(out.output, "utf8"), { expectMessages: true });
  });

  it("a folder name that matches no folder on this machine is read with every - as / and reported as a guess", async () => {
    const dir = join(root, "agent", "sessions", "--srv-gone-proj--");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, basename(made.file));
    headerless(file);
    const run = await runCli(["--json", "repair", file], env);
    expect(run.exitCode, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as { output: string; actions: string[] };
    expect(cwdOf(out.output)).toBe("/srv/gone/proj");
    expect(out.actions.join("\n")).toMatch(/not on this machine|does not exist/);
  });
});
