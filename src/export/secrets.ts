// The secret values a user keeps in the agent dir, for `export --redact`: API keys and OAuth
// tokens in auth.json, provider keys and header values in models.json, and (pi 1.x) MCP server
// headers, env values and OAuth client secrets in mcp.json and MCP OAuth state (tokens, client
// secrets, PKCE verifiers) in mcp-auth.json. Any of these can be pasted into a prompt or printed
// by a tool, in any shape, so their exact values are masked wherever they occur, including values
// no key-shape pattern would recognise. pi 1.x also reads a project's `.pi/mcp.json`: a session's
// export masks the secrets of its own project's file too.

import { constants as fsConstants, promises as fs } from "node:fs";
import path from "node:path";
import { PI_AGENT_FILES } from "../agents/pi/paths.js";
import { RepoError } from "../repo/errors.js";

export interface KnownSecret {
  value: string;
  /** Where it came from, shown in the marker: "auth.json anthropic". */
  label: string;
}

/** Several lists of secrets as one: each value once (its first label), longest first, so that a key containing another is masked whole. */
export function mergeSecrets(...lists: readonly (readonly KnownSecret[])[]): KnownSecret[] {
  const out = new Map<string, KnownSecret>();
  for (const list of lists) for (const s of list) if (!out.has(s.value)) out.set(s.value, s);
  return [...out.values()].sort((a, b) => b.value.length - a.value.length);
}

/** Shorter values are too likely to occur by chance in ordinary text. */
export const MIN_SECRET_LENGTH = 8;

/** Property names whose string values are credentials. auth.json holds nothing else, so loosely. */
export const SECRET_KEY_NAME = /key|token|secret|passw|credential|auth|access|refresh|cookie/i;
/** models.json and mcp.json mix keys with settings (`maxTokensField: "max_completion_tokens"`): exact names only. */
const MODELS_SECRET_KEY = /^(?:api[_-]?key|key|token|access[_-]?token|secret|password|client[_-]?secret)$/i;
/**
 * mcp-auth.json (pi-mcp's McpOAuthState per server) holds tokens, client secrets, a PKCE verifier
 * and an OAuth state beside URLs, expiry times and discovery metadata: names decide, not shapes.
 */
const MCP_AUTH_SECRET_KEY = /token|secret|verifier|state|passw|credential|cookie/i;
const MCP_AUTH_PLAIN_KEY = /^(?:token_type|scope|serverUrl)$|ur[il]s?$/i;

/** Fields of a credential that name or describe it rather than hold it. */
const DESCRIPTIVE_KEY = /^(type|provider|kind|name|api|baseUrl|url|email|expires)$/i;

/** pi reads `!command` as "run this" and an all-caps name as an environment variable (resolve-config-value). */
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** A string that is probably random: no spaces, letters and digits mixed. */
export function looksRandom(v: string): boolean {
  return v.length >= 16 && !/\s/.test(v) && /[A-Za-z]/.test(v) && /\d/.test(v);
}

const VAR_REF = /\$\{[A-Za-z_][A-Za-z0-9_]*\}/;

/** mcp.json values may name variables inside them ("Bearer ${DOCS_TOKEN}"): pi sends their values. */
function expandVars(v: string, env: NodeJS.ProcessEnv): { text: string; vars: string[] } {
  const vars: string[] = [];
  const text = v.replace(new RegExp(VAR_REF.source, "g"), (ref) => {
    const name = ref.slice(2, -1);
    if (env[name]) vars.push(name);
    return env[name] ?? "";
  });
  return { text, vars };
}

function add(out: Map<string, KnownSecret>, value: string, label: string, env: NodeJS.ProcessEnv): void {
  let v = value.trim();
  if (v.startsWith("!")) return; // a command pi runs for the key: its output is not known here
  if (VAR_REF.test(v)) {
    const { text, vars } = expandVars(v, env);
    for (const name of vars) add(out, env[name]!, `${label} $${name}`, {});
    if (!vars.length) return; // only names of variables pi-guard cannot see
    v = text;
  }
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

/** Whether a string under property `key` of `file` (not inside headers or env) is a credential. */
function secretValue(file: string, key: string, value: string, keys: readonly string[]): boolean {
  // Model ids such as "qwen2.5-coder-32b" look random too: only auth.json is all credentials.
  if (file === "auth.json") return SECRET_KEY_NAME.test(key) || looksRandom(value);
  if (file === "mcp-auth.json") return !keys.includes("discovery") && MCP_AUTH_SECRET_KEY.test(key) && !MCP_AUTH_PLAIN_KEY.test(key);
  return MODELS_SECRET_KEY.test(key);
}

/** The provider or server a value belongs to, for the marker: mcp-auth.json keys are "mcp__<server>|<url>". */
function ownerOf(file: string, first: string): string {
  if (file !== "mcp-auth.json") return first;
  const [name, url] = first.includes("|") ? first.split("|", 2) : ["", first];
  if (name) return name.replace(/^mcp__/, "");
  return URL.canParse(url) ? new URL(url).host : "";
}

/** Walk a parsed config file; `keys` is the chain of property names (the first names the provider or server). */
function collect(value: unknown, keys: string[], file: string, out: Map<string, KnownSecret>, env: NodeJS.ProcessEnv, inHeaders = false): void {
  if (typeof value === "string") {
    const key = keys[keys.length - 1] ?? "";
    if (DESCRIPTIVE_KEY.test(key) && !inHeaders) return;
    const secret = secretValue(file, key, value, keys);
    // Headers carry keys and settings alike ("Content-Type: application/json"): a header counts
    // when its name sounds like a credential or its value looks random.
    const sent = VAR_REF.test(value) ? expandVars(value, env).text : value; // judged by what pi sends
    const header = inHeaders && (/auth|key|token|secret|cookie|session|signature|pass/i.test(key) || looksRandom(sent) || /^(?:bearer|basic|token)\s/i.test(sent));
    if (header || (!inHeaders && secret)) add(out, value, `${file} ${ownerOf(file, keys[0] ?? "")}`.trim(), env);
  } else if (Array.isArray(value)) {
    if (file === "mcp.json" && keys[keys.length - 1] === "args") argSecrets(value, `${file} ${keys[0] ?? ""}`.trim(), out, env);
    else for (const v of value) collect(v, keys, file, out, env, inHeaders);
  } else if (value && typeof value === "object") {
    // An MCP stdio server's env is judged like headers: `TOOLS_KEY` beside `LOG_LEVEL: "debug"`.
    const judged = (k: string) => /^headers$/i.test(k) || (file === "mcp.json" && k === "env");
    for (const [k, v] of Object.entries(value)) collect(v, [...keys, k], file, out, env, inHeaders || judged(k));
  }
}

const SECRET_FLAG = /^--?[A-Za-z0-9-]*(?:key|token|secret|passw|auth|credential)[A-Za-z0-9-]*$/i;

/** A stdio server's command line: `--api-key=VALUE`, or `--token VALUE` as two arguments. */
function argSecrets(args: readonly unknown[], label: string, out: Map<string, KnownSecret>, env: NodeJS.ProcessEnv): void {
  args.forEach((arg, i) => {
    if (typeof arg !== "string") return;
    const eq = arg.indexOf("=");
    if (eq > 0 && SECRET_FLAG.test(arg.slice(0, eq))) add(out, arg.slice(eq + 1), label, env);
    const next = args[i + 1];
    if (eq < 0 && SECRET_FLAG.test(arg) && typeof next === "string" && !next.startsWith("-")) add(out, next, label, env);
  });
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

/** The files of the agent dir that hold credentials (PI_AGENT_FILES: auth.json, models.json, and pi 1.x's mcp.json and mcp-auth.json). */
export const SECRET_FILES: readonly string[] = PI_AGENT_FILES.filter((f) => f.secret !== "no").map((f) => f.name);

/** Where a file keeps its per-provider (per-server) part: `providers` in models.json, `mcpServers` in mcp.json. */
const SECTION: Record<string, string> = { "models.json": "providers", "mcp.json": "mcpServers" };

/** A project's own MCP servers, which pi 1.x also reads (in a trusted project): `<cwd>/.pi/mcp.json`. */
export const PROJECT_MCP_FILE = path.join(".pi", "mcp.json");
/** Larger than any mcp.json a person writes: a bigger one is refused rather than read whole. */
const MAX_PROJECT_MCP_BYTES = 4 * 1024 * 1024;

/**
 * The secrets of the agent dir's credential files, longest first (so a key that contains another
 * is masked whole). Providers are the top-level names (auth.json), `providers.<name>`
 * (models.json) or `mcpServers.<name>` (mcp.json); mcp-auth.json is keyed by server and URL.
 * With `projectDir` (the session header's cwd), also those of its `.pi/mcp.json`, marked as
 * `project mcp.json <server>`; masked whether or not pi trusts the project (a secret is one either way).
 */
export async function agentSecrets(agentDir: string, env: NodeJS.ProcessEnv = process.env, projectDir?: string): Promise<KnownSecret[]> {
  const out = new Map<string, KnownSecret>();
  for (const file of SECRET_FILES) {
    const text = await readConfig(agentDir, file);
    if (text !== undefined) collectFile(text, file, out, env);
  }
  const text = projectDir ? await readProjectMcp(projectDir) : undefined;
  if (text !== undefined) {
    const project = new Map<string, KnownSecret>();
    collectFile(text, "mcp.json", project, env);
    for (const [v, s] of project) if (!out.has(v)) out.set(v, { value: v, label: `project ${s.label}` });
  }
  return [...out.values()].sort((a, b) => b.value.length - a.value.length);
}

/** The secrets in the text of one of SECRET_FILES, however it was read (a live dir, a snapshot: src/agents/pi). */
export function secretsInText(text: string, file: string, env: NodeJS.ProcessEnv = process.env): KnownSecret[] {
  const out = new Map<string, KnownSecret>();
  collectFile(text, file, out, env);
  return [...out.values()];
}

/**
 * `<projectDir>/.pi/mcp.json`. The cwd comes from the session file (hostile): anything but an
 * absolute path, and anything there but a regular file, is no project file; one that cannot be
 * read, or is too large to be one, refuses the export as an unreadable agent dir file does.
 */
async function readProjectMcp(projectDir: string): Promise<string | undefined> {
  if (!path.isAbsolute(projectDir) || projectDir.includes("\0")) return undefined;
  const file = path.join(projectDir, PROJECT_MCP_FILE);
  const refuse = (why: string) => new RepoError(`--redact cannot read ${file} to learn the keys to mask: ${why}`, "io");
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw refuse(code ?? (err as Error).message);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) return undefined;
    if (st.size > MAX_PROJECT_MCP_BYTES) throw refuse(`${st.size} bytes, more than an mcp.json holds`);
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}

/** Whether the text of one of SECRET_FILES holds any credential (doctor: is a readable mcp.json a leak?). */
export function holdsSecrets(text: string, file: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const out = new Map<string, KnownSecret>();
  collectFile(text, file, out, env);
  return out.size > 0;
}

function collectFile(text: string, file: string, out: Map<string, KnownSecret>, env: NodeJS.ProcessEnv): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.replace(/^\uFEFF/, "")); // pi accepts a BOM in mcp.json
  } catch {
    for (const s of quotedStrings(text)) add(out, s, file, env);
    return;
  }
  const section = SECTION[file];
  const root = section && parsed && typeof parsed === "object" && section in parsed ? (parsed as Record<string, unknown>)[section] : parsed;
  collect(root, [], file, out, env);
}
