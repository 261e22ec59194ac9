/**
 * The few shape checks the repository's plaintext objects need (the config, key objects and the
 * master key inside them), by hand: they are read by every command that opens a repository, and
 * loading a schema library for them cost ~70 ms of a 0.4 s snapshot. Hostile input: each check
 * names the first problem as "path: message", in the order the fields are listed.
 */

/** A value that failed a check, with where (field names from the top). */
export class ShapeProblem extends Error {
  constructor(
    readonly path: string[],
    message: string,
  ) {
    super(message);
  }

  /** "a.b: message", or the message alone at the top level. */
  describe(top = ""): string {
    return this.path.length ? `${this.path.join(".")}: ${this.message}` : top ? `${top}: ${this.message}` : this.message;
  }
}

const fail = (path: string[], message: string): never => {
  throw new ShapeProblem(path, message);
};

const kind = (v: unknown): string => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

/** A plain object; `keys` given: no other key is allowed. */
export function object(v: unknown, path: string[], keys?: readonly string[]): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) fail(path, `expected an object, got ${kind(v)}`);
  const o = v as Record<string, unknown>;
  if (keys) {
    const extra = Object.keys(o).filter((k) => !keys.includes(k));
    if (extra.length) fail(path, `unknown key${extra.length > 1 ? "s" : ""} ${extra.map((k) => JSON.stringify(k)).join(", ")}`);
  }
  return o;
}

export function string(v: unknown, path: string[], pattern?: RegExp, patternMessage = "malformed"): string {
  if (v === undefined) fail(path, "missing");
  if (typeof v !== "string") fail(path, `expected a string, got ${kind(v)}`);
  if (pattern && !pattern.test(v as string)) fail(path, patternMessage);
  return v as string;
}

export function number(v: unknown, path: string[]): number {
  if (v === undefined) fail(path, "missing");
  if (typeof v !== "number" || !Number.isFinite(v)) fail(path, `expected a number, got ${kind(v)}`);
  return v as number;
}

/** A safe integer in [min, max]. */
export function int(v: unknown, path: string[], min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): number {
  const n = number(v, path);
  if (!Number.isSafeInteger(n)) fail(path, `expected an integer, got ${n}`);
  if (n < min) fail(path, `too small: ${n} < ${min}`);
  if (n > max) fail(path, `too big: ${n} > ${max}`);
  return n;
}

export function oneOf<T extends string>(v: unknown, path: string[], values: readonly T[]): T {
  if (!values.includes(v as T)) fail(path, `expected one of ${values.map((x) => JSON.stringify(x)).join(", ")}`);
  return v as T;
}

/** `check` passes or names its problem at `path`. */
export function holds(ok: boolean, path: string[], message: string): void {
  if (!ok) fail(path, message);
}
