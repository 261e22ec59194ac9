import { execa } from "execa";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { sessionDirName } from "../../src/agents/pi/writer.js";
import { fauxText, fauxToolCall, makePiSession } from "../helpers/pi-factory.js";
import { validateWithPi } from "../helpers/pi-validate.js";
import { runCli, tempEnv } from "./cli.js";
import { tempRoot } from "../helpers/tmp.js";

const PI_CLI = join(process.cwd(), "node_modules/@mariozechner/pi-coding-agent/dist/cli.js");

let root: string;
let env: Record<string, string>;
let original: string[];
let html: string;
let cwd: string;

/** Run the real `pi --export` on a copy, with a temp agent dir: pi's loader may rewrite its input. */
export async function piExport(sessionFile: string, dir: string, agentDir: string): Promise<string> {
  const copy = join(dir, basename(sessionFile));
  copyFileSync(sessionFile, copy);
  const out = join(dir, "export.html");
  await execa("node", [PI_CLI, "--export", copy, out], { env: { PI_CODING_AGENT_DIR: agentDir, HOME: dir }, extendEnv: true });
  return out;
}

beforeAll(async () => {
  root = tempRoot("html");
  env = tempEnv(root);
  cwd = join(root, "proj");
  const made = await makePiSession({
    agentDir: join(root, "maker"),
    cwd,
    turns: [
      { user: "list files", assistant: [[fauxText("looking"), fauxToolCall("bash", { command: "echo a; echo b" })], "two files"] },
      { user: "write a note", assistant: [[fauxToolCall("write", { path: "note.md", content: "# note\nünïcödé ✓\n" })], "written"], label: "wrote" },
      { user: "branch instead", assistant: ["a different answer"], branchFromTurn: 0, name: "salvage test" },
    ],
  });
  original = readFileSync(made.file, "utf8").trimEnd().split("\n");
  html = await piExport(made.file, mkdtempSync(join(root, "export-")), join(root, "pi-export-agent"));
});

describe("salvage --from-html", () => {
  it("recovers every entry of a real pi export byte-for-byte, and pi loads the result", async () => {
    const out = join(root, "out");
    const run = await runCli(["--json", "salvage", "--from-html", html, "--out", out], env);
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    const report = JSON.parse(run.stdout);
    const file = report.sessions[0].file as string;
    expect(basename(file)).toBe(basename(readdirSync(out).map((n) => join(out, n))[0]));
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    // header + every original entry, then one provenance entry
    expect(lines[0]).toBe(original[0]);
    const recovered = lines.slice(1, -1);
    const same = original.slice(1).filter((l, i) => recovered[i] === l).length;
    const recall = same / (original.length - 1);
    console.log(`html recall: ${same}/${original.length - 1} entries byte-equal (${(recall * 100).toFixed(1)}%)`);
    expect(recovered).toEqual(original.slice(1));
    const provenance = JSON.parse(lines[lines.length - 1]);
    expect(provenance).toMatchObject({ type: "custom", customType: "pi-guard/salvage", data: { sources: [{ kind: "html", path: html }] } });

    const pi = validateWithPi(lines.join("\n") + "\n", { expectMessages: true });
    const originalPi = validateWithPi(original.join("\n") + "\n");
    expect(pi.context.messages).toEqual(originalPi.context.messages);
    expect(report.sessions[0].messages).toMatchObject({ user: 3, assistant: 5, toolResult: 2 });
  });

  it("--install puts the session where pi looks for it, and never over an existing one", async () => {
    const run = await runCli(["salvage", "--from-html", html, "--install"], env);
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    const dir = join(env.PI_CODING_AGENT_DIR, "sessions", sessionDirName(cwd));
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_.+\.jsonl$/);
    expect(run.stdout).toContain(join(dir, files[0]));
    const before = readFileSync(join(dir, files[0]));
    const again = await runCli(["salvage", "--from-html", html, "--install"], env);
    expect(again.exitCode).not.toBe(0);
    expect(again.stderr.trim()).toMatch(/^pi-guard: .* already holds session .*; nothing was written$/);
    expect(readFileSync(join(dir, files[0]))).toEqual(before);
  });

  it("writes to <data dir>/salvage by default", async () => {
    const run = await runCli(["--json", "salvage", "--from-html", html], env);
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout).sessions[0].file.startsWith(join(env.XDG_DATA_HOME, "pi-guard", "salvage"))).toBe(true);
  });

  it("refuses HTML that is not a pi export with one line and writes nothing", async () => {
    const page = join(root, "page.html");
    writeFileSync(page, "<html><body><script>var x = 1;</script></body></html>");
    const out = join(root, "not-out");
    const run = await runCli(["salvage", "--from-html", page, "--out", out], env);
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toBe(`pi-guard: ${page} is not a pi HTML export: no <script id="session-data"> element`);
    expect(() => readdirSync(out)).toThrow();
  });
});
