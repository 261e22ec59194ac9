// The import graph of src/cli/** read from the TypeScript sources (static and dynamic relative
// imports; `import type` counted apart, since it leaves nothing at run time): which modules
// outside the library API each CLI file still loads. Run as a script it prints the table:
//   npx tsx test/library/import-graph.ts
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * What a CLI action may load: the library API (index, engine, library, the agent registry), config,
 * its own helpers, and the error type it reports.
 */
export const ALLOWED = [/^src\/index\.ts$/, /^src\/agents\/registry\.ts$/, /^src\/engine\.ts$/, /^src\/engine\//, /^src\/library\//, /^src\/config\//, /^src\/cli\//, /^src\/repo\/errors\.ts$/, /^src\/version\.ts$/];

export interface CliImport {
  from: string;
  to: string;
  typeOnly: boolean;
}

export function cliImports(): CliImport[] {
  const out: CliImport[] = [];
  const dir = path.join(ROOT, "src", "cli");
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".ts")).sort()) {
    const from = `src/cli/${name}`;
    const text = readFileSync(path.join(dir, name), "utf8");
    const seen = new Set<string>();
    for (const m of text.matchAll(/(?:^|\n)\s*(import|export)\s+(type\s+)?[^;]*?\sfrom\s+"(\.{1,2}\/[^"]+)\.js"|import\(\s*"(\.{1,2}\/[^"]+)\.js"\s*\)/g)) {
      const spec = m[3] ?? m[4];
      const to = path.posix.normalize(path.posix.join("src/cli", `${spec}.ts`));
      const typeOnly = !!m[2];
      const key = `${to}:${typeOnly}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ from, to, typeOnly });
    }
  }
  return out;
}

export const isAllowed = (to: string): boolean => ALLOWED.some((r) => r.test(to));

/**
 * Modules whose job is presentation, which a CLI may load besides the library: number, time and
 * table formats, the terminal rendering of a session, the text of a stats or salvage report, the
 * line a retrying target prints. src/present/ holds the formatters that lived in policy modules.
 */
export const PRESENTATION = [/^src\/present\//, /^src\/sessions\/(describe|list-layout|render-terminal|stats-text)\.ts$/, /^src\/targets\/retry-report\.ts$/];

export const isPresentation = (to: string): boolean => PRESENTATION.some((r) => r.test(to));

/** Per CLI file, the modules outside the library API it loads at run time. */
export function exceptions(): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const i of cliImports()) {
    if (i.typeOnly || isAllowed(i.to)) continue;
    (out[i.from] ??= []).push(i.to);
  }
  for (const k of Object.keys(out)) out[k] = [...new Set(out[k])].sort();
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const ex = exceptions();
  const files = readdirSync(path.join(ROOT, "src", "cli")).filter((f) => f.endsWith(".ts")).sort();
  for (const f of files) {
    const list = ex[`src/cli/${f}`] ?? [];
    console.log(`${f.padEnd(26)} ${list.length ? list.map((t) => t.replace(/^src\//, "")).join(", ") : "library API, config and cli/ only"}`);
  }
  const total = Object.values(ex).reduce((n, l) => n + l.length, 0);
  const presentation = Object.values(ex).reduce((n, l) => n + l.filter(isPresentation).length, 0);
  const other = Object.entries(ex).filter(([, l]) => l.some((t) => !isPresentation(t)));
  console.log(`\n${total} run-time imports of internals in ${Object.keys(ex).length} of ${files.length} CLI files`);
  console.log(`${presentation} of them of presentation modules; ${total - presentation} of other internals, in ${other.length} file(s)${other.length ? `: ${other.map(([f]) => f).join(", ")}` : ""}`);
}
