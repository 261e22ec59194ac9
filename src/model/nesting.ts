// JSON nested deeper than any real session. V8's JSON.parse reads any depth, but every recursive
// walk over the value afterwards (JSON.stringify, structuredClone, the renderers, redaction, the
// search text) overflows the stack after a few thousand levels, and a 25 KB line holds 5,000. So
// values from session lines and salvage sources are bounded once, where they are parsed: a
// container nested deeper than MAX_NESTING becomes a string holding its raw JSON text. Nothing
// downstream then recurses deeper than MAX_NESTING, and nothing of the text is lost.

/** Deepest container nesting kept as structure (the entry object itself is level 1). */
export const MAX_NESTING = 100;

export type BoundedParse = { ok: true; value: unknown; cut: number } | { ok: false };

/** Whether `value` has containers nested more than `levels` deep. Recurses at most `levels` frames. */
export function nestedDeeperThan(value: unknown, levels: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (levels <= 0) return true;
  if (Array.isArray(value)) {
    for (const v of value) if (typeof v === "object" && v !== null && nestedDeeperThan(v, levels - 1)) return true;
    return false;
  }
  for (const k in value) {
    const v = (value as Record<string, unknown>)[k];
    if (typeof v === "object" && v !== null && nestedDeeperThan(v, levels - 1)) return true;
  }
  return false;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const isOpen = (c: number) => c === 0x7b || c === 0x5b;
const isClose = (c: number) => c === 0x7d || c === 0x5d;

/** Index of the quote that closes the string opening at `at` (valid JSON: it exists). */
function stringEnd(text: string, at: number): number {
  for (let from = at + 1; ; ) {
    const q = text.indexOf('"', from);
    if (q === -1) return text.length;
    let slashes = 0;
    while (text.charCodeAt(q - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return q;
    from = q + 1;
  }
}

/** Index just past the container opening at `at`. */
function containerEnd(text: string, at: number): number {
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(text, i);
    else if (isOpen(c)) depth++;
    else if (isClose(c) && --depth === 0) return i + 1;
  }
  return text.length;
}

/**
 * Valid JSON text with every container below `levels` of nesting replaced by a JSON string of
 * its own text: iterative, so any depth is fine. Returns how many containers were cut.
 */
export function cutNesting(text: string, levels: number): { text: string; cut: number } {
  let out = "";
  let from = 0;
  let depth = 0;
  let cut = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(text, i);
    else if (isOpen(c)) {
      if (depth < levels) {
        depth++;
        continue;
      }
      const end = containerEnd(text, i);
      out += text.slice(from, i) + JSON.stringify(text.slice(i, end));
      from = end;
      i = end - 1;
      cut++;
    } else if (isClose(c)) depth--;
  }
  return { text: out + text.slice(from), cut };
}

/** JSON.parse, with containers deeper than `levels` kept as their raw text (`cut` counts them). */
export function parseBounded(text: string, levels = MAX_NESTING): BoundedParse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false };
  }
  if (!nestedDeeperThan(value, levels)) return { ok: true, value, cut: 0 };
  const bounded = cutNesting(text, levels);
  return { ok: true, value: JSON.parse(bounded.text), cut: bounded.cut };
}

/** What a reader says about an entry it bounded. */
export function nestingNote(what: string): string {
  return `${what} is nested deeper than ${MAX_NESTING} levels; shown as raw JSON`;
}
