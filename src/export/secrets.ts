// The secret values a user keeps in the agent dir, for `export --redact`: API keys and OAuth
// tokens in auth.json, and provider keys and header values in models.json. Any of these can be
// pasted into a prompt or printed by a tool, in any shape, so their exact values are masked
// wherever they occur, including values no key-shape pattern would recognise.

import { promises as fs } from "node:fs";
import path from "node:path";
import { RepoError } from "../repo/errors.js";

export interface KnownSecret {
  value: string;
  /** Where it came from, shown in the marker: "auth.json anthropic". */
  label: string;
}

/** Shorter values are too likely to occur by chance in ordinary text. */
export const MIN_SECRET_LENGTH = 8;

/** Property names whose string values are credentials. auth.json holds nothing else, so loosely. */
export const SECRET_KEY_NAME = /key|token|secret|passw|credential|auth|access|refresh|cookie/i;
/** models.json mixes keys with settings (`maxTokensField: "max_completion_tokens"`): exact names only. */
const MODELS_SECRET_KEY = /^(?:api[_-]?key|key|token|access[_-]?token|secret|password)$/i;

/** Fields of a credential that name or describe it rather than hold it. */
const DESCRIPTIVE_KEY = /^(type|provider|kind|name|api|baseUrl|url|email|expires)$/i;

/** pi reads `!command` as "run this" and an all-caps name as an environment variable (resolve-config-value). */
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** A string that is probably random: no spaces, letters and digits mixed. */
export function looksRandom(v: string): boolean {
  return v.length >= 16 && !/\s/.test(v) && /[A-Za-z]/.test(v) && /\d/.test(v);
}

function add(out: Map<string, KnownSecret>, value: string, label: string, env: NodeJS.ProcessEnv): void {
  const v = value.trim();
  if (v.startsWith("!")) return; // a command pi runs for the key: its output is not known here
  if (ENV_NAME.test(v) && env[v]) {
    // pi uses the variable's value; the name itself is no secret.
    add(out, env[v]!, `${label} $${v}`, {}); // no second lookup: A=B, B=A must not loop
    return;
  }
  // An unset OPENAI_API_KEY-style name: pi ran with a variable we cannot see; masking the name
  // everywhere would only hide ordinary shell text.
  if (ENV_NAME.test(v) && v.includes("_")) return;
  if (v.length < MIN_SECRET_LENGTH) return;
  if (!out.has(v)) out.set(v, { value: v, label });
  // "Bearer xyz" / "Basic xyz" in a header: the token alone is the secret too.
  const scheme = /^(?:bearer|basic|token|bot)\s+(\S+)$/i.exec(v);
  if (scheme && scheme[1].length >= MIN_SECRET_LENGTH && !out.has(scheme[1])) out.set(scheme[1], { value: scheme[1], label });
}

/** Walk a parsed config file; `keys` is the chain of property names (the first names the provider). */
function collect(value: unknown, keys: string[], file: string, out: Map<string, KnownSecret>, env: NodeJS.ProcessEnv, inHeaders = false): void {
  if (typeof value === "string") {
    const key = keys[keys.length - 1] ?? "";
    if (DESCRIPTIVE_KEY.test(key) && !inHeaders) return;
    // Model ids such as "qwen2.5-coder-32b" look random too: only auth.json is all credentials.
    const secret = file === "auth.json" ? SECRET_KEY_NAME.test(key) || looksRandom(value) : MODELS_SECRET_KEY.test(key);
    // Headers carry keys and settings alike ("Content-Type: application/json"): a header counts
    // when its name sounds like a credential or its value looks random.
    const header = inHeaders && (/auth|key|token|secret|cookie|session|signature|pass/i.test(key) || looksRandom(value) || /^(?:bearer|basic|token)\s/i.test(value));
    if (header || (!inHeaders && secret)) add(out, value, `${file} ${keys[0] ?? ""}`.trim(), env);
  } else if (Array.isArray(value)) {
    for (const v of value) collect(v, keys, file, out, env, inHeaders);
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) collect(v, [...keys, k], file, out, env, inHeaders || /^headers$/i.test(k));
  }
}

/** Every quoted string of a file that is not valid JSON: a damaged file still holds its keys. */
function quotedStrings(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/"((?:[^"\\\n]|\\.){8,})"/g)) {
    try {
      out.push(JSON.parse(`"${m[1]}"`) as string);
    } catch {
      out.push(m[1]);
    }
  }
  return out;
}

async function readConfig(agentDir: string, file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(path.join(agentDir, file), "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    // Redacting without knowing the keys would pass them through: refuse instead.
    throw new RepoError(`--redact cannot read ${path.join(agentDir, file)} to learn the keys to mask: ${code ?? (err as Error).message}`, "io");
  }
}

/**
 * The secrets of auth.json and models.json, longest first (so a key that contains another is
 * masked whole). Providers are the top-level names (auth.json) or `providers.<name>` (models.json).
 */
export async function agentSecrets(agentDir: string, env: NodeJS.ProcessEnv = process.env): Promise<KnownSecret[]> {
  const out = new Map<string, KnownSecret>();
  for (const file of ["auth.json", "models.json"]) {
    const text = await readConfig(agentDir, file);
    if (text === undefined) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      for (const s of quotedStrings(text)) add(out, s, file, env);
      continue;
    }
    const root = file === "models.json" && parsed && typeof parsed === "object" && "providers" in parsed ? (parsed as { providers: unknown }).providers : parsed;
    collect(root, [], file, out, env);
  }
  return [...out.values()].sort((a, b) => b.value.length - a.value.length);
}
