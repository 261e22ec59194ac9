// --redact: mask secrets in an exported session. Two sources: the exact values the user keeps in
// auth.json, models.json, mcp.json and mcp-auth.json (secrets.ts), matched in every encoding they
// are likely to appear in, and well-known key shapes. Session text is hostile: a key may sit right after a JSON escape
// (`\nsk-…`), a URL-encoded quote (`%22sk-…`) or a glued prefix (`key_sk-…`), or be used as a
// property name, so no pattern requires a word boundary before the key itself.
//
// Where it runs (see exportSession): on the session model first, every string, keys and values,
// before any renderer sees it; then once more over the rendered text, HTML payload included, to
// catch anything a renderer added or re-encoded.

import os from "node:os";
import { agentSecrets, looksRandom, MIN_SECRET_LENGTH, type KnownSecret } from "./secrets.js";

export const REDACTED = "[REDACTED]";

/** The marker that replaces a value from the agent dir: says where the value came from, never what it was. */
export function knownMarker(label: string): string {
  return `[REDACTED:${label.replace(/[^A-Za-z0-9 ._$-]/g, "")}]`;
}

interface Rule {
  re: RegExp;
  /** Extra check on the `secret` group (or the whole match): keeps prose like "task-…" intact. */
  accept?: (secret: string) => boolean;
}

// The start of a word in raw text, in JSON-escaped text (`\n`) or in URL-encoded text (`%22`).
const START = String.raw`(?:(?<![A-Za-z0-9])|(?<=\\[nrtbf])|(?<=%[0-9A-Fa-f]{2}))`;
// Between a name and its value: quotes, spaces, `:` or `=`, raw, JSON-escaped or URL-encoded.
const QUOTE = String.raw`(?:\s|["'\x60]|\\"|%22|%27|%20)`;
const ASSIGN = String.raw`${QUOTE}*(?:[:=]|%3[AaDd])${QUOTE}*`;
const NL = String.raw`(?:\r?\n|\\r\\n|\\n|%0[Dd]%0[Aa]|%0[Aa])`;

const hasDigit = (s: string) => /\d/.test(s);
const hasLetter = (s: string) => /[A-Za-z]/.test(s);
const mixedCase = (s: string) => /[a-z]/.test(s) && /[A-Z]/.test(s);

/** A value after a secret-sounding name that is a value, not a reference like `process.env.KEY`. */
function secretish(v: string): boolean {
  return (hasDigit(v) && hasLetter(v)) || (v.length >= 20 && mixedCase(v) && !v.includes(".")) || /[!@#$^&*]/.test(v);
}

const SECRET_NAME = String.raw`(?:[A-Za-z0-9]{1,40}[_-]){0,6}(?:api[_-]?key|apikey|secret[_-]?key|access[_-]?key|secret|password|passwd|access[_-]?token|refresh[_-]?token|id[_-]?token|session[_-]?token|auth[_-]?token|client[_-]?secret|code[_-]?verifier|private[_-]?key)`;

const RULES: Rule[] = [
  // PEM private keys: the whole block, with real newlines or `\n` escapes; a cut-off one up to
  // its last line that is all base64 (a short line only if the line ends there).
  { re: /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]{0,16384}?-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g },
  {
    re: new RegExp(String.raw`-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:${NL}(?:[A-Za-z0-9+/=]{16,80}(?=\s)|(?:[A-Za-z0-9+/=]{1,80}|Proc-Type:[^\r\n\\]*|DEK-Info:[^\r\n\\]*|Comment:[^\r\n\\]*)(?=${NL}|["'\x60\\]|$)|(?=${NL})))*`, "g"),
  },
  { re: /sk-ant-[A-Za-z0-9_-]{20,}/g }, // Anthropic
  { re: /sk-(?:proj|svcacct|admin|or-v1|or)-[A-Za-z0-9_-]{20,}/g }, // OpenAI project/service keys, OpenRouter
  // Plain OpenAI (and DeepSeek, Moonshot…) keys. Without a boundary "task-…" and "risk-…" reach this
  // rule, so the body must look random: letters and digits, and mixed case unless it is one word.
  { re: /sk-[A-Za-z0-9_-]{20,}/g, accept: (s) => hasDigit(s.slice(3)) && hasLetter(s.slice(3)) && (mixedCase(s.slice(3)) || !s.slice(3).includes("-")) },
  { re: /(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}/g }, // GitHub
  { re: /github_pat_[A-Za-z0-9_]{40,}/g },
  { re: /(?:AKIA|ASIA)[0-9A-Z]{16}/g }, // AWS access key id
  { re: new RegExp(String.raw`(?<pre>(?:aws_?)?secret_?access_?key${ASSIGN})(?<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])`, "gi") },
  { re: /AIza[0-9A-Za-z_-]{35}/g }, // Google API key
  { re: /xox[abposr]-[A-Za-z0-9-]{10,}/g }, // Slack
  { re: /xapp-[A-Za-z0-9-]{10,}/g },
  { re: /glpat-[A-Za-z0-9_-]{20,}/g }, // GitLab
  { re: /hf_[A-Za-z0-9]{30,}/g, accept: mixedCase }, // Hugging Face
  { re: /eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/g }, // JWT (OAuth access tokens)
  {
    re: new RegExp(String.raw`(?<pre>${START}authorization${ASSIGN}(?:(?:bearer|basic|token|bot)(?:\s|%20|\+)+)?)(?<secret>[A-Za-z0-9._~+/=-]{8,})`, "gi"),
    accept: secretish,
  },
  { re: new RegExp(String.raw`(?<pre>${START}(?:bearer|token)(?:\s|%20|\+)+)(?<secret>[A-Za-z0-9._~+/=-]{16,})`, "gi"), accept: secretish },
  { re: new RegExp(String.raw`(?<pre>${START}${SECRET_NAME}${ASSIGN})(?<secret>[A-Za-z0-9._~+/=!@#$^&*-]{8,})`, "gi"), accept: secretish },
];

/** Property names whose string values are credentials, in tool arguments and the like. */
const SECRET_PROPERTY = new RegExp(String.raw`^(?:x-)?${SECRET_NAME}$|^(?:x-)?(?:token|authorization|access|refresh|auth)$`, "i");

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The part of base64(v) that does not depend on the bytes around v, for each of the 3 alignments. */
function base64Cores(v: string): string[] {
  const bytes = Buffer.from(v, "utf8");
  const out: string[] = [];
  for (let pad = 0; pad < 3; pad++) {
    const b64 = Buffer.concat([Buffer.alloc(pad), bytes]).toString("base64");
    const core = b64.slice(pad ? 4 : 0, Math.floor((pad + bytes.length) / 3) * 4);
    if (core.length >= 12) out.push(core, core.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return out;
}

/** One regex for every form a known value takes: raw, JSON-escaped, URL-encoded, base64. */
function knownValueRegex(v: string): RegExp {
  const json = JSON.stringify(v).slice(1, -1);
  const forms = new Set([v, json, json.replace(/\//g, "\\/"), ...base64Cores(v)]);
  const alts = [...forms].map(escapeRe);
  for (const url of [encodeURIComponent(v), encodeURIComponent(v).replace(/%20/g, "+")]) {
    if (url !== v) alts.push(escapeRe(url).replace(/%([0-9A-F])([0-9A-F])/g, (_m, a: string, b: string) => `%[${a}${a.toLowerCase()}][${b}${b.toLowerCase()}]`));
  }
  return new RegExp([...new Set(alts)].sort((a, b) => b.length - a.length).join("|"), "g");
}

export interface RedactOptions {
  /**
   * The text is encoded data (base64 image bytes): only exact known values are masked, since key
   * shapes occur in random base64 by chance and masking them would corrupt the image.
   */
  data?: boolean;
  /**
   * The text is rendered output (JSON, Markdown, HTML). A match right after an odd run of
   * backslashes starts inside an escape sequence (`\trustno1…`): it is not the secret, and
   * replacing it would break the escape.
   */
  rendered?: boolean;
}

export type Redactor = (text: string, opts?: RedactOptions) => string;

function insideEscape(text: string, offset: number): boolean {
  let n = 0;
  while (offset - n - 1 >= 0 && text[offset - n - 1] === "\\") n++;
  return n % 2 === 1;
}

// Home directories name their user and lay out their disk; a page meant for sharing shows them as
// ~: this user's home (whatever it is), and any /home/<user>, /Users/<user>, /root or
// C:\Users\<user> (with `\`, a JSON-escaped `\\` or `/`). A user name may hold spaces
// ("/Users/First Last/…"): a name of several words is taken whole when what follows it ends a
// path (a separator, a quote, an HTML entity, punctuation, a line end, the end of the text), so
// the name is not masked only in part. Only a space leaves it open ("/home/al is here" could be
// either): there a single word is masked.
const HOME_END = String.raw`(?=[/\\\s"'\x60<>:;,)\]}]|$)`;
const NAME_WORD = String.raw`[\p{L}\p{M}\p{N}._-]{1,64}`;
const WORDS_END = String.raw`(?=[/\\"'\x60<>:;,)\]}&|\t\r\n]|$)`;
const HOME_ROOTS = String.raw`(?:/home/|/Users/|[A-Za-z]:(?:\\{1,2}|/)Users(?:\\{1,2}|/))`;
// No lookbehind: checked on each candidate instead (homeStarts), which is 4x faster on large text.
const HOME_SHAPES = new RegExp(String.raw`${HOME_ROOTS}${NAME_WORD}(?:(?:(?: |%20)${NAME_WORD}){1,3}${WORDS_END}|${HOME_END})|/root${HOME_END}`, "gu");
const NAME_CHAR = /[\p{L}\p{N}._~-]/u;

/** Whether a home path may start at `i`: not inside a longer name or path, unless after a JSON escape (`\n/home/…`). */
function homeStarts(text: string, i: number): boolean {
  if (i === 0 || !NAME_CHAR.test(text[i - 1])) return true;
  return i >= 2 && text[i - 2] === "\\" && "nrtbf".includes(text[i - 1]);
}

function shortenHomeShapes(text: string): string {
  let out = "";
  let last = 0;
  HOME_SHAPES.lastIndex = 0;
  for (let m = HOME_SHAPES.exec(text); m; m = HOME_SHAPES.exec(text)) {
    // A candidate inside a longer path (`/usr/lib/home/x`) is skipped by one character only, so
    // a home starting within it is still found.
    if (!homeStarts(text, m.index)) {
      HOME_SHAPES.lastIndex = m.index + 1;
      continue;
    }
    out += `${text.slice(last, m.index)}~`;
    last = m.index + m[0].length;
  }
  return last ? out + text.slice(last) : text;
}

function homeRegex(home: string): RegExp | undefined {
  const h = home.replace(/\/+$/, "");
  return h.length > 1 && h.startsWith("/") ? new RegExp(String.raw`(?<![A-Za-z0-9._~-])${escapeRe(h)}${HOME_END}`, "g") : undefined;
}

/** A function writing home directories as ~ (`home`, and HOME_SHAPES). */
export function homeShortener(home = os.homedir()): (text: string) => string {
  const own = homeRegex(home);
  return (text) => shortenHomeShapes(own ? text.replace(own, "~") : text);
}

export function makeRedactor(knownSecrets: readonly (string | KnownSecret)[]): Redactor {
  const known = knownSecrets
    .map((s) => (typeof s === "string" ? { value: s, label: "" } : s))
    .filter((s) => s.value.length >= MIN_SECRET_LENGTH)
    .sort((a, b) => b.value.length - a.value.length)
    .map((s) => ({ re: knownValueRegex(s.value), marker: s.label ? knownMarker(s.label) : REDACTED }));
  const shortenHomes = homeShortener();
  return (text, opts = {}) => {
    let out = text;
    for (const k of known) {
      out = out.replace(k.re, (match: string, offset: number, whole: string) => (opts.rendered && insideEscape(whole, offset) ? match : k.marker));
    }
    if (opts.data) return out;
    for (const rule of RULES) {
      out = out.replace(rule.re, (...args: unknown[]) => {
        const match = args[0] as string;
        const hasGroups = typeof args[args.length - 1] === "object";
        const groups = (hasGroups ? args[args.length - 1] : undefined) as { pre?: string; secret?: string } | undefined;
        const offset = args[hasGroups ? args.length - 3 : args.length - 2] as number;
        const whole = args[hasGroups ? args.length - 2 : args.length - 1] as string;
        const pre = groups?.pre ?? "";
        const secret = groups?.secret ?? match;
        if (rule.accept && !rule.accept(secret)) return match;
        if (opts.rendered && insideEscape(whole, offset + pre.length)) return match;
        return pre + REDACTED + match.slice(pre.length + secret.length);
      });
    }
    return shortenHomes(out);
  };
}

const isBase64 = (s: string) => /^[A-Za-z0-9+/]*={0,2}$/.test(s);

/**
 * A deep copy with every string, property names included, passed through the redactor. A string
 * under a secret-sounding property name (`"apiKey": "…"` in tool arguments) is masked whole.
 */
export function redactDeep<T>(value: T, redact: Redactor): T {
  if (typeof value === "string") return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    const isImage = (value as { type?: unknown }).type === "image";
    for (const [k, v] of Object.entries(value)) {
      let key = redact(k);
      // Two keys masked to the same marker must both survive.
      for (let n = 2; key !== k && Object.hasOwn(out, key); n++) key = `${redact(k)}#${n}`;
      let next: unknown;
      if (isImage && k === "data" && typeof v === "string" && isBase64(v)) next = redact(v, { data: true });
      else if (typeof v === "string" && SECRET_PROPERTY.test(k) && (secretish(v) || looksRandom(v))) next = v.length >= MIN_SECRET_LENGTH ? REDACTED : v;
      else next = redactDeep(v, redact);
      out[key] = next;
    }
    return out as T;
  }
  return value;
}

const SESSION_DATA = /(<script id="session-data" type="application\/json">)([A-Za-z0-9+/=]*)(<\/script>)/;

/**
 * The last pass over a rendered export. The session model was redacted already; this catches what
 * a renderer added or re-encoded. In an HTML page the embedded session is decoded, checked and
 * re-encoded only if something had to be masked.
 */
export function redactRendered(text: string, redact: Redactor): string {
  const m = SESSION_DATA.exec(text);
  if (!m) return redact(text, { rendered: true });
  const before = text.slice(0, m.index);
  const after = text.slice(m.index + m[0].length);
  const json = Buffer.from(m[2], "base64").toString("utf8");
  const clean = redact(json, { rendered: true });
  const payload = clean === json ? m[2] : Buffer.from(clean, "utf8").toString("base64");
  return `${redact(before, { rendered: true })}${m[1]}${payload}${m[3]}${redact(after, { rendered: true })}`;
}

/** The secrets of auth.json as plain strings (kept for callers that only need the values). */
export async function authSecrets(agentDir: string): Promise<string[]> {
  return (await agentSecrets(agentDir)).map((s) => s.value);
}
