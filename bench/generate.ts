// Deterministic generator of a realistic pi agent dir (~/.pi/agent) for benchmarks.
// Library: generateAgentDir(), appendToLargest(). CLI:
//   node dist/bench/generate.js --out DIR [--size 1GiB] [--seed 1] [--append N]
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { appendToLargest } from "./append.js";
import { sampleCompression } from "./compression.js";
import { Prng } from "./prng.js";
import { formatBytes, parseSize } from "./size.js";
import { writeSession } from "./sessionFile.js";
import { loadTextPool, sliceText, type TextPool } from "./textPool.js";

export { appendToLargest } from "./append.js";

const GIB = 1024 ** 3;
const SESSIONS_PER_GIB = 230;
/** Fixed epoch so the tree does not depend on when it was generated. */
const EPOCH_MS = Date.UTC(2026, 0, 15, 9, 0, 0);
const PROJECTS = ["api-server", "web-app", "pi-guard", "infra", "notes", "ml-experiments", "cli-tools", "dotfiles", "mobile", "docs-site", "game", "scraper"];

/** The package's node_modules, found by walking up: this file runs from bench/ (tsx, vitest) and from dist/bench/. */
export const DEFAULT_POOL_ROOT = findNodeModules(dirname(fileURLToPath(import.meta.url)));

function findNodeModules(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "node_modules", "commander"))) return join(dir, "node_modules");
    if (dirname(dir) === dir) return resolve(from, "../../node_modules");
  }
}

export interface GenerateOptions {
  out: string;
  sizeBytes: number;
  seed: string | number;
  /** Where to read real text from; defaults to this project's node_modules. */
  poolRoot?: string;
  pool?: TextPool;
}

export interface GenerateResult {
  sessions: number;
  sessionBytes: number;
  otherBytes: number;
  ms: number;
}

/** Session size classes from the brief: share of sessions and byte range. */
const CLASSES = [
  { share: 0.05, min: 20e6, max: 80e6 },
  { share: 0.25, min: 1e6, max: 10e6 },
  { share: 0.7, min: 20e3, max: 1e6 },
];

/** Session sizes for the whole tree, scaled so they add up to `budget`. */
function planSessionSizes(prng: Prng, count: number, budget: number): number[] {
  const sizes: number[] = [];
  for (const [i, c] of CLASSES.entries()) {
    const n = i === CLASSES.length - 1 ? count - sizes.length : Math.round(count * c.share);
    for (let k = 0; k < n; k++) sizes.push(prng.int(c.min, c.max));
  }
  // Shuffle so big sessions are spread over projects and time.
  for (let i = sizes.length - 1; i > 0; i--) {
    const j = prng.int(0, i);
    [sizes[i], sizes[j]] = [sizes[j], sizes[i]];
  }
  const scale = budget / sizes.reduce((a, b) => a + b, 0);
  return sizes.map((s) => Math.max(2_000, Math.round(s * scale)));
}

/** The non-session files pi and its extensions keep in the agent dir. */
function writeOtherFiles(out: string, prng: Prng, pool: TextPool, sizeBytes: number): number {
  let bytes = 0;
  const put = (rel: string, data: string | Buffer, mode = 0o644): void => {
    const p = join(out, rel);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, data, { mode });
    chmodSync(p, mode); // the umask must not weaken auth.json's 0600
    bytes += Buffer.byteLength(data);
  };
  const fakeKey = (prefix: string): string => prefix + prng.bytes(40).toString("base64url");
  put("auth.json", JSON.stringify({
    anthropic: { type: "api_key", key: fakeKey("sk-ant-api03-FAKE-") },
    openai: { type: "api_key", key: fakeKey("sk-proj-FAKE-") },
    "openai-codex": { type: "oauth", access: fakeKey("FAKE."), refresh: fakeKey("rt_FAKE"), expires: EPOCH_MS + 3_600_000 },
  }, null, 2), 0o600);
  put("models.json", JSON.stringify({
    providers: { ollama: { baseUrl: "http://localhost:11434/v1", api: "openai-completions", apiKey: "ollama", models: [{ id: "qwen2.5-coder:14b" }, { id: "llama3.1:8b" }] } },
  }, null, 2));
  put("settings.json", JSON.stringify({ defaultProvider: "anthropic", defaultModel: "claude-sonnet-4-5", defaultThinkingLevel: "medium", theme: "dark", packages: ["npm:pi-hermes-memory"] }, null, 2));
  put("keybindings.json", JSON.stringify({ "app.model.cycleForward": "ctrl+p" }, null, 2));
  put("extensions/foo/index.ts", `// example extension\n${sliceText(pool, prng, 3_000)}\n`);
  put("prompts/review.md", `Review the staged changes.\n${sliceText(pool, prng, 800)}\n`);
  // An opaque database: a few MB that a backup must carry but cannot compress.
  const dbBytes = Math.min(4 * 1024 * 1024, Math.max(64 * 1024, Math.round(sizeBytes / 256)));
  put("pi-hermes-memory/sessions.db", prng.bytes(dbBytes));
  return bytes;
}

export function generateAgentDir(opts: GenerateOptions): GenerateResult {
  const started = Date.now();
  const pool = opts.pool ?? loadTextPool(opts.poolRoot ?? DEFAULT_POOL_ROOT);
  const prng = new Prng(`pi-agent:${opts.seed}`);
  mkdirSync(opts.out, { recursive: true });
  const otherBytes = writeOtherFiles(opts.out, prng, pool, opts.sizeBytes);
  const count = Math.max(3, Math.round((SESSIONS_PER_GIB * opts.sizeBytes) / GIB));
  const sizes = planSessionSizes(prng, count, Math.max(count * 2_000, opts.sizeBytes - otherBytes));
  // Sessions over the ~120 days before the epoch, oldest first, as a real history grows.
  const starts = sizes.map(() => EPOCH_MS - prng.int(0, 120 * 86_400_000)).sort((a, b) => a - b);
  let sessionBytes = 0;
  for (let i = 0; i < sizes.length; i++) {
    const cwd = `/home/dev/code/${prng.pick(PROJECTS)}`;
    const dirName = `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
    const iso = new Date(starts[i]).toISOString();
    const sessionId = prng.uuidV7(starts[i]);
    const path = join(opts.out, "sessions", dirName, `${iso.replace(/[:.]/g, "-")}_${sessionId}.jsonl`);
    mkdirSync(dirname(path), { recursive: true });
    // Each session gets its own PRNG so changing one size does not reshuffle the rest.
    sessionBytes += writeSession({ path, cwd, sessionId, startMs: starts[i], targetBytes: sizes[i] }, new Prng(`${opts.seed}:${sessionId}`), pool);
  }
  return { sessions: sizes.length, sessionBytes, otherBytes, ms: Date.now() - started };
}

function main(): void {
  const { values } = parseArgs({
    options: {
      out: { type: "string" },
      size: { type: "string", default: "1GiB" },
      seed: { type: "string", default: "1" },
      append: { type: "string" },
      "no-ratio": { type: "boolean", default: false },
    },
  });
  if (!values.out) {
    console.error("usage: node dist/bench/generate.js --out DIR [--size 1GiB] [--seed 1] [--append N] [--no-ratio]");
    process.exit(2);
  }
  const out = resolve(values.out);
  if (values.append) {
    // Append mode: simulate pi continuing the N largest sessions of an existing tree.
    const r = appendToLargest(out, loadTextPool(DEFAULT_POOL_ROOT), Number(values.append));
    console.log(`appended ${r.bytes} bytes to ${r.files.length} sessions`);
    return;
  }
  const r = generateAgentDir({ out, sizeBytes: parseSize(values.size), seed: values.seed });
  console.log(`wrote ${r.sessions} sessions (${formatBytes(r.sessionBytes)}) + ${formatBytes(r.otherBytes)} other files to ${out} in ${(r.ms / 1000).toFixed(1)} s`);
  if (!values["no-ratio"]) {
    const c = sampleCompression(out);
    const zstd = c.zstd3Ratio === null ? "" : `, zstd -3 ${c.zstd3Ratio.toFixed(2)}x`;
    console.log(`compression of a ${formatBytes(c.sampledBytes)} sample: gzip -1 ${c.gzip1Ratio.toFixed(2)}x${zstd}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
