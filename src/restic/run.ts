// Running restic: the repository and the password go through restic's environment (never argv,
// where `ps` shows them), its output is parsed as hostile input, and its failures become one line.
import { execa, type ResultPromise } from "execa";
import { RepoError } from "../repo/errors.js";
import { findRestic, type ResticBinary } from "./binary.js";

/** Where restic should work and how it unlocks the repository. */
export interface ResticSession {
  /** restic's repository string (the text after `restic:`). */
  repository: string;
  /** Exactly one of these: a file restic reads the password from, or the password itself. */
  passwordFile?: string;
  password?: string;
  env?: NodeJS.ProcessEnv;
}

export interface ResticRunOptions {
  /** Called with each stdout line parsed as JSON (the caller validates its shape). */
  onJson?: (value: unknown) => void;
  /** Exit codes that are not failures (backup's 3: some files unreadable, snapshot made). */
  okExitCodes?: number[];
  signal?: AbortSignal;
}

export interface ResticResult {
  exitCode: number;
  /** stdout when no onJson was given (bounded), else "". */
  stdout: string;
  stderr: string;
}

// restic's own variables that would make it read another repository or password than ours.
const OVERRIDDEN = ["RESTIC_REPOSITORY", "RESTIC_REPOSITORY_FILE", "RESTIC_PASSWORD", "RESTIC_PASSWORD_FILE", "RESTIC_PASSWORD_COMMAND", "RESTIC_KEY_HINT"];

/** The environment restic runs with: the caller's (backend credentials such as AWS_*), ours on top. */
export function resticEnv(s: ResticSession): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...(s.env ?? process.env) };
  for (const k of OVERRIDDEN) delete env[k];
  env.RESTIC_REPOSITORY = s.repository;
  if (s.passwordFile !== undefined) env.RESTIC_PASSWORD_FILE = s.passwordFile;
  else if (s.password !== undefined) env.RESTIC_PASSWORD = s.password;
  // restic asks on a terminal when it has no password: it must fail instead, we said why already.
  return env;
}

const MAX_TEXT = 4 * 1024 * 1024;

/**
 * Start restic; the caller iterates or awaits. Never a shell, never the password in argv. Not
 * async: a subprocess is a thenable, which an async function would wait for.
 */
export function spawnRestic(bin: ResticBinary, s: ResticSession, args: string[], opts: { signal?: AbortSignal; binary?: boolean } = {}): ResultPromise {
  return execa(bin.path, args, {
    env: resticEnv(s),
    extendEnv: false,
    reject: false,
    stdin: "ignore",
    cancelSignal: opts.signal,
    maxBuffer: MAX_TEXT,
    buffer: { stdout: false, stderr: true },
    encoding: opts.binary ? "buffer" : "utf8",
  });
}

/** Run restic to the end; with onJson, each stdout line must be JSON. Fails with one RepoError line. */
export async function runRestic(s: ResticSession, args: string[], opts: ResticRunOptions = {}): Promise<ResticResult> {
  const child = spawnRestic(await findRestic(s.env ?? process.env), s, args, { signal: opts.signal });
  let stdout = "";
  let badLine: string | undefined;
  // The lines after the first one that is not JSON, a little of them: restic prints damage there.
  let badText = "";
  for await (const line of child.iterable({ from: "stdout" })) {
    const text = String(line);
    if (!opts.onJson) {
      if (stdout.length < MAX_TEXT) stdout += `${text}\n`;
      continue;
    }
    if (text.trim() === "") continue;
    if (badLine !== undefined) {
      if (badText.length < 4096) badText += `${text}\n`;
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      badLine = text;
      badText = `${text}\n`;
      continue;
    }
    opts.onJson(value);
  }
  const r = await child;
  const stderr = typeof r.stderr === "string" ? r.stderr : "";
  const exitCode = typeof r.exitCode === "number" ? r.exitCode : -1;
  if (r.isCanceled) throw new RepoError("cancelled while restic was running", "io");
  if (exitCode !== 0 && !(opts.okExitCodes ?? []).includes(exitCode)) throw resticError(args[0], exitCode, stderr, r.signal);
  if (badLine !== undefined) {
    // `restic find` prints "Unable to load tree …" among its JSON and exits 0: that is damage, not another program.
    const damage = resticDamage(`${badText}\n${stderr}`);
    throw damage ? damagedError(args[0], damage) : unexpectedOutput(args[0], badLine);
  }
  return { exitCode, stdout, stderr };
}

const short = (id: string) => id.slice(0, 8);

/**
 * How restic 0.14 names damaged repository data, checked against real damage: a corrupted index
 * file, tree pack or data pack, a truncated or a missing pack, a lost index. Each pattern gives a
 * short description; the first that matches anywhere in the text wins, so the more specific come first.
 */
const DAMAGE: [RegExp, (m: RegExpExecArray) => string][] = [
  [/Unable to load tree ([0-9a-f]{8,64})(?:\s*\.\.\. which belongs to snapshot ([0-9a-f]{8,64}))?/, (m) => `tree ${short(m[1])}${m[2] ? ` of snapshot ${short(m[2])}` : ""} cannot be read`],
  [/load <(index|snapshot|key)\/([0-9a-f]{8,64})>: (.+)/, (m) => `${m[1]} file ${short(m[2])} cannot be read (${m[3]})`],
  [/decrypting blob ([0-9a-f]{8,64}) failed: (.+)/, (m) => `blob ${short(m[1])} cannot be decrypted (${m[2]})`],
  [/\/data\/[0-9a-f]{2}\/([0-9a-f]{64}): no such file or directory/, (m) => `pack ${short(m[1])} is missing`],
  [/<data\/([0-9a-f]{8,64})>[^\n]*(?:unexpected EOF|: EOF$)/m, (m) => `pack ${short(m[1])} is truncated`],
  [/\bid ([0-9a-f]{64}) not found in repository/, (m) => `blob ${short(m[1])} is missing (no index names a pack for it)`],
  [/ignoring error for (.+?): (.*(?:ciphertext verification failed|invalid data returned).*)/, (m) => `cannot decrypt the data of ${m[1]} (${m[2]})`],
];

/** What restic's output says is damaged in the repository; undefined when it names no damage. */
export function resticDamage(text: string): string | undefined {
  const t = text.replace(/\r/g, "");
  for (const [re, describe] of DAMAGE) {
    const m = re.exec(t);
    if (m) return clean(describe(m));
  }
  return undefined;
}

/** Damage is exit 3 (kind corrupt), named in one line. */
function damagedError(command: string, damage: string): RepoError {
  return new RepoError(`restic ${command}: the restic repository is damaged: ${damage}; \`pi-guard check --read-data\` (restic check --read-data) names all of it`, "corrupt");
}

/** restic printed something pi-guard cannot read: name the command and show the start of it. */
export function unexpectedOutput(command: string, what: string): RepoError {
  const shown = JSON.stringify(what.length > 80 ? `${what.slice(0, 80)}…` : what);
  return new RepoError(`restic ${command} printed output pi-guard cannot read (${shown}); is it really restic ${"≥"} 0.14?`, "io");
}

/** One line from restic's stderr and exit code, for the mistakes a user can fix. */
export function resticError(command: string, exitCode: number, stderr: string, signal?: string): RepoError {
  const text = stderr.replace(/\r/g, "");
  const has = (re: RegExp) => re.test(text);
  if (has(/wrong password or no key found/i)) return new RepoError("wrong password for the restic repository (restic: wrong password or no key found)", "wrong-password");
  if (has(/unable to open config file|Is there a repository at the following location|repository does not exist/i)) {
    return new RepoError("no restic repository there (run `pi-guard init` first, or check the restic: location)", "not-found");
  }
  if (has(/config file already exists|repository master key and config already initialized/i)) return new RepoError("a restic repository already exists there", "exists");
  if (has(/repository is already locked|unable to create lock/i)) {
    return new RepoError(`the restic repository is locked by another process (${firstLine(text, /locked/i)}); if that process is gone, run \`restic unlock\``, "locked");
  }
  if (has(/no matching ID found|no snapshot found|invalid id/i)) return new RepoError(`restic ${command}: ${firstLine(text, /ID|snapshot/)}`, "not-found");
  if (has(/Please specify repository location|password is empty|Fatal: an empty password is not a password/i)) {
    return new RepoError(`restic ${command}: ${firstLine(text, /Fatal/)}`, "no-password");
  }
  const damage = resticDamage(text);
  if (damage) return damagedError(command, damage);
  const why = firstLine(text, /Fatal|error/i) || (signal ? `killed by ${signal}` : `exit code ${exitCode}`);
  return new RepoError(`restic ${command} failed: ${why}`, exitCode === 3 ? "corrupt" : "io");
}

/** The most telling line of restic's stderr, short and without control characters. */
function firstLine(text: string, prefer: RegExp): string {
  const lines = text.split("\n").map((l) => l.trim()).filter(Boolean);
  const line = lines.find((l) => prefer.test(l)) ?? lines[0] ?? "";
  return clean(line.replace(/^Fatal:\s*/, ""));
}

/** No control characters, at most 200 of them: restic's text goes into one line on a terminal. */
export function clean(text: string): string {
  // eslint-disable-next-line no-control-regex
  const c = text.replace(/[\u0000-\u001f\u007f]/g, "?");
  return c.length > 200 ? `${c.slice(0, 200)}…` : c;
}
