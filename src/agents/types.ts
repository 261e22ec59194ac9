// One small interface every agent pi-guard guards implements (pi, claude, codex, gemini,
// opencode). The rest of pi-guard (config, snapshot, restore, doctor, sessions, export) knows an
// agent only through an AgentAdapter found in the registry (registry.ts); only src/agents/<name>/
// knows where that agent keeps what, and in which format.
//
// Conventions for every adapter:
// - Read-only. Nothing here writes under an agent's data, creates side files (a SQLite open does:
//   read a database through a consistent copy, never in place) or calls the agent's own loader.
// - Hostile input. Every file is bounded in what it is allowed to cost (MAX_* below), a parse error
//   is a warning on the session, never a throw that ends a listing of other sessions.
// - Paths inside a root are relative, with forward slashes, as in a snapshot's tree (FileRef).

import type { DoctorCheck } from "../doctor.js";
import type { KnownSecret } from "../export/secrets.js";
import type { SessionEntry, SessionHeader } from "../model/session.js";
import type { SourceRoot } from "../snapshot/sources.js";

export type Env = Record<string, string | undefined>;

/** The agents pi-guard knows; a name is also the `--agent` value and the config key. */
export type AgentName = "pi" | "claude" | "codex" | "gemini" | "opencode";

// ---------------------------------------------------------------------------------------------
// Where the data lives

/** What the adapter is told when it locates its data. */
export interface LocateContext {
  env: Env;
  /** $HOME (a sandbox's in tests). */
  home: string;
  /** This agent's block of the config file (`agents.<name>`), if any. */
  config?: AgentConfig;
  /** A directory given on the command line for this agent (pi: `--agent-dir`). Wins over everything. */
  flagDir?: string;
  /** The config file's path, to name it in `foundBy`. */
  configFile?: string;
}

/** Per-agent settings in the config file: `"agents": {"claude": {"enabled": true, "dir": "~/x"}}`. */
export interface AgentConfig {
  /** Guard this agent (undefined: guard it when it is detected, see config.ts). */
  enabled?: boolean;
  /** The agent's data dir, replacing the default (the agent's own env override still wins, as the agent itself sees it). */
  dir?: string;
}

/** How a location was found, strongest first. */
export type FoundBy = "flag" | "env" | "config" | "settings" | "default";

/**
 * One folder (or single file's folder) of an agent's data that a snapshot walks as a source root.
 * `name` is unique across all agents and stable across versions: it is what a snapshot's tree and
 * the repository's parent matching key on. pi keeps its historic names `agent` and `sessions`;
 * others use their agent name (`claude`) and `<agent>-<what>` for further roots (`opencode-db`).
 */
export interface AgentRoot extends SourceRoot {
  agent: AgentName;
  /** How this root's path was found, and what named it: `CLAUDE_CONFIG_DIR`, `agents.claude.dir`, `--agent-dir`. */
  foundBy: FoundBy;
  via?: string;
}

export interface AgentLocation {
  agent: AgentName;
  /** The agent's main data dir (pi: the agent dir; claude: ~/.claude; opencode: $XDG_DATA_HOME/opencode). */
  dir: string;
  foundBy: FoundBy;
  /** The env variable, config key, settings file or flag that named `dir`; undefined for the default. */
  via?: string;
  /** Every root to back up, `dir`'s first. A root may not exist yet (a sessions dir pi has not made). */
  roots: AgentRoot[];
  /** One-line notes for `agents` and `snapshot` output (pi: a symlinked sessions dir). */
  notes?: string[];
}

// ---------------------------------------------------------------------------------------------
// Files: one reader for a live dir and for a snapshot's tree

/** A file of an agent's data: a root name (AgentRoot.name) and a relative posix path inside it. */
export interface FileRef {
  root: string;
  path: string;
}

export interface FileInfo extends FileRef {
  size: number;
  mtimeMs: number;
}

/**
 * Read access to an agent's files, wherever they are: on disk (agents/files.ts liveFiles, over
 * AgentLocation.roots) or in a snapshot (agents/files.ts snapshotFiles, over its tree). An adapter
 * reads only through this, so the same reader code serves `sessions` live and from any snapshot.
 */
export interface FileReader {
  /** Where the files come from, for messages: a path, or "snapshot <id>". */
  readonly where: string;
  /** The root names this reader holds (a snapshot holds only the roots it recorded). */
  readonly roots: readonly string[];
  /** The regular files under `prefix` ("" for the whole root), in path order. Bounded by the caller's own limits. */
  list(root: string, prefix?: string): AsyncIterable<FileInfo>;
  /** One file's info, or undefined when it is not there. */
  stat(ref: FileRef): Promise<FileInfo | undefined>;
  /** The file's bytes in order, without holding it in memory. */
  stream(ref: FileRef): AsyncIterable<Buffer>;
  /** The whole file; refuses (throws) a file larger than `maxBytes`, so a hostile file cannot fill memory. */
  read(ref: FileRef, maxBytes: number): Promise<Buffer>;
  /**
   * Copies of these files, together, in a private temp folder, for code that needs real paths
   * (SQLite: a db with its -wal and -shm, opened there, never in the agent's dir). Live files
   * are copied by the unit's CopyKind (a SQLite unit through the consistent copy module);
   * `dispose` removes the folder.
   */
  materialize(refs: readonly FileRef[]): Promise<{ path(ref: FileRef): string; dispose(): Promise<void> }>;
}

/** Whole-file reads in adapters stay below this unless the adapter says why (a config file, a JSON chat). */
export const MAX_JSON_FILE_BYTES = 64 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Secrets

/**
 * A file that holds credentials. `whole`: everything in it is a credential (auth.json); `keys`: the
 * values at these JSON key paths are (`["oauthAccount", "*"]`; `*` matches any one key, `**` any
 * depth); `if-it-holds-any`: settings that may carry keys (pi's models.json), found by name.
 * Every such file is masked by `export --redact`, never written to a log, and restored 0600.
 */
export interface SecretFile {
  root: string;
  /** Relative path; may be a picomatch glob (`mcp-auth.json`, `**\/oauth_creds.json`). */
  path: string;
  kind: "whole" | "keys" | "if-it-holds-any";
  keys?: readonly (readonly string[])[];
  /** For a person: "API keys and OAuth tokens". */
  what: string;
}

// ---------------------------------------------------------------------------------------------
// Consistent copies

/**
 * How a file is written by its agent, so how a snapshot takes a consistent copy while it runs:
 * - `append-jsonl`: only grows (pi, Claude Code transcripts, Codex rollouts, Gemini chats): read
 *   from the tail, append-aware (docs/FORMAT.md §10), a torn last line is the agent's, kept as is;
 * - `rewrite-json`: replaced whole, usually by rename (settings.json, .claude.json): read in full,
 *   read again when it changed during the read;
 * - `sqlite-wal`: a SQLite database in WAL mode with `-wal`/`-shm` beside it (opencode.db, Codex's
 *   state_5.sqlite): copied as one unit through the consistent copy module (`go`'s), never byte by
 *   byte while the agent writes;
 * - `plain`: anything else, copied as it is.
 */
export type CopyKind = "append-jsonl" | "rewrite-json" | "sqlite-wal" | "plain";

export interface CopyRule {
  root: string;
  /** A picomatch glob relative to the root; the first matching rule wins, `plain` when none does. */
  glob: string;
  kind: CopyKind;
  /**
   * `sqlite-wal` only: the table that holds the agent's sessions (opencode's `session`, Codex's
   * `threads`). Its rows are counted in the consistent copy, and a db that loses most of them
   * since the last whole snapshot is a suspected loss, like a vanished folder (loss-guard.ts).
   */
  keyTable?: string;
}

// ---------------------------------------------------------------------------------------------
// Sessions: the common session model

/**
 * The common session model is pi's entry model (src/model/session.ts): a header, then entries whose
 * messages hold text, thinking, toolCall and toolResult blocks with usage and cost, linked by
 * `id`/`parentId` (branches where the agent has them, a chain where it has not). Each adapter maps
 * its native records into it:
 * - a native record that maps goes into the matching entry, losslessly where the model has a
 *   place, and keeps what has none in the entry's `raw` field (`raw: <the native record>` on the
 *   entry, or on a content block for a block-level remainder);
 * - a native record with no place at all becomes `{type: "custom", customType: "<agent>:<native
 *   type>", data: <the native record>}`, so nothing is dropped without a trace;
 * - `header.id` is the native session id, `header.cwd` the project dir where the agent records it
 *   (else ""), `header.timestamp` the session's start.
 */
export interface AgentSession {
  meta: SessionMeta;
  header: SessionHeader;
  entries: SessionEntry[];
  /** The last entry of the branch the agent would continue; null for an empty session. */
  leafId: string | null;
  /** Problems met while reading (a bad line, a missing part): the session is still shown. */
  warnings: string[];
}

/** What a listing knows of a session without reading it in full. */
export interface SessionMeta {
  agent: AgentName;
  /** The agent's own session id (pi: the header id; claude: the transcript uuid; opencode: ses_…). */
  id: string;
  /** The project dir it ran in, where recorded. */
  cwd?: string;
  /** The session's title or first prompt, when the agent keeps one. */
  title?: string;
  /** ISO times. */
  started?: string;
  updated?: string;
  /** Every file it is read from, the main one first (opencode: the db and its side files). */
  files: FileRef[];
  /** Bytes of those files. */
  bytes: number;
}

export interface SessionReader {
  /** Every session in these files, cheaply (bounded reads per session). */
  list(files: FileReader): AsyncIterable<SessionMeta>;
  /** One session in full, in the common model. */
  read(files: FileReader, meta: SessionMeta): Promise<AgentSession>;
  /** Whether a file is (part of) a session, for the loss guard ("every session file is gone"). */
  isSessionFile(ref: FileRef): boolean;
}

// ---------------------------------------------------------------------------------------------
// Restore

/**
 * Files that must come back together, or the agent will not see the session again: a SQLite db
 * with its `-wal` and `-shm` (a db without its WAL is an older db, or a corrupt one), Codex's
 * rollouts with `state_5.sqlite` (its listings read the `threads` table). A restore of any file of
 * a unit restores the whole unit from the same snapshot, swapped in together.
 */
export interface RestoreUnit {
  files: FileRef[];
  /** For a person: "opencode.db with its -wal and -shm". */
  why: string;
}

/**
 * Which rows of a SQLite database are one session's, for `restore --session` into a database that
 * exists live (restore/sqlite-merge.ts): restoring the whole db would roll back every other session
 * in it. A row is the session's when its `column` holds the session id. Every table needs a
 * primary key: rows are matched between the snapshot's db and the live one by it.
 */
export interface SessionRowsTable {
  table: string;
  column: string;
}

/**
 * Rows a session's rows refer to but share with other sessions (opencode's `project`): one the live
 * db lacks is added from the snapshot, one it has is left as it is, none is ever deleted.
 */
export interface SharedRows {
  table: string;
  /** The shared table's key column. */
  column: string;
  /** The session's rows that name it: a table of the description and its column. */
  from: { table: string; column: string };
}

/** One database's session rows (opencode.db; Codex's state_5.sqlite, thread_history_1.sqlite). */
export interface SessionRows {
  root: string;
  /** A picomatch glob relative to the root, as in CopyRule. */
  glob: string;
  /** The tables, parents first: the first holds the session's own row, keyed by its id. */
  tables: readonly SessionRowsTable[];
  shared?: readonly SharedRows[];
  /**
   * The table that names each schema migration applied (opencode's `migration`, Codex's
   * `_sqlx_migrations`): a snapshot db with a migration the live db lacks has a newer schema.
   */
  migrations?: { table: string; column: string };
}

/** A check run on the restored files, before they are swapped in: what must hold for the agent to list the session again. */
export interface RestoreCheck {
  name: string;
  ok: boolean;
  /** One line: what holds, or what does not and why. */
  message: string;
}

// ---------------------------------------------------------------------------------------------
// Hazards

/**
 * A cleanup the agent runs itself that deletes files by age (Claude Code's cleanupPeriodDays sweep,
 * Gemini CLI's general.sessionRetention): the loss guard (snapshot/loss-guard.ts) tells such a
 * burst of old files from a loss by `days`.
 */
export interface AgeCleanup {
  /** Files whose mtime is older than this many days are what the agent deletes. */
  days: number;
  /** For a person: the setting and its value, "cleanupPeriodDays 30 (not set: the default)". */
  setting: string;
}

/** What a hazard check may need beside the location: where pi-guard's own repository and key are (a repository inside an agent's dir dies with it). */
export interface HazardContext {
  env: Env;
  repo: string;
  keyFile: string;
}

// ---------------------------------------------------------------------------------------------
// The interface

export interface AgentAdapter {
  name: AgentName;
  /** For a person: "Claude Code". */
  title: string;

  /** Where the data lives: defaults, env overrides, config overrides, in the agent's own order. Pure: reads at most small settings files. */
  locate(ctx: LocateContext): AgentLocation;

  /** The files holding credentials, within the location's roots. */
  secretFiles(loc: AgentLocation): readonly SecretFile[];
  /**
   * The secret values themselves, for `export --redact` (labelled "auth.json anthropic"): read
   * through `files`, so a snapshot's credentials mask its sessions. Missing files give nothing;
   * an unreadable one throws, since redacting without knowing the keys would pass them through.
   */
  secretValues(files: FileReader, loc: AgentLocation): Promise<KnownSecret[]>;

  /** How each file is written, for consistent copies; first match wins, else `plain`. */
  copyRules(loc: AgentLocation): readonly CopyRule[];

  /** Sessions into the common model, live or from a snapshot. */
  sessions: SessionReader;

  /**
   * What deletes or hides this agent's history on this machine, as doctor findings (name prefixed
   * with the agent: "claude: cleanupPeriodDays"), each warning with a one-line `fix`. Read-only.
   */
  hazards(loc: AgentLocation, ctx: HazardContext): Promise<DoctorCheck[]>;
  /**
   * The age-based cleanup this agent runs on this machine, read from its settings (small files
   * only); undefined when it runs none or the adapter cannot tell (the loss guard then uses
   * DEFAULT_CLEANUP_DAYS). Read-only.
   */
  ageCleanup?(loc: AgentLocation): AgeCleanup | undefined;

  /**
   * Group `selected` files (what a restore is asked for) into units, adding from `available` (the
   * snapshot's files) what must come back with them. Every selected file is in exactly one unit;
   * a file with no companions is a unit of one.
   */
  restoreUnits(selected: readonly FileRef[], available: readonly FileRef[]): RestoreUnit[];
  /** Which rows of which of its SQLite databases make one session (absent: no db holds sessions as rows). */
  sessionRows?: readonly SessionRows[];
  /** Checks on restored files (read through `files`, over the restored tree): what the agent needs to list the sessions again. */
  checkRestored(files: FileReader, units: readonly RestoreUnit[]): Promise<RestoreCheck[]>;
}
