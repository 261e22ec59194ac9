// A sandbox with sessions written by pi 1.6.0's real agent loop (test/helpers/pi1.ts) for the
// show, export and search tests of pi 1.x's entries:
// - "ledger-july": makePi1RichSession (system prompt, a patch removing tools and a section, a
//   cache_warm usage entry, a context edit replacing a reply, a compaction with its checkpoint, a
//   branch whose summary is followed by a patch removing a section, a label, a name, a fork);
// - "quokka-notes": a prompt section of its own, a context edit omitting a reply and one replacing
//   another, a usage entry with a note. pi 1.6.0 itself writes no custom header metadata, no
//   provider-billed cost with the faux model, no assistant durationMs and no second root without
//   an SDK call the helper does not make; so this file is then given what a pi 1.x user's file can
//   hold: a header field, a reply's durationMs and cost.totalFromProvider, and a last turn whose
//   user message is a root (pi's resetLeaf). pi 1.6.0's own parser must still load it.

import { readFileSync, writeFileSync } from "node:fs";
import { makePi1RichSession, makePi1Session, type Pi1SessionResult, validatePi1 } from "../helpers/pi1.js";
import { makeSandbox, type Sandbox } from "../helpers/tmp.js";

export interface Pi1World {
  sb: Sandbox;
  rich: Pi1SessionResult;
  quokka: Pi1SessionResult;
  /** Ids in quokka-notes: the reply given durationMs and a billed cost, and the new root. */
  billedId: string;
  rootId: string;
}

type Line = { type: string; id?: string; parentId?: string | null; message?: Record<string, any>; [k: string]: unknown };

export async function makePi1World(label: string): Promise<Pi1World> {
  const sb = makeSandbox(label);
  const rich = await makePi1RichSession(sb.agentDir, sb.dir("ledger"));
  const quokka = await makePi1Session({
    agentDir: sb.agentDir,
    cwd: sb.dir("zoo"),
    sessionId: "quokka-notes",
    thinkingLevel: "low",
    turns: [
      { user: "Tell me about marsupials", sections: { habitat: "<habitat>The Rottnest island quokka colony</habitat>" }, assistant: ["Quokkas are small marsupials."] },
      { user: "And the wombat?", assistant: ["Wombats dig burrows."], contextEdits: [{ turn: 0, replacement: null }], usage: { kind: "cache_warm", note: "warm before lunch" } },
      { user: "One more", assistant: ["Noted."], contextEdits: [{ turn: 1, replacement: { content: "Wombats dig zanzibarian tunnels." } }] },
      { user: "Start over please", assistant: ["Starting over."] },
    ],
  });
  const lines = readFileSync(quokka.file, "utf8").trimEnd().split("\n").map((l) => JSON.parse(l) as Line);
  lines[0].origin = { tool: "ledger-sync", run: 7 };
  const billed = lines.find((l) => l.id === quokka.turnMessageIds[1])!;
  billed.message!.durationMs = 1234;
  billed.message!.usage.cost.totalFromProvider = true;
  // The last turn's user message becomes a second root, as after pi's SessionManager.resetLeaf().
  const root = lines.find((l) => l.type === "message" && l.message!.role === "user" && JSON.stringify(l.message).includes("Start over please"))!;
  root.parentId = null;
  const text = `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`;
  await validatePi1(text, { expectMessages: true }); // pi 1.6.0 loads what the tests read
  writeFileSync(quokka.file, text);
  return { sb, rich, quokka, billedId: billed.id!, rootId: root.id! };
}
