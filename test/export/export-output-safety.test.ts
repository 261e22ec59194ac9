// Issue 17 item 17: `export -o FILE` never writes into the agent dir (nor into any other source
// root, symlinks resolved: a live session could be overwritten with Markdown) and never replaces an
// existing file unless --force. The file is still written to a temp name and renamed, so a failed
// or refused export leaves no partial file.
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, expectOneLineError, ok } from "../helpers/cli.js";
import { fauxText, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { makeSandbox, type Sandbox, writePiConfigFiles } from "../helpers/tmp.js";

describe("export -o: where it may write", () => {
  let sb: Sandbox;
  let session: PiSessionResult;
  let bytes: Buffer;
  /** A sessions dir moved out of the agent dir (PI_CODING_AGENT_SESSION_DIR): a source root of its own. */
  let moved: string;
  let movedSession: PiSessionResult;
  let env: Record<string, string>;

  beforeAll(async () => {
    sb = makeSandbox("export-out");
    writePiConfigFiles(sb.agentDir);
    session = await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("project"), turns: [{ user: "keep me", assistant: [fauxText("kept")] }] });
    bytes = readFileSync(session.file);
    moved = sb.dir("moved-sessions");
    env = { PI_CODING_AGENT_SESSION_DIR: moved };
    const made = await makePiSession({ agentDir: sb.agentDir, cwd: sb.dir("project-moved"), turns: [{ user: "moved", assistant: [fauxText("here")] }] });
    // pi wrote it under the agent dir; move it where the setting says sessions live now.
    const dest = path.join(moved, path.basename(made.file));
    writeFileSync(dest, readFileSync(made.file));
    movedSession = { ...made, file: dest };
  }, 120_000);

  afterAll(() => sb?.cleanup());

  it("refuses to overwrite a live session with its own export; the session is untouched", async () => {
    const line = expectOneLineError(await cli(sb, ["export", session.sessionId, "--format", "markdown", "-o", session.file]), 2);
    expect(line).toMatch(/inside the agent dir/);
    expect(readFileSync(session.file).equals(bytes)).toBe(true);
    // --force allows replacing a file of one's own, never one in the agent dir.
    expect(expectOneLineError(await cli(sb, ["export", session.sessionId, "--format", "markdown", "-o", session.file, "--force"]), 2)).toMatch(/inside the agent dir/);
    expect(readFileSync(session.file).equals(bytes)).toBe(true);
  });

  it("refuses a new file in the agent dir, also through a symlinked folder", async () => {
    expectOneLineError(await cli(sb, ["export", session.sessionId, "-o", path.join(sb.agentDir, "notes.md")]), 2);
    expect(existsSync(path.join(sb.agentDir, "notes.md"))).toBe(false);
    const link = path.join(sb.root, "looks-harmless");
    symlinkSync(sb.agentDir, link);
    expect(expectOneLineError(await cli(sb, ["export", session.sessionId, "-o", path.join(link, "sessions", "x.md")]), 2)).toMatch(/inside the agent dir/);
    expect(existsSync(path.join(sb.agentDir, "sessions", "x.md"))).toBe(false);
  });

  it("refuses a file in a sessions dir moved out of the agent dir", async () => {
    const target = path.join(moved, "export.md");
    const line = expectOneLineError(await cli(sb, ["export", movedSession.sessionId, "-o", target], { env }), 2);
    expect(line).toContain(moved);
    expect(readdirSync(moved)).toEqual([path.basename(movedSession.file)]);
  });

  it("refuses an existing file unless --force, and leaves it as it was", async () => {
    const dir = sb.dir("exports");
    const out = path.join(dir, "session.md");
    writeFileSync(out, "my notes, not an export\n");
    const line = expectOneLineError(await cli(sb, ["export", session.sessionId, "-o", out]), 1);
    expect(line).toMatch(/exists.*--force/);
    expect(readFileSync(out, "utf8")).toBe("my notes, not an export\n");
    expect(readdirSync(dir)).toEqual(["session.md"]);

    await ok(sb, ["export", session.sessionId, "-o", out, "--force"]);
    expect(readFileSync(out, "utf8")).toContain("keep me");
    expect(readdirSync(dir)).toEqual(["session.md"]);
  });

  it("writes a new file outside the agent dir as before", async () => {
    const out = path.join(sb.dir("fresh"), "s.json");
    const r = (await ok(sb, ["--json", "export", session.sessionId, "-o", out])).json<{ output: string; bytes: number }>();
    expect(r.bytes).toBe(readFileSync(out).length);
    mkdirSync(path.join(sb.root, "fresh", "sub"));
    expect(readdirSync(path.join(sb.root, "fresh")).sort()).toEqual(["s.json", "sub"]);
  });
});
