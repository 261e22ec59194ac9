// The agents pi-guard knows, in the order they are listed and located. Each agent package adds
// its adapter here with one import and one line in ADAPTERS, nothing else: code outside
// src/agents/ finds an agent by name or by root, never by importing its folder.

import { RepoError } from "../repo/errors.js";
import { claudeAdapter } from "./claude/index.js";
import { codexAdapter } from "./codex/index.js";
import { piAdapter } from "./pi/index.js";
import { opencodeAdapter } from "./opencode/index.js";
import { geminiAdapter } from "./gemini/index.js";
import type { AgentAdapter, AgentName } from "./types.js";

const ADAPTERS: AgentAdapter[] = [
  // pi first: its roots keep their historic names ("agent", "sessions").
  piAdapter,
  claudeAdapter,
  codexAdapter,
  geminiAdapter,
  opencodeAdapter,
];

/** Every registered adapter, pi first. */
export function allAgents(): readonly AgentAdapter[] {
  return ADAPTERS;
}

export function agentNames(): AgentName[] {
  return ADAPTERS.map((a) => a.name);
}

/** The adapter called `name`, or undefined. */
export function findAgent(name: string): AgentAdapter | undefined {
  return ADAPTERS.find((a) => a.name === name);
}

/** The adapter called `name`; a usage error naming the known ones otherwise (for `--agent NAME`). */
export function agentByName(name: string): AgentAdapter {
  const found = findAgent(name);
  if (!found) throw new RepoError(`unknown agent "${name}": known agents are ${agentNames().join(", ")}`, "usage");
  return found;
}
