// Programs the tests run that are not dependencies of this project: installed by
// scripts/install-test-tools.sh (which .ci/run calls) into a cache folder outside the repository.
// A missing one fails the test that needs it, naming the script; nothing here skips.
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PROJECT_ROOT } from "./root.js";

export const TOOLS_DIR = process.env.PI_GUARD_TEST_TOOLS ?? path.join(os.homedir(), ".cache", "pi-guard-test-tools");

/** The oldest Node package.json's engines admit, as "20.19.0". */
export function floorVersion(): string {
  const range: string = JSON.parse(readFileSync(path.join(PROJECT_ROOT, "package.json"), "utf8")).engines.node;
  const m = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range.trim());
  if (!m) throw new Error(`package.json engines.node is "${range}": expected ">=X.Y[.Z]"`);
  return `${m[1]}.${m[2] ?? 0}.${m[3] ?? 0}`;
}

function tool(rel: string, what: string): string {
  const file = path.join(TOOLS_DIR, rel);
  if (!existsSync(file)) throw new Error(`${what} is missing (${file}): run scripts/install-test-tools.sh`);
  return file;
}

/** That Node's binary. */
export const floorNode = (): string => tool(path.join(`node-${floorVersion()}`, "node_modules", ".bin", "node"), `Node ${floorVersion()}`);

/** The Node pi 1.x runs on (it needs >= 22.19; never the Node the tests run on). */
export const PI1_NODE_VERSION = "22.23.3";
export const PI1_VERSION = "1.6.0";
export const pi1Node = (): string => tool(path.join(`node-${PI1_NODE_VERSION}`, "node_modules", ".bin", "node"), `Node ${PI1_NODE_VERSION}`);

/** The folder pi 1.6.0 is installed in (its node_modules hold @earendil-works/pi-coding-agent and pi-ai). */
export function pi1Dir(): string {
  tool(path.join(`pi-${PI1_VERSION}`, "node_modules", "@earendil-works", "pi-coding-agent", "package.json"), `pi ${PI1_VERSION}`);
  return path.join(TOOLS_DIR, `pi-${PI1_VERSION}`);
}

// opencode and Gemini CLI (issue 19): real agent CLIs driven offline against test/helpers/fake-model.
export const OPENCODE_VERSION = "1.18.33";
export const GEMINI_CLI_VERSION = "0.61.0";

/** opencode's native binary (the npm wrapper's optional dependency; run directly, no wrapper). */
export const opencodeBin = (): string =>
  tool(path.join(`agent-opencode-${OPENCODE_VERSION}`, "node_modules", "opencode-linux-x64", "bin", "opencode"), `opencode ${OPENCODE_VERSION}`);

/** Gemini CLI's bundled entry point: plain JS, run with the Node the tests run on. */
export const geminiCliJs = (): string =>
  tool(path.join(`agent-gemini-${GEMINI_CLI_VERSION}`, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js"), `Gemini CLI ${GEMINI_CLI_VERSION}`);

// Claude Code and Codex CLI (issue 19): real agent CLIs driven offline against test/helpers/fake-model.
export const CLAUDE_CODE_VERSION = "2.1.328";
export const CODEX_VERSION = "0.169.0";

/** Claude Code's native binary (the optional dependency the npm wrapper links; run directly). */
export const claudeBin = (): string =>
  tool(path.join(`agent-claude-${CLAUDE_CODE_VERSION}`, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude"), `Claude Code ${CLAUDE_CODE_VERSION}`);

/** Codex CLI's musl-static binary (the optional dependency; run directly, without the Node wrapper). */
export const codexBin = (): string =>
  tool(path.join(`agent-codex-${CODEX_VERSION}`, "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex"), `Codex CLI ${CODEX_VERSION}`);
