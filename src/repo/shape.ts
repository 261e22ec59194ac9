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

/**
 * The same checks as composable values, for a bigger shape (the config file): each takes the
 * value and its path and returns it, defaults filled in, or throws a ShapeProblem.
 */
export type Check<T> = (value: unknown, path: string[]) => T;

export function str(opts: { min?: number; max?: number; test?: (s: string) => boolean; message?: string } = {}): Check<string> {
  return (v, path) => {
    const s = string(v, path);
    if (opts.min !== undefined) holds(s.length >= opts.min, path, opts.min === 1 ? "must not be empty" : `shorter than ${opts.min} characters`);
    if (opts.max !== undefined) holds(s.length <= opts.max, path, `longer than ${opts.max} characters`);
    if (opts.test) holds(opts.test(s), path, opts.message ?? "malformed");
    return s;
  };
}

/** A number; `int`: a safe integer; `min`/`max` inclusive, `above` exclusive. */
export function num(opts: { int?: boolean; min?: number; max?: number; above?: number } = {}): Check<number> {
  return (v, path) => {
    const n = opts.int ? int(v, path, opts.min, opts.max) : number(v, path);
    if (!opts.int && opts.min !== undefined) holds(n >= opts.min, path, `too small: ${n} < ${opts.min}`);
    if (!opts.int && opts.max !== undefined) holds(n <= opts.max, path, `too big: ${n} > ${opts.max}`);
    if (opts.above !== undefined) holds(n > opts.above, path, `too small: ${n} <= ${opts.above}`);
    return n;
  };
}

export const bool: Check<boolean> = (v, path) => (typeof v === "boolean" ? v : fail(path, `expected true or false, got ${kind(v)}`));

export function member<const T extends string>(values: readonly T[]): Check<T> {
  return (v, path) => oneOf(v, path, values);
}

export function list<T>(item: Check<T>, opts: { min?: number; max?: number } = {}): Check<T[]> {
  return (v, path) => {
    if (!Array.isArray(v)) return fail(path, `expected a list, got ${kind(v)}`);
    if (opts.min !== undefined) holds(v.length >= opts.min, path, `fewer than ${opts.min} items`);
    if (opts.max !== undefined) holds(v.length <= opts.max, path, `more than ${opts.max} items`);
    return v.map((x, i) => item(x, [...path, String(i)]));
  };
}

type Fields = Record<string, Check<unknown>>;
type Out<F extends Fields> = { [K in keyof F as undefined extends ReturnType<F[K]> ? never : K]: ReturnType<F[K]> } & {
  [K in keyof F as undefined extends ReturnType<F[K]> ? K : never]?: Exclude<ReturnType<F[K]>, undefined>;
};

/** An object of exactly these fields (any other key is a problem); a field may be `optional` or `withDefault`. */
export function fields<F extends Fields>(shape: F): Check<Out<F>> {
  const keys = Object.keys(shape);
  return (v, path) => {
    const o = object(v, path, keys);
    const out: Record<string, unknown> = {};
    for (const k of keys) {
      const value = shape[k](Object.hasOwn(o, k) ? o[k] : undefined, [...path, k]);
      if (value !== undefined) out[k] = value;
    }
    return out as Out<F>;
  };
}

export function optional<T>(check: Check<T>): Check<T | undefined> {
  return (v, path) => (v === undefined ? undefined : check(v, path));
}

export function withDefault<T>(check: Check<T>, value: () => T): Check<T> {
  return (v, path) => (v === undefined ? value() : check(v, path));
}

/**
 * `a` or `b`: a problem inside the value (deeper than `path`, or about more than its kind) is the
 * one reported; when neither fits the value's kind, `message`.
 */
export function either<A, B>(a: Check<A>, b: Check<B>, message: string): Check<A | B> {
  return (v, path) => {
    for (const check of [a, b]) {
      try {
        return check(v, path);
      } catch (err) {
        if (!(err instanceof ShapeProblem) || err.path.length > path.length || !err.message.startsWith("expected ")) throw err;
      }
    }
    return fail(path, message);
  };
}
