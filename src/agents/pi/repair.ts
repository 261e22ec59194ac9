// Make a damaged session loadable by pi without losing what survived. Pure: text in, text out.
// Lines that parse are kept byte-for-byte (re-serialising could change number formats or
// escapes); only torn, glued and junk lines change, and a missing header is synthesised,
// because pi replaces a headerless file with an empty session when it opens it.

import { randomUUID } from "node:crypto";
import { sessionItems, sessionVersion } from "./parse.js";
import type { ParseIssue } from "./lines.js";
import type { RawSessionEntry, SessionHeader } from "../../model/session.js";
import { parseSessionFileName } from "./writer.js";

export interface RepairOptions {
  /** The file's name; pi names files `<time>_<session id>.jsonl`, which gives back a lost id. */
  fileName?: string;
  /** cwd for a synthesised header when the old one is unreadable (--cwd). */
  fallbackCwd?: string;
  /**
   * Asked only when neither the old header nor fallbackCwd names the cwd: another source (pi's
   * folder name), with a sentence saying how sure it is. Without one the cwd stays unknown.
   */
  guessCwd?: () => { cwd: string; how: string } | undefined;
  /** Clock for a header with no other time source. */
  now?: () => Date;
}

export interface RepairReport {
  /** False when the input was already sound and is returned unchanged. */
  changed: boolean;
  issues: ParseIssue[];
  /** One human-readable sentence per change. */
  actions: string[];
  headerSynthesized: boolean;
  /** Entries taken back out of glued lines. */
  recoveredEntries: number;
  /** Physical lines whose content was dropped entirely (torn, junk, extra headers). */
  droppedLines: number[];
  /** Entries in the repaired file (header not counted). */
  entries: number;
  /** A header had to be synthesised and nothing named the project dir: its cwd is "". */
  cwdUnknown: boolean;
}

export interface RepairResult {
  text: string;
  report: RepairReport;
}

function describe(issue: ParseIssue): string | null {
  const at = `line ${issue.line}`;
  switch (issue.kind) {
    case "bom":
      return "removed byte order mark";
    case "blank-line":
      return `removed blank ${at}`;
    case "invalid-utf8":
      return `replaced invalid UTF-8 on ${at} with U+FFFD`;
    case "malformed-line":
      return `dropped malformed ${at}`;
    case "torn-last-line":
      return `dropped torn last ${at}`;
    case "missing-final-newline":
      return `added the missing newline after ${at}`;
    case "glued-entries":
      return `split glued entries on ${at}`;
    case "torn-fragment":
      return `dropped torn entry fragment on ${at}`;
    case "not-an-entry":
      return `dropped non-entry JSON on ${at}`;
    case "extra-header":
      return `dropped extra session header on ${at}`;
    case "missing-header":
    case "invalid-header":
      return `synthesised a session header (${issue.kind} on ${at})`;
    default:
      return null;
  }
}

const DROPPING_KINDS = new Set(["malformed-line", "torn-last-line", "not-an-entry", "extra-header"]);

function synthesizeHeader(
  fragment: Record<string, unknown> | undefined,
  entries: readonly RawSessionEntry[],
  options: RepairOptions,
): { header: SessionHeader; cwdHow?: string } {
  const fromName = options.fileName ? parseSessionFileName(options.fileName) : null;
  const str = (v: unknown): string | undefined => (typeof v === "string" && v ? v : undefined);
  const firstEntryTime = entries.map((e) => str(e.timestamp)).find((t) => t !== undefined);
  const version = typeof fragment?.version === "number" ? fragment.version : sessionVersion(null, entries);
  const known = str(fragment?.cwd) ?? str(options.fallbackCwd);
  const guessed = known === undefined ? options.guessCwd?.() : undefined;
  // Key order follows pi's header: type, version, id, timestamp, cwd, parentSession.
  const header: SessionHeader = {
    type: "session",
    ...(version >= 2 ? { version } : {}),
    id: str(fragment?.id) ?? fromName?.id ?? randomUUID(),
    timestamp: str(fragment?.timestamp) ?? firstEntryTime ?? fromName?.timestamp ?? (options.now?.() ?? new Date()).toISOString(),
    cwd: known ?? guessed?.cwd ?? "",
  };
  for (const [key, value] of Object.entries(fragment ?? {})) {
    if (!(key in header) && key !== "type") header[key] = value;
  }
  return { header, cwdHow: guessed?.how };
}

export function repairSessionText(input: string | Uint8Array, options: RepairOptions = {}): RepairResult {
  let headerText: string | undefined;
  let fragment: Record<string, unknown> | undefined;
  const entryTexts: string[] = [];
  const entryLines: number[] = [];
  const entries: RawSessionEntry[] = [];
  const issues: ParseIssue[] = [];
  for (const item of sessionItems(input)) {
    if (item.kind === "header") headerText = item.text;
    else if (item.kind === "header-fragment") fragment = item.fields;
    else if (item.kind === "entry") {
      entryTexts.push(item.text);
      entryLines.push(item.line);
      entries.push(item.entry);
    } else if (item.kind === "issue") issues.push(item.issue);
  }

  const original = typeof input === "string" ? input : Buffer.from(input).toString("utf8");
  // An empty file has nothing to repair; inventing a session would only add noise.
  if (headerText === undefined && entries.length === 0 && !fragment) {
    return {
      text: original,
      report: { changed: false, issues, actions: [], headerSynthesized: false, recoveredEntries: 0, droppedLines: [], entries: 0, cwdUnknown: false },
    };
  }

  const headerSynthesized = headerText === undefined;
  const synthesized = headerSynthesized ? synthesizeHeader(fragment, entries, options) : undefined;
  const header = synthesized?.header ?? (JSON.parse(headerText!) as SessionHeader);
  if (headerSynthesized) headerText = JSON.stringify(header);
  const idActions = sessionVersion(header, []) >= 2 ? giveMissingIds(entries, entryTexts, entryLines) : [];
  let text = `${headerText}\n`;
  for (const t of entryTexts) text += `${t}\n`;

  const changed = text !== original || issues.some((i) => i.kind === "invalid-utf8");
  const cwdActions = synthesized?.cwdHow ? [synthesized.cwdHow] : [];
  const actions = changed ? [...new Set(issues.map(describe).filter((a): a is string => a !== null)), ...cwdActions, ...idActions] : [];
  const gluedLines = new Set(issues.filter((i) => i.kind === "glued-entries").map((i) => i.line));
  const report: RepairReport = {
    changed,
    issues,
    actions,
    headerSynthesized,
    recoveredEntries: entryLines.filter((line) => gluedLines.has(line)).length,
    droppedLines: issues.filter((i) => DROPPING_KINDS.has(i.kind)).map((i) => i.line),
    entries: entries.length,
    cwdUnknown: headerSynthesized && header.cwd === "",
  };
  return { text, report };
}

/**
 * In a version 2/3 file an entry without an id cannot sit in the tree (damage inside the line
 * can cut the key out). Give it a fresh id and, if its parent link is gone too, hang it under the
 * entry before it: keeping the content beats dropping it.
 */
function giveMissingIds(entries: RawSessionEntry[], texts: string[], lines: number[]): string[] {
  const taken = new Set(entries.map((e) => e.id).filter((id): id is string => typeof id === "string"));
  const actions: string[] = [];
  entries.forEach((entry, i) => {
    if (typeof entry.id === "string" && entry.id) return;
    let id = randomUUID().slice(0, 8);
    while (taken.has(id)) id = randomUUID().slice(0, 8);
    taken.add(id);
    const prev = i > 0 ? entries[i - 1].id : null;
    const parentId = typeof entry.parentId === "string" || entry.parentId === null ? entry.parentId : (prev ?? null);
    entries[i] = { ...entry, id, parentId };
    texts[i] = JSON.stringify(entries[i]);
    actions.push(`gave the entry on line ${lines[i]} the new id ${id}`);
  });
  return actions;
}
