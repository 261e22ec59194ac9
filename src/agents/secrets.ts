// Secret values of a SecretFile (types.ts) for agents without pi's file-by-file rules: a whole
// credentials file, the values at named JSON key paths, or settings that may carry keys.

import { looksRandom, mergeSecrets, MIN_SECRET_LENGTH, SECRET_KEY_NAME, type KnownSecret } from "../export/secrets.js";
import { MAX_JSON_FILE_BYTES, type FileReader, type SecretFile } from "./types.js";

/** Fields that name or describe a credential rather than hold it. */
const DESCRIPTIVE_KEY = /^(type|provider|kind|name|api|baseUrl|url|email|expires|expiresAt|scopes?|subscriptionType)$/i;

function strings(value: unknown, keys: string[], visit: (v: string, keys: string[]) => void): void {
  if (typeof value === "string") visit(value, keys);
  else if (Array.isArray(value)) for (const v of value) strings(v, keys, visit);
  else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) strings(v, [...keys, k], visit);
}

function matchesPath(keys: readonly string[], pattern: readonly string[]): boolean {
  const go = (i: number, j: number): boolean => {
    if (j === pattern.length) return true; // everything below a named key is secret
    if (pattern[j] === "**") return go(i, j + 1) || (i < keys.length && go(i + 1, j));
    return i < keys.length && (pattern[j] === "*" || pattern[j] === keys[i]) && go(i + 1, j + 1);
  };
  return go(0, 0);
}

/** The secrets in one secret file's text, labelled "<file> <key>". A file that is not JSON gives its random-looking words. */
export function secretsInFile(text: string, spec: SecretFile, label = spec.path): KnownSecret[] {
  const out = new Map<string, KnownSecret>();
  const add = (v: string, keys: string[]) => {
    const value = v.trim();
    if (value.length >= MIN_SECRET_LENGTH && !out.has(value)) out.set(value, { value, label: `${label} ${keys[0] ?? ""}`.trim() });
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch {
    for (const word of text.split(/[\s"'=:,]+/)) if (looksRandom(word)) add(word, []);
    return [...out.values()];
  }
  strings(parsed, [], (v, keys) => {
    const key = keys.at(-1) ?? "";
    if (DESCRIPTIVE_KEY.test(key)) return;
    if (spec.kind === "whole" && (SECRET_KEY_NAME.test(key) || looksRandom(v))) add(v, keys);
    else if (spec.kind === "keys" && spec.keys?.some((p) => matchesPath(keys, p))) add(v, keys);
    else if (spec.kind === "if-it-holds-any" && SECRET_KEY_NAME.test(key) && (looksRandom(v) || /key|token|secret/i.test(key))) add(v, keys);
  });
  return [...out.values()];
}

/** Every secret of `specs` that `files` holds, longest first (a key that contains another is masked whole). */
export async function secretValuesOf(files: FileReader, specs: readonly SecretFile[]): Promise<KnownSecret[]> {
  const out = new Map<string, KnownSecret>();
  // Loaded here, not at start-up: every command loads this module with the agents' registry.
  const { default: picomatch } = await import("picomatch");
  for (const spec of specs) {
    if (!files.roots.includes(spec.root)) continue;
    const isGlob = picomatch.scan(spec.path).isGlob;
    const match = isGlob ? picomatch(spec.path, { dot: true }) : (p: string) => p === spec.path;
    const refs = isGlob ? [] : [{ root: spec.root, path: spec.path }];
    if (isGlob) for await (const f of files.list(spec.root)) if (match(f.path)) refs.push({ root: f.root, path: f.path });
    for (const ref of refs) {
      if (!(await files.stat(ref))) continue;
      const text = (await files.read(ref, MAX_JSON_FILE_BYTES)).toString("utf8");
      for (const s of secretsInFile(text, spec, ref.path)) if (!out.has(s.value)) out.set(s.value, s);
    }
  }
  return [...out.values()].sort((a, b) => b.value.length - a.value.length);
}

/**
 * The secrets of every detected agent on this machine, for `export --redact` of any session: a key
 * of one agent pasted into another's prompt is masked too. Longest first.
 */
export async function detectedAgentSecrets(config: { agents: readonly { location: import("./types.js").AgentLocation; detected: boolean }[] }): Promise<KnownSecret[]> {
  const { liveFiles } = await import("./files.js");
  const { findAgent } = await import("./registry.js");
  const lists: KnownSecret[][] = [];
  for (const c of config.agents.filter((a) => a.detected)) {
    const adapter = findAgent(c.location.agent);
    if (adapter) lists.push(await adapter.secretValues(liveFiles(c.location.roots), c.location));
  }
  return mergeSecrets(...lists);
}
