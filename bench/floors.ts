// The floors under two of issue 20's session targets, measured on the corpus itself, in-process,
// on one core (CPU time of this thread; nothing else of pi-guard runs):
//   1. Reading, decoding and JSON.parse of every line: what a cold `sessions list` must do at least
//      once per byte, since a summary counts and dates every entry (the parse workers do exactly
//      this, plus the summary); the list can take no less than this CPU over the cores.
//   2. summarizeFile, what those workers run: the parse and the summary.
//   3. The search index's own text extraction (the parser and `indexedEntry` the build uses).
//   4. FTS5 inserts of those texts alone into a fresh table made as the index's is (contentless,
//      contentless_delete=1, the same tokenizer, the same pragmas, 2 MiB transactions): one SQLite
//      database has one writer, so a cold build cannot pass this rate however the parsing is spread.
//   5. The same inserts with no disk and FTS5's cheapest tokenizer: what no setting of one table can beat.
//   npm run build && node dist/bench/floors.js --corpus <dir with home/.pi/agent/sessions> [--limit 256MiB]
// A kept `node dist/bench/sessions.js --keep` corpus is such a dir. Writes nothing but a temp database.

import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadSessionBytes } from "../src/sessions/read.js";
import { indexedEntry } from "../src/sessions/search-text.js";
import { TOKENIZE } from "../src/sessions/search-index.js";
import { sqlite } from "../src/sqlite.js";
import { summarizeFile } from "../src/sessions/summary.js";
import { formatBytes, parseSize } from "./size.js";

const { values: args } = parseArgs({ options: { corpus: { type: "string" }, limit: { type: "string" } } });
if (!args.corpus) throw new Error("usage: floors --corpus DIR [--limit SIZE]");
const limit = args.limit ? parseSize(args.limit) : Infinity;

function sessionFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sessionFiles(p));
    else if (e.isFile() && e.name.endsWith(".jsonl")) out.push(p);
  }
  return out.sort();
}

/** CPU milliseconds of this thread spent in `fn`. */
function cpu<T>(fn: () => T): [T, number] {
  const t = process.cpuUsage();
  const r = fn();
  const u = process.cpuUsage(t);
  return [r, (u.user + u.system) / 1000];
}

const work = mkdtempSync(join(tmpdir(), "pi-guard-floors-"));
const Sqlite = sqlite();
const db = new Sqlite(join(work, "fts.db"));
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
db.pragma("cache_size = -256");
db.exec(`CREATE VIRTUAL TABLE fts USING fts5(text, content='', contentless_delete=1, ${TOKENIZE})`);
// 5. The best case FTS5 itself allows: no disk (an in-memory database) and its cheapest tokenizer
// ('ascii': no stemming, no Unicode folding). It changes what matches, so it is only a bound.
const bare = new Sqlite(":memory:");
bare.exec("CREATE VIRTUAL TABLE fts USING fts5(text, content='', contentless_delete=1, tokenize='ascii')");
const inserter = (d: typeof db) => {
  const insert = d.prepare("INSERT INTO fts (rowid, text) VALUES (?, ?)");
  return d.transaction((texts: string[], first: number) => texts.forEach((t, i) => insert.run(first + i, t)));
};
const insertAll = inserter(db);
const insertBare = inserter(bare);

let bytes = 0;
let files = 0;
let lines = 0;
let chars = 0;
let rowid = 1;
let readMs = 0;
let decodeMs = 0;
let parseMs = 0;
let extractMs = 0;
let insertMs = 0;
let summaryMs = 0;
let bareMs = 0;
let pending: string[] = [];
let pendingBytes = 0;
const flush = () => {
  insertMs += cpu(() => insertAll(pending, rowid))[1];
  bareMs += cpu(() => insertBare(pending, rowid))[1];
  rowid += pending.length;
  pending = [];
  pendingBytes = 0;
};
const corpusFiles = sessionFiles(join(args.corpus, "home/.pi/agent/sessions"));
// Read once untimed, so that the timed read is the page cache's, as for a corpus just written (the
// sessions bench lists the corpus it has just generated): a first read from disk is the disk's speed.
for (let seen = 0, i = 0; i < corpusFiles.length && seen < limit; i++) seen += readFileSync(corpusFiles[i]).length;
for (const file of corpusFiles) {
  if (bytes >= limit) break;
  const [data, readCpu] = cpu(() => readFileSync(file));
  readMs += readCpu;
  bytes += data.length;
  files++;
  // Line by line, as the workers do: a whole file decoded at once is one string, two bytes a
  // character as soon as one line is not ASCII, and slower to decode and to parse.
  const lineTexts: string[] = [];
  decodeMs += cpu(() => {
    for (let at = 0; at < data.length; ) {
      const nl = data.indexOf(0x0a, at);
      const end = nl === -1 ? data.length : nl;
      if (end > at) lineTexts.push(data.toString("utf8", at, end));
      at = end + 1;
    }
  })[1];
  parseMs += cpu(() => lineTexts.forEach((t) => JSON.parse(t)))[1];
  lines += lineTexts.length;
  summaryMs += cpu(() => summarizeFile(file, "floors"))[1];
  const [texts, ms] = cpu(() => loadSessionBytes(data, file).entries.flatMap((e) => indexedEntry(e)?.text ?? []));
  extractMs += ms;
  for (const t of texts) chars += t.length;
  pending.push(...texts);
  pendingBytes += data.length;
  if (pendingBytes >= 2 * 1024 * 1024) flush();
}
if (pending.length) flush();
db.close();
bare.close();
const indexBytes = statSync(join(work, "fts.db")).size;
rmSync(work, { recursive: true, force: true });

const mbs = (ms: number) => (bytes / 1e6 / (ms / 1000)).toFixed(1);
const cores = availableParallelism(); // the list runs a parse worker per core
console.log(`corpus: ${files} sessions, ${formatBytes(bytes)} (${bytes} B), ${lines} lines; indexed text ${(chars / 1e6).toFixed(1)} M characters; FTS5 table ${formatBytes(indexBytes)}`);
const floor = readMs + decodeMs + parseMs;
console.log(`1. read ${(readMs / 1000).toFixed(2)} s + UTF-8 decode ${(decodeMs / 1000).toFixed(2)} s + JSON.parse of every line ${(parseMs / 1000).toFixed(2)} s CPU (${mbs(parseMs)} MB/s per core for the parse alone) -> a cold list on ${cores} cores needs >= ${(floor / cores / 1000).toFixed(2)} s`);
console.log(`2. summarizeFile (what the list's parse workers run): ${(summaryMs / 1000).toFixed(2)} s CPU, ${mbs(summaryMs)} MB/s per core -> ${(summaryMs / cores / 1000).toFixed(2)} s on ${cores} cores`);
console.log(`3. parse + indexedEntry (the build's extraction): ${(extractMs / 1000).toFixed(2)} s CPU, ${mbs(extractMs)} MB/s per core`);
console.log(`4. FTS5 inserts alone (one writer): ${(insertMs / 1000).toFixed(2)} s CPU, ${mbs(insertMs)} MB/s of corpus, ${(chars / 1e6 / (insertMs / 1000)).toFixed(1)} M characters/s -> a cold build needs >= ${(insertMs / 1000).toFixed(1)} s`);
console.log(`5. FTS5 at its cheapest (in memory, 'ascii' tokenizer; other results): ${(bareMs / 1000).toFixed(2)} s CPU, ${mbs(bareMs)} MB/s of corpus`);
