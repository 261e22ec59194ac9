// Where each agent keeps its data, without its adapter: the config locates every agent on each
// command, and a `pi-guard snapshot` handed to a watcher needs nothing else of them, so loading
// every adapter's readers (about 65 KB of code) there was start-up time spent for nothing.
// The registry's adapters use these same functions; a test checks both lists agree.

import { locateClaude } from "./claude/locate.js";
import { locateCodex } from "./codex/locate.js";
import { locateGemini } from "./gemini/locate.js";
import { locateOpencode } from "./opencode/locate.js";
import { locatePi } from "./pi/locate.js";
import type { AgentAdapter } from "./types.js";

export type AgentLocator = Pick<AgentAdapter, "name" | "locate">;

/** In the registry's order (pi first). */
const LOCATORS: readonly AgentLocator[] = [
  { name: "pi", locate: locatePi },
  { name: "claude", locate: locateClaude },
  { name: "codex", locate: locateCodex },
  { name: "gemini", locate: locateGemini },
  { name: "opencode", locate: locateOpencode },
];

export function agentLocators(): readonly AgentLocator[] {
  return LOCATORS;
}
