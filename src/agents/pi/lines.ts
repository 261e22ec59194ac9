// Line-level decoding of pi session JSONL, shared by the in-memory and the streaming parser.
// Everything here is pure: it turns one physical line into header/entry/issue items and never
// throws, because session files reach us torn, glued, truncated or overwritten with junk.

import { nestingNote, parseBounded } from "../../model/nesting.js";
import type { RawSessionEntry, SessionHeader } from "../../model/session.js";
import { KNOWN_ENTRY_TYPES } from "../../model/session.js";

export type ParseIssueKind =
  | "empty-file"
  | "bom"
  | "blank-line"
  | "invalid-utf8"
  | "malformed-line"
  | "torn-last-line"
  | "missing-final-newline"
  | "glued-entries"
  | "torn-fragment"
  | "not-an-entry"
  | "missing-header"
  | "invalid-header"
  | "extra-header"
  | "unknown-version"
  /** Kept, but containers nested deeper than MAX_NESTING became their raw JSON text. */
  | "too-deep";

export interface ParseIssue {
  kind: ParseIssueKind;
  /** 1-based physical line number. */
  line: number;
  message: string;
  /** The start of the offending text (at most PREVIEW_CHARS characters). */
  preview?: string;
}

export type SessionItem =
  | { kind: "header"; line: number; header: SessionHeader; text: string }
  | { kind: "entry"; line: number; entry: RawSessionEntry; text: string }
  | { kind: "issue"; issue: ParseIssue }
  /** A first line that looked like a header but was unusable: what could be read from it. */
  | { kind: "header-fragment"; line: number; fields: Record<string, unknown> }
  /** Always the last item: how many physical lines the input had. */
  | { kind: "end"; lineCount: number };

export interface LineInput {
  line: number;
  text: string;
  /** false for the last line of a file that does not end in "\n" (a torn append). */
  terminated: boolean;
  utf8Valid: boolean;
}

const PREVIEW_CHARS = 160;
const GLUE_MARK = '{"type":"';
const ENTRY_TYPES: ReadonlySet<string> = new Set<string>([...KNOWN_ENTRY_TYPES, "session"]);

/** The "too-deep" issues as lines a reader prints ("line 7: entry 1a2b3c4d is nested deeper ..."). */
export function nestingWarnings(issues: readonly ParseIssue[]): string[] {
  return issues.filter((i) => i.kind === "too-deep").map((i) => `line ${i.line}: ${i.message}`);
}

export function preview(text: string): string {
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
}

/** Every line is parsed bounded (nesting.ts): a hostile line must not overflow a later walk. */
const tryParse = (text: string) => parseBounded(text);

function isEntryObject(value: unknown): value is RawSessionEntry {
  return typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as { type?: unknown }).type === "string";
}

/**
 * Where glued entries may start inside a line. `{"type":"` can only appear literally as JSON
 * structure (quotes inside strings are escaped), so each hit is a real object start. Nested
 * content blocks also start that way, so only known entry types count, plus any type right after
 * a "}" (a complete entry whose newline was lost, followed by an entry type we do not know).
 */
function glueCandidates(text: string): number[] {
  const out: number[] = [];
  for (let i = text.indexOf(GLUE_MARK, 1); i !== -1; i = text.indexOf(GLUE_MARK, i + 1)) {
    const typeStart = i + GLUE_MARK.length;
    const type = text.slice(typeStart, text.indexOf('"', typeStart));
    if (ENTRY_TYPES.has(type) || text[i - 1] === "}") out.push(i);
  }
  return out;
}

export interface GluedPiece {
  text: string;
  value?: RawSessionEntry;
  /** Containers of `value` cut to raw text for nesting too deep. */
  cut?: number;
}

/**
 * Split a line that is not valid JSON into entries glued together by pi's append after a torn
 * write. Returns null when no piece is a valid entry. Pieces that do not parse are kept as
 * text (the torn fragment) so callers can report them.
 */
export function splitGlued(text: string): GluedPiece[] | null {
  const starts = glueCandidates(text);
  if (starts.length === 0) return null;
  const bounds = [0, ...starts, text.length];
  const pieces: GluedPiece[] = [];
  let s = 0;
  while (s < bounds.length - 1) {
    let matched = -1;
    let value: RawSessionEntry | undefined;
    let cut = 0;
    // The shortest valid piece wins; longer ones are tried because a candidate may be nested.
    for (let e = s + 1; e < bounds.length; e++) {
      const parsed = tryParse(text.slice(bounds[s], bounds[e]));
      if (parsed.ok && isEntryObject(parsed.value)) {
        matched = e;
        value = parsed.value;
        cut = parsed.cut;
        break;
      }
    }
    if (matched === -1) {
      const piece = text.slice(bounds[s], bounds[s + 1]);
      const last = pieces[pieces.length - 1];
      if (last && !last.value) last.text += piece;
      else pieces.push({ text: piece });
      s += 1;
    } else {
      pieces.push({ text: text.slice(bounds[s], bounds[matched]), value, ...(cut ? { cut } : {}) });
      s = matched;
    }
  }
  return pieces.some((p) => p.value) ? pieces : null;
}

const HEADER_STRING_FIELDS = ["id", "timestamp", "cwd", "parentSession", "branchedFrom"] as const;

/** Read what we can from a torn or broken header line, so a repair can keep its id and cwd. */
export function salvageHeaderFields(text: string): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const name of HEADER_STRING_FIELDS) {
    // A complete JSON string literal after the key: `"name":"...(escaped)..."`.
    const match = new RegExp(`"${name}":("(?:[^"\\\\]|\\\\.)*")`).exec(text);
    if (!match) continue;
    const parsed = tryParse(match[1]);
    if (parsed.ok && typeof parsed.value === "string") fields[name] = parsed.value;
  }
  const version = /"version":(\d+)/.exec(text);
  if (version) fields.version = Number(version[1]);
  return fields;
}

/**
 * Turns physical lines into items. Holds only the header state between lines, so the streaming
 * reader keeps memory bounded by the longest line.
 */
export class SessionLineDecoder {
  private seenFirst = false;
  private sawHeader = false;

  decode(input: LineInput): SessionItem[] {
    const items: SessionItem[] = [];
    const issue = (kind: ParseIssueKind, message: string, text?: string) =>
      items.push({ kind: "issue", issue: { kind, line: input.line, message, ...(text !== undefined ? { preview: preview(text) } : {}) } });

    let text = input.text;
    if (!this.seenFirst && text.charCodeAt(0) === 0xfeff) {
      text = text.slice(1);
      issue("bom", "byte order mark at start of file");
    }
    if (text.trim() === "") {
      if (input.terminated) issue("blank-line", "blank line");
      return items;
    }
    if (!input.utf8Valid) issue("invalid-utf8", "line holds invalid UTF-8; bad bytes read as U+FFFD");

    const first = !this.seenFirst;
    this.seenFirst = true;
    const whole = tryParse(text);
    if (whole.ok) {
      if (!input.terminated) issue("missing-final-newline", "last line has no trailing newline; pi's next append would glue onto it");
      if (isEntryObject(whole.value)) this.accept(whole.value, text, input.line, first, items, issue, whole.cut);
      else issue("not-an-entry", "valid JSON but not an object with a string type", text);
      return items;
    }

    const pieces = splitGlued(text);
    if (!pieces) {
      if (first && text.startsWith('{"type":"session"')) {
        issue("invalid-header", "first line is a broken session header", text);
        items.push({ kind: "header-fragment", line: input.line, fields: salvageHeaderFields(text) });
        return items;
      }
      if (first) issue("missing-header", "first line is not a session header");
      if (!input.terminated) {
        issue("torn-last-line", "last line is incomplete (torn write)", text);
      } else {
        issue("malformed-line", "line is not valid JSON", text);
      }
      return items;
    }

    const recovered = pieces.filter((p) => p.value).length;
    issue("glued-entries", `line holds ${pieces.length} glued pieces; ${recovered} recovered`);
    pieces.forEach((piece, index) => {
      if (piece.value) {
        this.accept(piece.value, piece.text, input.line, first && index === 0, items, issue, piece.cut ?? 0);
      } else if (first && index === 0 && piece.text.startsWith('{"type":"session"')) {
        issue("invalid-header", "session header is torn", piece.text);
        items.push({ kind: "header-fragment", line: input.line, fields: salvageHeaderFields(piece.text) });
      } else {
        if (first && index === 0) issue("missing-header", "first line is not a session header");
        issue("torn-fragment", "incomplete entry lost to a torn write", piece.text);
      }
    });
    return items;
  }

  private accept(
    value: RawSessionEntry,
    text: string,
    line: number,
    first: boolean,
    items: SessionItem[],
    issue: (kind: ParseIssueKind, message: string, text?: string) => void,
    cut: number,
  ): void {
    if (cut) issue("too-deep", nestingNote(typeof value.id === "string" ? `entry ${value.id}` : value.type === "session" ? "the session header" : `the ${value.type} entry`));
    if (value.type !== "session") {
      if (first) issue("missing-header", "first line is not a session header");
      items.push({ kind: "entry", line, entry: value, text });
      return;
    }
    if (!first || this.sawHeader) {
      issue("extra-header", "session header after the first line; ignored", text);
      return;
    }
    if (typeof value.id !== "string") {
      issue("invalid-header", "session header has no string id", text);
      items.push({ kind: "header-fragment", line, fields: { ...value } });
      return;
    }
    const version = value.version;
    if (version !== undefined && (typeof version !== "number" || version < 1 || version > 3)) {
      issue("unknown-version", `session version ${JSON.stringify(version)} is not one pi 0.73.1 writes; read as version 3`);
    }
    this.sawHeader = true;
    items.push({ kind: "header", line, header: value as unknown as SessionHeader, text });
  }

  /** Issues that only make sense once the whole input has been seen. */
  finish(lineCount: number): SessionItem[] {
    const end: SessionItem = { kind: "end", lineCount };
    if (this.seenFirst) return [end];
    return [{ kind: "issue", issue: { kind: "empty-file", line: Math.max(1, lineCount), message: "no content" } }, end];
  }
}
