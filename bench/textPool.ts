// Real text for tool results and assistant prose. Random letters would compress
// far worse (or, if repetitive, far better) than real sessions, so the benchmark
// would measure the wrong thing. node_modules is real code and docs that is
// always present on a machine that can run the benchmark.
import { lstatSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import type { Prng } from "./prng.js";

const TEXT_EXTENSIONS = [".js", ".ts", ".md", ".json"];
const MAX_FILE_BYTES = 256 * 1024; // skip huge bundles so the pool stays varied

export interface TextPool {
  text: string;
  /** Relative paths of the files read, used to make plausible tool-call arguments. */
  paths: string[];
}

function listTextFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names.sort()) {
      // Dot folders (node_modules/.vite holds vitest's results, rewritten by every run) would make
      // the pool, and so every generated tree, differ from one run to the next.
      if (name.startsWith(".")) continue;
      const full = join(dir, name);
      // A symlink may loop (a stray node_modules/node_modules -> node_modules made the walk fail
      // with ELOOP) or repeat a folder already walked: only real files and folders count.
      if (lstatSync(full, { throwIfNoEntry: false })?.isSymbolicLink()) continue;
      const st = statSync(full, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(full);
      else if (st.isFile() && st.size > 0 && st.size <= MAX_FILE_BYTES && TEXT_EXTENSIONS.some((e) => name.endsWith(e))) {
        out.push(full);
      }
    }
  };
  walk(root);
  return out;
}

/**
 * Reads up to `maxBytes` of text, taking every k-th file of the sorted list so
 * the pool covers many packages rather than the alphabetically first few.
 * Sorted order keeps the pool, and therefore the tree, deterministic.
 */
export function loadTextPool(root: string, maxBytes = 48 * 1024 * 1024): TextPool {
  const files = listTextFiles(root);
  if (files.length === 0) throw new Error(`no .js/.ts/.md/.json files under ${root}`);
  let total = 0;
  for (const f of files) total += statSync(f).size;
  const stride = Math.max(1, Math.ceil(total / maxBytes));
  const parts: string[] = [];
  const paths: string[] = [];
  let size = 0;
  for (let i = 0; i < files.length && size < maxBytes; i += stride) {
    const body = readFileSync(files[i], "utf8");
    parts.push(body);
    paths.push(relative(root, files[i]));
    size += body.length;
  }
  return { text: parts.join("\n"), paths };
}

/** A slice of about `length` chars starting at a line boundary, as a `read` tool would return. */
export function sliceText(pool: TextPool, prng: Prng, length: number): string {
  const len = Math.min(length, pool.text.length - 1);
  let start = prng.int(0, pool.text.length - len - 1);
  const nl = pool.text.indexOf("\n", start);
  if (nl !== -1 && nl - start < 200 && nl + 1 + len <= pool.text.length) start = nl + 1;
  return pool.text.slice(start, start + len);
}
