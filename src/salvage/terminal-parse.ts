// pi's interactive screen, read back into conversation items. What the layout says (pi 0.73):
// - a startup banner (" pi vX", key hints, [Extensions]/[Skills] lists, warnings) comes first;
// - the editor sits at the bottom between two full-width "─" rules, with cwd and model below;
// - every chat component is separated by blank lines: a user prompt and a tool call are boxes
//   (coloured background, one blank line of padding) and assistant text is plain markdown.
// With escapes the box colour tells prompts and tool calls from assistant text. Without them
// only the layout does, so every role guessed from layout is counted and reported.

import type { ScreenLine } from "./terminal-screen.js";

export interface ToolItem {
  name: string;
  args: Record<string, unknown>;
  /** The visible output lines (pi shows only the tail of long output). */
  output: string;
  /** pi cut the output ("... N earlier lines"), so the result is partial. */
  cut: boolean;
  isError: boolean;
  /** The header did not name a known tool: name and arguments are a guess. */
  unknownTool: boolean;
  /** The box shows the call's input, not its result (write shows the content it wrote). */
  resultShown: boolean;
  /** Arguments the box does not show (edit shows a diff, not oldText/newText). */
  argsPartial: boolean;
}

export type Item =
  | { kind: "user"; text: string; guessed: boolean }
  | { kind: "assistant"; text: string; guessed: boolean }
  /** Lines pi drew in its thinking style (only a capture with escapes shows it). */
  | { kind: "thinking"; text: string }
  | { kind: "tool"; tool: ToolItem };

export interface ParsedScreen {
  items: Item[];
  cwd?: string;
  model?: string;
  /** Text that could be neither placed nor dropped safely (kept as custom entries). */
  unclassified: string[];
  /** Thinking pi showed only as its "Thinking..." label (hideThinkingBlock). */
  hiddenThinking: number;
  /** The capture kept its escapes (else thinking cannot be told from text). */
  styled: boolean;
}

/** What pi shows instead of a thinking block when the user hid them. */
const HIDDEN_THINKING = "Thinking...";

const RULE = /^─{10,}$/;
const BANNER = /^ pi v\d+\.\d+/;
const TOOL_HEADER = /^(\$) (.+)$|^(read|write|edit|ls|find|grep) (.+)$/;

function isBannerLine(t: string): boolean {
  return (
    t === "" ||
    BANNER.test(t) ||
    /^\S/.test(t) || // startup notices ("fd not found ...") start in column 0; chat lines do not
    /^ {2}\S/.test(t) || // items under [Extensions], [Skills], [Context]
    /^\[[^\]]+\]$/.test(t.trim()) ||
    / · /.test(t) || // the key hint line
    /^ (Press |Pi can explain|Warning:|Update available|Tip:)/.test(t)
  );
}

/** The conversation lines (between banner and editor), plus cwd and model from the footer. */
function conversationRegion(lines: ScreenLine[]): { body: ScreenLine[]; cwd?: string; model?: string } {
  const rules = lines.map((l, i) => (RULE.test(l.text) ? i : -1)).filter((i) => i >= 0);
  let end = lines.length;
  let cwd: string | undefined;
  let model: string | undefined;
  if (rules.length >= 2) {
    end = rules[rules.length - 2];
    const footer = lines.slice(rules[rules.length - 1] + 1).map((l) => l.text);
    cwd = footer[0]?.trim().replace(/ \([^)]*\)$/, "").replace(/ • .*$/, "") || undefined;
    model = footer[1]?.trim().split(/\s{2,}/).pop()?.replace(/^\(\w+\) /, "");
  }
  const bannerAt = lines.findIndex((l) => BANNER.test(l.text));
  let start = bannerAt >= 0 && bannerAt < end ? bannerAt : 0;
  while (start < end && isBannerLine(lines[start].text)) start++;
  return { body: lines.slice(start, end), cwd, model };
}

interface Block {
  lines: string[];
  /** Per line: drawn in pi's thinking style. */
  thinking: boolean[];
  /** Background of the block (null: default background). */
  bg: string | null;
}

// bash ends its box with these, after two blank lines when the command failed.
const TOOL_TAIL = /^ (Command exited with code \d+|Command aborted|Command timed out|Took \d)/;

/** Two blank lines end a block, except inside a bash box, and never before the next tool box. */
function continuesTool(cur: Block, line: string): boolean {
  return TOOL_HEADER.test(cur.lines[0].trim()) && TOOL_TAIL.test(line) && !TOOL_HEADER.test(line.trim());
}

/**
 * Styled: runs of one background, split again where two blank lines come before the next
 * component (two tool boxes in a row share a colour). Plain: runs separated by two or more
 * blank lines, which is how pi spaces its components.
 */
function blocks(body: ScreenLine[], styled: boolean): Block[] {
  const out: Block[] = [];
  let cur: Block | undefined;
  let blanks = 0;
  for (const l of body) {
    if (l.text === "") {
      blanks++;
      continue;
    }
    const split = !cur || (styled && cur.bg !== l.bg) || (blanks >= 2 && !continuesTool(cur, l.text));
    if (split) {
      cur = { lines: [], thinking: [], bg: styled ? l.bg : null };
      out.push(cur);
    } else if (cur && blanks > 0) {
      cur.lines.push("");
      cur.thinking.push(cur.thinking[cur.thinking.length - 1] ?? false);
    }
    cur!.lines.push(l.text);
    cur!.thinking.push(l.thinkingStyle);
    blanks = 0;
  }
  return out;
}

/** Lines as pi drew them, minus the one-column padding; wrapped lines are joined back. */
function unwrap(lines: string[], width: number): string {
  const out: string[] = [];
  for (const raw of lines) {
    const line = raw.replace(/^ /, "");
    const prev = out[out.length - 1];
    const firstWord = line.trimStart().split(" ")[0] ?? "";
    // pi wrapped here when the next word would not have fit on the previous line.
    if (prev && prev !== "" && line !== "" && width > 0 && prev.length + 1 + firstWord.length > width - 2) out[out.length - 1] = `${prev} ${line.trimStart()}`;
    else out.push(line);
  }
  return out.join("\n").trim();
}

function toolOf(block: Block): ToolItem | undefined {
  const first = block.lines[0].trim();
  const m = TOOL_HEADER.exec(first);
  if (!m) return undefined;
  let body = block.lines.slice(1);
  // bash ends with "Took 1.2s"; an error box carries the exit code.
  if (body.length && /^ ?Took \d/.test(body[body.length - 1])) body.pop();
  // pi's "... (35 earlier lines, ctrl+o to expand)" is not output: drop it, flag the result.
  const CUT = /^\.\.\. \(?\d+ (earlier|more) lines?.*$|^.*ctrl\+o to expand.*$/;
  const lines = body.map((l) => l.replace(/^ /, ""));
  const cut = lines.some((l) => CUT.test(l));
  const text = lines.filter((l) => !CUT.test(l)).join("\n").trim();
  const isError = /\b(Command exited with code [1-9]|Error:)/.test(text);
  const base = { output: text, cut, isError, unknownTool: false, resultShown: true, argsPartial: false };
  if (m[1]) return { ...base, name: "bash", args: { command: m[2] } };
  const name = m[3];
  const arg = m[4].trim();
  if (name === "write") return { ...base, name, args: { path: arg, content: text }, output: "", resultShown: false };
  if (name === "edit") return { ...base, name, args: { path: arg }, argsPartial: true };
  return { ...base, name, args: name === "grep" || name === "find" ? { pattern: arg } : { path: arg } };
}

/** Runs of thinking-styled and plain lines; a blank line belongs to the run it sits in. */
function segments(block: Block): { thinking: boolean; lines: string[] }[] {
  const out: { thinking: boolean; lines: string[] }[] = [];
  block.lines.forEach((line, i) => {
    const thinking = line === "" ? (out[out.length - 1]?.thinking ?? false) : block.thinking[i];
    const cur = out[out.length - 1];
    if (cur && cur.thinking === thinking) cur.lines.push(line);
    else out.push({ thinking, lines: [line] });
  });
  return out;
}

export function parseScreen(lines: ScreenLine[], styled: boolean): ParsedScreen {
  const width = Math.max(0, ...lines.filter((l) => RULE.test(l.text)).map((l) => l.text.length));
  const { body, cwd, model } = conversationRegion(lines);
  const items: Item[] = [];
  const unclassified: string[] = [];
  let hiddenThinking = 0;
  let last: Item["kind"] | undefined;
  for (const block of blocks(body, styled)) {
    const tool = block.bg !== null || !styled ? toolOf(block) : undefined;
    if (tool) {
      items.push({ kind: "tool", tool });
      last = "tool";
      continue;
    }
    const text = unwrap(block.lines, width);
    if (styled && block.bg !== null) {
      // Coloured and not a tool header: a user prompt.
      items.push({ kind: "user", text, guessed: false });
      last = "user";
      continue;
    }
    if (styled) {
      // Default background: assistant text, and thinking where pi drew its thinking style.
      if (last === undefined) {
        unclassified.push(text); // text before the first prompt: leftover banner or a notice
        continue;
      }
      for (const seg of segments(block)) {
        const segText = unwrap(seg.lines, width);
        if (segText === "") continue;
        if (seg.thinking && segText === HIDDEN_THINKING) {
          hiddenThinking++;
          continue;
        }
        const kind = seg.thinking ? "thinking" : "assistant";
        const prev = items[items.length - 1];
        if (last === kind && prev && prev.kind === kind) prev.text += `\n\n${segText}`;
        else items.push(kind === "thinking" ? { kind, text: segText } : { kind, text: segText, guessed: false });
        last = kind;
      }
      continue;
    }
    // Plain: a prompt opens every turn and pi draws one assistant message as one block, so a
    // text block after a tool is assistant, and after a prompt too; after assistant text it is
    // the next prompt.
    const kind = last === "user" || last === "tool" ? "assistant" : "user";
    items.push({ kind, text, guessed: true });
    last = kind;
  }
  return { items, cwd, model, unclassified, hiddenThinking, styled };
}
