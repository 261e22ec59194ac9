/**
 * pi-guard as a library: a repository opened from a location and a credential (or from the
 * config, as the CLI does), and the session-manager calls over it. Everything here is the code the
 * CLI runs (the engine, the catalog, the search index, export, merge); nothing prints.
 */
import type { Config, ConfigFlags } from "../config/config.js";
import type { ExportFormat } from "../export/index.js";
import type { SessionCatalog, SessionRecord } from "../sessions/catalog.js";
import type { SessionFilter } from "../sessions/query.js";
import type { LoadedSession } from "../sessions/read.js";
import type { SearchHit } from "../sessions/search-query.js";
import type { SessionView } from "../sessions/view.js";
import type { SessionEntry } from "../model/session.js";
import type { OpenedEngine } from "../engine/open.js";
import type {
  EngineBackupOptions,
  EngineBackupResult,
  EngineCheckResult,
  EngineForgetOptions,
  EngineForgetResult,
  EngineRestoreOptions,
  EngineRestoreResult,
  EngineSnapshot,
} from "../engine/types.js";
import type { SnapshotFinding } from "../engine/verdict.js";
import type { RetentionPolicy } from "../config/config.js";
import type { PruneReport } from "../repo/prune.js";
import type { Repository } from "../repo/repository.js";
import type { DeleteResult } from "../sessions/trash.js";
import type { Stats } from "../sessions/stats.js";
import type { VerifyReport } from "../snapshot/verify.js";
import type { StatusReport } from "../watch/status.js";
import type { OpenedCatalog } from "./catalog.js";
import type { KeyListing, KeyPlace } from "./keys.js";
import type { CopyRequest } from "./repository.js";
import type { MirrorShipment } from "../repo/ship.js";
import type { SalvageHooks, SalvageOutcome, SalvageRequest } from "./salvage.js";
import type { SessionsHost, StatsOptions } from "./sessions.js";
import type { RunningWatcher, WatchOptions } from "./watch.js";

export interface OpenOptions {
  /** The repository: a folder, s3://bucket/prefix, or restic:<restic repository>. Default: the config's. */
  repo?: string;
  /** The repository password (else PI_GUARD_PASSWORD or a password file from the config). */
  password?: string;
  passwordFile?: string;
  /** A key file that opens the repository (pi-guard's own format). */
  keyFile?: string;
  /** The pi agent dir snapshots read and restores write (default ~/.pi/agent, or PI_CODING_AGENT_DIR). */
  agentDir?: string;
  /** The config file (default $XDG_CONFIG_HOME/pi-guard/config.json). */
  configFile?: string;
  /** The environment the config is read from (default process.env). */
  env?: Record<string, string | undefined>;
  /** How long to wait for a repository lock, in ms (default 60 s). */
  lockWaitMs?: number;
}

export interface FindQuery {
  /** Sessions with this pi-guard tag (pi-guard sessions tag). */
  tag?: string;
  /** Sessions active at or after this time. */
  since?: Date | string;
  /** Sessions started at or before this time. */
  until?: Date | string;
  /** The agent that wrote the session ("pi" is the one there is today). */
  agent?: string;
  /** A substring of the project path. */
  project?: string;
  /** Only sessions no longer on disk (in a snapshot only). */
  deleted?: boolean;
  host?: string;
  /** Only the live files: no repository is read. */
  liveOnly?: boolean;
}

export interface SnapshotOutcome extends EngineBackupResult {
  /** What the CLI would warn about, one line each; `exit` is its exit code (3 damaged, 1 failed). */
  findings: SnapshotFinding[];
  exit: 0 | 1 | 3;
}

export interface ExportCallOptions {
  /** The path to this entry instead of pi's leaf. */
  branch?: string;
  /** Mask API keys and tokens (see `pi-guard export --redact`). */
  redact?: boolean;
}

export type { MergeWritten as MergeResult } from "./sessions.js";
import type { MergeWritten as MergeResult } from "./sessions.js";

export interface ForgetCallOptions extends Omit<EngineForgetOptions, "policy" | "prune" | "lockWaitMs"> {
  /** What to keep; "config": the config's retention policy. Or give `ids`. */
  policy?: RetentionPolicy | "config";
  /** Then free the data: the share of kept bytes that may stay unused ("10%", the default), and past damage (native). */
  prune?: boolean | { maxUnused?: string; allowDamaged?: boolean };
}

const toDate = (v: Date | string | undefined, what: string): Date | undefined => {
  if (v === undefined) return undefined;
  const d = v instanceof Date ? v : new Date(v);
  if (!Number.isFinite(d.getTime())) throw new TypeError(`${what}: not a time: ${String(v)}`);
  return d;
};

/** An agent name the registry knows (a typo is an error, never an empty result). */
async function knownAgent(name: string | undefined): Promise<void> {
  if (name !== undefined) (await import("../agents/registry.js")).agentByName(name);
}

/** A FindQuery as the catalog's filter (the agent included). */
const sessionFilter = (q: FindQuery): SessionFilter => ({
  tag: q.tag,
  project: q.project,
  deleted: q.deleted,
  host: q.host,
  agent: q.agent,
  since: toDate(q.since, "since"),
  until: toDate(q.until, "until"),
});

/** One session, live or only in a snapshot, as a catalog found it. */
export class Session {
  readonly id: string;
  readonly agent: string;
  constructor(
    private readonly guard: PiGuard,
    private readonly catalog: SessionCatalog,
    /** The catalog's record: name, project, times, usage, versions in snapshots, tags. */
    readonly record: SessionRecord,
  ) {
    this.id = record.id;
    this.agent = record.agent;
  }

  get name(): string | undefined {
    return this.record.name ?? undefined;
  }
  get project(): string {
    return this.record.project;
  }
  get deleted(): boolean {
    return this.record.deleted;
  }
  get tags(): string[] {
    return this.record.tags;
  }
  /** Where its bytes come from (the live file, or a snapshot). */
  get source(): string {
    return this.catalog.describeSource(this.id);
  }

  /** The whole session in pi's entry model (v1/v2 migrated in memory). */
  async load(): Promise<LoadedSession> {
    const { loadSession } = await import("../sessions/index.js");
    return loadSession(this.catalog, this.record);
  }

  /** The entries of every branch's last message (pi's leaf is the last one). */
  async leaves(): Promise<SessionEntry[]> {
    return (await this.view()).leaves;
  }

  /** The session along one branch: the path from the root to `entryId` (an id or unique prefix), or to pi's leaf. */
  async branch(entryId?: string): Promise<SessionView> {
    return this.view(entryId);
  }

  private async view(entryId?: string): Promise<SessionView> {
    const { sessionView } = await import("../sessions/view.js");
    return sessionView(await this.load(), entryId);
  }

  /** Add pi-guard tags (pi's files are not touched); the session's tags after. */
  async tag(...names: string[]): Promise<string[]> {
    return this.changeTags(names, false);
  }

  /** Remove pi-guard tags; the session's tags after. */
  async untag(...names: string[]): Promise<string[]> {
    return this.changeTags(names, true);
  }

  private async changeTags(names: string[], remove: boolean): Promise<string[]> {
    const { changeTags, checkTagNames } = await import("../sessions/tags.js");
    checkTagNames(names);
    const tags = await changeTags(this.guard.config.dataDir, this.id, names, remove);
    this.record.tags = tags;
    return tags;
  }

  /**
   * Snapshot the agent dir (with pi-guard's tags), then move the live file into pi-guard's trash,
   * as `sessions delete` does; its restoreCommand brings it back. Native repositories only.
   */
  async trash(): Promise<DeleteResult> {
    const { trashSession } = await import("./sessions.js");
    return trashSession(this.guard.sessionsHost(), this.id);
  }

  /** The session as Markdown, JSON (docs/SESSIONS.md) or one self-contained HTML page. */
  async export(format: ExportFormat, opts: ExportCallOptions = {}): Promise<string> {
    const { exportSession } = await import("../export/index.js");
    const secrets = opts.redact ? await this.catalog.redactionSecrets(this.id) : undefined;
    return exportSession(await this.load(), { format, branch: opts.branch, redact: opts.redact, secrets, agentDir: this.guard.config.agentDir, source: this.source });
  }

  /**
   * A new session holding the messages of both (shared ones once), as `pi-guard sessions merge`
   * writes it: into pi's sessions dir, or to `output`; never over an existing file.
   */
  async merge(other: Session, opts: { output?: string } = {}): Promise<MergeResult> {
    if (other.id === this.id) throw new TypeError(`merge: ${this.id} is the same session`);
    const [{ writeMerged }, { shortIds }] = await Promise.all([import("./sessions.js"), import("../sessions/short-id.js")]);
    const short = shortIds([this.id, other.id]);
    return writeMerged(this.guard.config, { record: this.record, session: await this.load(), shortId: short.get(this.id)! }, { record: other.record, session: await other.load(), shortId: short.get(other.id)! }, opts.output);
  }
}

export class PiGuard {
  private readonly catalogs: OpenedCatalog[] = [];
  private constructor(
    readonly config: Config,
    /** The engine the repository location selects: "native" (pi-guard's format) or "restic". */
    readonly engine: OpenedEngine,
    private readonly lockWaitMs: number,
  ) {}

  /** Open the repository `opts` (or the config) names; it is unlocked when first needed. */
  static async open(opts: OpenOptions = {}): Promise<PiGuard> {
    const { loadConfig } = await import("../config/config.js");
    const env = { ...(opts.env ?? process.env), ...(opts.password !== undefined ? { PI_GUARD_PASSWORD: opts.password } : {}) };
    const flags: ConfigFlags = { repo: opts.repo, passwordFile: opts.passwordFile, keyFile: opts.keyFile, agentDir: opts.agentDir, configFile: opts.configFile };
    const config = loadConfig(flags, env);
    const { openEngine } = await import("../engine/open.js");
    return new PiGuard(config, await openEngine(config), opts.lockWaitMs ?? 60_000);
  }

  /** Create the repository first (a key file at the config's keyFile when no password is set). */
  async init(): Promise<{ id: string; keyFile?: string }> {
    const made = await this.engine.init();
    return { id: made.id, keyFile: made.keyFile };
  }

  /** Snapshot the agent dir by the snapshot policy (reserved tags, missing agent dir, loss guard, mirrors). */
  async snapshot(opts: Omit<EngineBackupOptions, "onProgress"> = {}): Promise<SnapshotOutcome> {
    const { findingsExit, snapshotFindings } = await import("../engine/verdict.js");
    const r = await this.engine.backup({ lockWaitMs: this.lockWaitMs, ...opts });
    const findings = await snapshotFindings(r, this.config.repo);
    return { ...r, findings, exit: findingsExit(findings) };
  }

  /** Every readable snapshot, oldest first. */
  listSnapshots(): Promise<EngineSnapshot[]> {
    return this.engine.listSnapshots();
  }

  /**
   * Restore the agent dir (in place, or into `target`) as of `at`: "latest", a snapshot id, a
   * Date, or a time such as "2h ago". In place, what it replaces is snapshotted first.
   */
  restore(opts: { at: Date | string; target?: string } & Omit<EngineRestoreOptions, "targetDir" | "onProgress">): Promise<EngineRestoreResult> {
    const { at, target, ...rest } = opts;
    const when = at instanceof Date ? at.toISOString() : at;
    return this.engine.restore(when, { lockWaitMs: this.lockWaitMs, ...rest, targetDir: target });
  }

  /** Sessions live and in every snapshot, most recently active first, by tag, time, agent, project. */
  async find(query: FindQuery = {}): Promise<Session[]> {
    const { filterSessions } = await import("../sessions/query.js");
    await knownAgent(query.agent);
    const catalog = await this.catalog(!!query.liveOnly);
    return filterSessions(catalog.sessions, sessionFilter(query)).map((r) => new Session(this, catalog, r));
  }

  /** One session by its id or a unique prefix of it. */
  async session(id: string): Promise<Session> {
    const { resolveSession } = await import("../sessions/query.js");
    const catalog = await this.catalog(false);
    return new Session(this, catalog, resolveSession(catalog.sessions, id));
  }

  /** Full-text search (words, "phrases", prefix*): the best sessions first, with their hits. */
  async search(text: string, opts: FindQuery & { limit?: number } = {}): Promise<{ session: Session; score: number; hits: SearchHit[] }[]> {
    const { assertSearchable, searchCatalog } = await import("./search.js");
    await assertSearchable(text);
    await knownAgent(opts.agent);
    const catalog = await this.catalog(!!opts.liveOnly);
    const report = await searchCatalog(this.config, catalog, text, { filter: sessionFilter(opts), limit: opts.limit, snapshots: !opts.liveOnly });
    return report.results.map((r) => ({ session: new Session(this, catalog, r.session), score: r.score, hits: r.hits }));
  }

  /** Usage per day, week, month and session, per model and project, and snapshot gaps (what `stats --json` prints). */
  async stats(opts: Partial<StatsOptions> = {}): Promise<Stats> {
    const { sessionStats } = await import("./sessions.js");
    return sessionStats(this.sessionsHost(), { gap: "24", ...opts });
  }

  /**
   * Forget the snapshots a retention policy does not keep (or `ids`), on either engine; never
   * every snapshot of a group unless allowRemoveAll (with host). With `prune`, their data is freed.
   */
  async forget(opts: ForgetCallOptions): Promise<EngineForgetResult> {
    const { policy, prune, ...rest } = opts;
    const { unusedShare } = await import("./retention.js");
    const pruning = prune === undefined || prune === false ? undefined : prune === true ? {} : prune;
    return this.engine.forget({
      ...rest,
      policy: policy === "config" ? this.config.retention : policy,
      prune: pruning && { maxUnusedFraction: await unusedShare(pruning.maxUnused), allowDamaged: pruning.allowDamaged },
      lockWaitMs: this.lockWaitMs,
    });
  }

  /**
   * Copy snapshots to a mirror (`to`, default every mirror of the config), each verified on the
   * way; `exit` 0 all there, 1 a destination got nothing, 3 a snapshot could not be copied.
   */
  async copy(req: Omit<CopyRequest, "lockWaitMs"> = {}): Promise<{ shipments: MirrorShipment[]; exit: 0 | 1 | 3 }> {
    const { copyExit, copyToMirrors } = await import("./repository.js");
    const shipments = await copyToMirrors(this.config, { ...req, lockWaitMs: this.lockWaitMs });
    return { shipments, exit: copyExit(shipments) };
  }

  /** Remove the data no snapshot uses (pi-guard's own format; on restic, forget({prune}) runs restic prune). */
  async prune(opts: { dryRun?: boolean; maxUnused?: string; allowDamaged?: boolean } = {}): Promise<PruneReport> {
    const { pruneRepository } = await import("./retention.js");
    return pruneRepository(await this.repository("prune"), { ...opts, lockWaitMs: this.lockWaitMs });
  }

  /** The repository's structure, and with readData every byte (either engine). */
  check(opts: { readData?: boolean } = {}): Promise<EngineCheckResult> {
    return this.engine.check({ ...opts, lockWaitMs: this.lockWaitMs });
  }

  /** Is everything backed up: the last good snapshot, the watcher, the mirrors (no alert is sent). */
  async status(opts: { maxAge?: string; agent?: string } = {}): Promise<StatusReport> {
    const { checkStatus } = await import("./service.js");
    return (await checkStatus(this.config, async () => this.engine, opts)).report;
  }

  /** The live sources against a snapshot ("latest" by default), byte for byte; exit 0 identical, 1 different, 3 damaged. */
  async verify(opts: { when?: string; host?: string } = {}): Promise<VerifyReport & { exit: 0 | 1 | 3 }> {
    const { verifyAgainstSnapshot } = await import("./repository.js");
    return verifyAgainstSnapshot(this.config, await this.repository("verify"), { ...opts, lockWaitMs: this.lockWaitMs });
  }

  /** Rebuild sessions from what survived (exports, logs, scrollback, hermes databases, journals, files held open). */
  async salvage(req: SalvageRequest, hooks?: SalvageHooks): Promise<SalvageOutcome> {
    const { salvageSessions } = await import("./salvage.js");
    return salvageSessions(this.config, req, hooks);
  }

  /** The keys that open the repository, and the one that opened it now. */
  async keys(): Promise<KeyListing[]> {
    return (await import("./keys.js")).listKeys(await this.repository("key list"));
  }

  /** A new credential: a new key file (mode 0600) at `keyFile`, or a password. */
  async addKey(cred: { keyFile: string } | { password: string }): Promise<{ id: string; kind: "password" | "keyfile" }> {
    return (await import("./keys.js")).addKey(await this.repository("key add"), cred);
  }

  /**
   * A recovery key in the repository and each mirror; its code goes to `deliver` once, and is
   * recorded as kept off the machine only after `deliver` returned.
   */
  async exportRecoveryKey(deliver: (r: { keyId: string; code: string; places: KeyPlace[] }) => Promise<void>): Promise<{ keyId: string; places: KeyPlace[] }> {
    return (await import("./keys.js")).exportRecoveryKey(this.config, await this.repository("key export"), deliver);
  }

  /** A new password for the key in use, in each mirror and the repository. */
  async changePassword(password: string): Promise<{ oldKeyId: string; newKeyId: string; places: KeyPlace[] }> {
    return (await import("./keys.js")).changePassword(this.config, await this.repository("key passwd"), password);
  }

  /** Revoke a key (an id or unique prefix) in each mirror and the repository; never the last one. */
  async removeKey(id: string, opts: { allowCurrent?: boolean } = {}): Promise<{ keyId: string; places: KeyPlace[] }> {
    return (await import("./keys.js")).removeKey(this.config, await this.repository("key remove"), id, opts);
  }

  /**
   * Start the watcher of the agent dir (one per agent dir), as `pi-guard watch`; stop() it, then
   * close() it. The scheduled jobs of the config run from it unless `schedules` is false.
   */
  async watch(opts: Omit<WatchOptions, "config" | "open" | "lockWaitMs"> = {}): Promise<RunningWatcher> {
    const [{ openWatcher }, { openRepository }] = await Promise.all([import("./watch.js"), import("../engine.js")]);
    const running = await openWatcher({ ...opts, config: this.config, lockWaitMs: this.lockWaitMs, open: (o) => openRepository(this.config, undefined, o) });
    await running.start();
    return running;
  }

  /** What the sessions library needs of this guard. */
  sessionsHost(): SessionsHost {
    return { config: this.config, engine: async () => this.engine, open: () => this.repository("sessions delete"), lockWaitMs: this.lockWaitMs };
  }

  /** pi-guard's own repository, for what only its format has. */
  private async repository(what: string): Promise<Repository> {
    if (!this.engine.repository) {
      const { RepoError } = await import("../repo/errors.js");
      throw new RepoError(`${what} needs a pi-guard repository; ${this.config.repo} is a ${this.engine.kind} one`, "usage");
    }
    return this.engine.repository();
  }

  /** Release the catalogs and the repository lock they hold; the sessions they gave stop reading. */
  async close(): Promise<void> {
    const open = this.catalogs.splice(0);
    for (const c of open) await c.finish(false);
  }

  /**
   * A catalog as of now (each call sees the snapshots taken meanwhile); kept open, under a shared
   * lock once it has read the repository, until close().
   */
  private async catalog(liveOnly: boolean): Promise<SessionCatalog> {
    // Either engine: a native repository's trees, or a restic one through restic (src/restic/catalog.ts).
    const opened = await this.engine.sessions({ liveOnly, lockWaitMs: this.lockWaitMs });
    this.catalogs.push(opened);
    return opened.catalog;
  }
}
