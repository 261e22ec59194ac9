// A sandbox with real pi sessions for the sessions/export tests: two projects made by pi's own
// agent loop (a branched, labelled, named session with tool calls and thinking, plus a /fork of
// it), the real fixtures (v1 included), a snapshot, and then one session deleted from disk so
// that it exists only in the snapshot.

import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { initRepo, snapshot } from "../helpers/cli.js";
import { fauxText, fauxThinking, fauxToolCall, makePiSession, type PiSessionResult } from "../helpers/pi-factory.js";
import { makeSandbox, writePiConfigFiles, type Sandbox } from "../helpers/tmp.js";
import { fixturePaths } from "../pi/fixtures.js";

export interface World {
  sb: Sandbox;
  /** Branched session in project "alpha"; stays live. */
  main: PiSessionResult;
  /** Session in project "beta", deleted from disk after the snapshot. */
  gone: PiSessionResult;
  goneText: string;
  /** Fixture copies by fixture file name, live in <sessions>/--fixtures--/. */
  fixtures: Map<string, string>;
  snapshotId: string;
}

export const SECRET = "sk-proj-SECRETabcdefghijklmnop1234567890";

export async function makeWorld(label: string): Promise<World> {
  const sb = makeSandbox(label);
  writePiConfigFiles(sb.agentDir);
  const alpha = path.join(sb.root, "work", "alpha");
  mkdirSync(alpha, { recursive: true });
  writeFileSync(path.join(alpha, "notes.txt"), "alpha notes: the word zebrafish lives here\n");
  const main = await makePiSession({
    agentDir: sb.agentDir,
    cwd: alpha,
    thinkingLevel: "medium",
    turns: [
      { user: "What is in notes.txt?", assistant: [[fauxThinking("I should read the file."), fauxToolCall("read", { path: "notes.txt" })], "It mentions a zebrafish."], label: "read-done" },
      { user: "Count the files please", assistant: [[fauxText("Counting now."), fauxToolCall("bash", { command: "ls | wc -l" })], "There is one file."], name: "Alpha notes" },
      { user: "Try the other way instead", assistant: ["Alternative answer on a second branch."], branchFromTurn: 0 },
      { user: `Here is my key ${SECRET} keep it`, assistant: ["I will not repeat it."] },
    ],
    fork: { atTurn: 1, turns: [{ user: "Continue in the fork", assistant: ["Forked reply."] }] },
  });
  const beta = path.join(sb.root, "work", "beta");
  const gone = await makePiSession({
    agentDir: sb.agentDir,
    cwd: beta,
    turns: [
      { user: "Deleted session question about pelicans", assistant: [[fauxToolCall("bash", { command: "echo pelican-output" })], "Pelicans answered."] },
      { user: "Second deleted question", assistant: ["Second deleted answer."] },
    ],
  });
  const fixtures = new Map<string, string>();
  const fixtureDir = path.join(sb.sessionsDir, "--fixtures--");
  mkdirSync(fixtureDir, { recursive: true });
  for (const src of fixturePaths()) {
    const dest = path.join(fixtureDir, path.basename(src));
    copyFileSync(src, dest);
    fixtures.set(path.basename(src), dest);
  }
  await initRepo(sb);
  const snap = await snapshot(sb);
  const goneText = readFileSync(gone.file, "utf8");
  rmSync(gone.file);
  return { sb, main, gone, goneText, fixtures, snapshotId: snap.snapshotId };
}
