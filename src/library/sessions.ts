/**
 * The session manager's operations, as `pi-guard sessions …`, `stats`, `dashboard` and `export`
 * run them: each takes options already parsed and returns what happened, for its caller to print.
 * What is refused (an unknown agent, a bad --gap or time zone, the same session twice, an export
 * into a backed-up folder) is refused here, so that the CLI and a library user get the same
 * answers. Internals load per call: `sessions list` pays for neither merge nor the dashboard.
 */
import type { Config } from "../config/config.js";
import type { Engine } from "../engine/types.js";
import type { ExportFormat } from "../export/index.js";
import type { Repository } from "../repo/repository.js";
import type { SessionCatalog, SessionRecord } from "../sessions/catalog.js";
import type { LoadedSession } from "../sessions/read.js";
import type { Stats } from "../sessions/stats.js";
import type { DeleteResult } from "../sessions/trash.js";
import type { SessionView } from "../sessions/view.js";
import type { ZoneDays } from "../sessions/time-zone.js";
import type { SearchReport } from "./search.js";
import { NotWarm } from "../sessions/not-warm.js";

/** Where the sessions come from, and who hears what the caller must be told along the way. */
export interface SessionsHost {
  config: Config;
  /** The engine whose catalog is read (native or restic). */
  engine(): Promise<Pick<Engine, "sessions">>;
  /** The native repository, for `trashSession` (which snapshots first). */
  open?(): Promise<Repository>;
  lockWaitMs?: number;
  /** Snapshots the catalog could not read; `all`: it could read none (damage). */
  onDamage?(damage: { all: boolean; message: string }): void;
  /** A line for the user (a session read only in part, a search index note). */
  onWarning?(message: string): void;
  /**
   * Only what a warm search does (searchSessions): NotWarm (src/sessions/not-warm.ts) at the first
   * other step, and instead of telling onDamage or onWarning anything.
   */
  warmOnly?: boolean;
}

/** The filters of `sessions list` and `sessions search`, as typed (times as text, local unless zoned). */
export interface SessionListFilter {
  project?: string;
  tag?: string;
  since?: string;
  until?: string;
  /** One local day, YYYY-MM-DD. */
  date?: string;
  deleted?: boolean;
  host?: string;
  agent?: string;
  /** Skip snapshots: the live files only, no repository opened. */
  liveOnly?: boolean;
}

/** `--agent NAME`, checked against the registry: a typo is a usage error, not an empty listing. */
export async function knownAgentName(name: string | undefined): Promise<string | undefined> {
  if (name === undefined) return undefined;
  const { agentByName } = await import("../agents/registry.js");
  return agentByName(name).name;
}

/** The catalog over live files and (unless liveOnly) every snapshot, its damage reported first. */
async function withCatalog<T>(host: SessionsHost, liveOnly: boolean, fn: (c: SessionCatalog) => Promise<T>, opts: { damage?: boolean } = {}): Promise<T> {
  const { withEngineCatalog } = await import("./catalog.js");
  return withEngineCatalog(await host.engine(), { liveOnly, lockWaitMs: host.lockWaitMs, warmOnly: host.warmOnly }, async (catalog) => {
    if (opts.damage) {
      const damage = catalog.snapshotDamage({ location: host.config.repo, mirror: host.config.mirrors[0] });
      if (damage && host.warmOnly) throw new NotWarm("damaged snapshots to report");
      if (damage) host.onDamage?.(damage);
    }
    return fn(catalog);
  });
}

async function catalogFilter(f: SessionListFilter) {
  // The time parser (restore/select.ts and what it imports) loads only for a time filter.
  const range = f.since || f.until || f.date ? (await import("../sessions/time-filter.js")).timeRange(f) : { since: undefined, until: undefined };
  return { project: f.project, tag: f.tag, deleted: f.deleted, host: f.host, agent: await knownAgentName(f.agent), ...range };
}

export interface SessionListing {
  /** The sessions that match, most recently active first. */
  sessions: SessionRecord[];
  /**
   * Each one's shortest prefix that no other session (listed or not) starts with, so that each
   * id shown can be typed back (src/sessions/short-id.ts).
   */
  shortIds: Map<string, string>;
}

/** `sessions list`. */
export async function listSessions(host: SessionsHost, filter: SessionListFilter = {}): Promise<SessionListing> {
  const [f, { filterSessions }, { shortIds }] = await Promise.all([catalogFilter(filter), import("../sessions/query.js"), import("../sessions/short-id.js")]);
  const { list, all } = await withCatalog(host, !!filter.liveOnly, async (c) => ({ list: filterSessions(c.sessions, f), all: c.sessions }), { damage: true });
  return { sessions: list, shortIds: shortIds(list.map((s) => s.id), all.map((s) => s.id)) };
}

export interface ShownSession {
  record: SessionRecord;
  view: SessionView;
  /** Where its bytes came from (the live file, or a snapshot). */
  source: string;
}

/** `sessions show`: one session (an id or a unique prefix) along pi's leaf, or the path to `branch`. */
export async function showSession(host: SessionsHost, id: string, branch?: string): Promise<ShownSession> {
  const { loadSession, resolveSession, sessionView } = await import("../sessions/index.js");
  return withCatalog(host, false, async (catalog) => {
    const record = resolveSession(catalog.sessions, id);
    return { record, view: sessionView(await loadSession(catalog, record), branch), source: catalog.describeSource(record.id) };
  });
}

/** `sessions search`: the catalog's index brought up to date, then queried (src/library/search.ts). */
export async function searchSessions(host: SessionsHost, query: string, filter: SessionListFilter & { limit?: number; all?: boolean } = {}): Promise<SearchReport & { shortIds: Map<string, string> }> {
  const { assertSearchable, searchCatalog } = await import("./search.js");
  await assertSearchable(query); // an empty query fails before any work
  const made = NotWarm.made;
  const f = await catalogFilter(filter);
  const report = await withCatalog(
    host,
    !!filter.liveOnly,
    async (catalog) => {
      const report = await searchCatalog(host.config, catalog, query, { filter: f, limit: filter.limit, all: filter.all, snapshots: !filter.liveOnly, onWarning: host.onWarning, warmOnly: host.warmOnly });
      const { shortIds } = await import("../sessions/short-id.js");
      return { ...report, shortIds: shortIds(report.results.map((r) => r.session.id), catalog.ids) };
    },
    { damage: true },
  );
  // A step off the warm path whose failure something caught (src/sessions/not-warm.ts) changed what was found.
  if (host.warmOnly && NotWarm.made !== made) throw new NotWarm("a step off the warm path failed and was passed over");
  return report;
}

/** `sessions delete`: snapshot (with pi-guard's tags), then move the live file into pi-guard's trash. */
export async function trashSession(host: SessionsHost, id: string): Promise<DeleteResult> {
  const [{ buildCatalog, openedRepository, resolveSession }, { deleteSession }, { RepoError }] = await Promise.all([import("../sessions/index.js"), import("../sessions/trash.js"), import("../repo/errors.js")]);
  if (!host.open) throw new RepoError("sessions delete needs a pi-guard repository to snapshot into first", "usage");
  const repo = await host.open().catch((err: unknown) => {
    if (err instanceof RepoError && err.kind === "not-found") throw new RepoError(`${err.message.replace(/ \(.*$/, "")}: delete snapshots first, so run \`pi-guard init\``, "not-found");
    throw err;
  });
  const catalog = await buildCatalog(host.config, openedRepository(repo));
  try {
    return await deleteSession(host.config, repo, resolveSession(catalog.sessions, id), host.lockWaitMs);
  } finally {
    await catalog.close();
  }
}

export interface MergeSide {
  record: Pick<SessionRecord, "id" | "name">;
  session: LoadedSession;
  /** How the merged session names it (its short id). */
  shortId: string;
}

export interface MergeWritten {
  id: string;
  file: string;
  messages: number;
  /** Messages both held, written once. */
  shared: number;
}

/**
 * Write a new session holding both sides' messages (shared ones once): into pi's sessions dir,
 * or to `output`; never over an existing file. `sessions merge` and the library's Session.merge.
 */
export async function writeMerged(config: Config, a: MergeSide, b: MergeSide, output?: string): Promise<MergeWritten> {
  const [{ mergeSessions }, { mergedSessionPath, writeNewSession }] = await Promise.all([import("../sessions/merge.js"), import("../sessions/merge-write.js")]);
  const merged = mergeSessions({ id: a.record.id, shortId: a.shortId, name: a.record.name, session: a.session }, { id: b.record.id, shortId: b.shortId, name: b.record.name, session: b.session });
  const file = output ?? mergedSessionPath(config, merged.header);
  await writeNewSession(file, merged, !output);
  return { id: merged.header.id, file, messages: merged.entries.filter((e) => e.type === "message").length, shared: merged.shared };
}

/** `sessions merge a b`: two different sessions (ids or prefixes), each along its current branch. */
export async function mergeSessionsById(host: SessionsHost, a: string, b: string, output?: string): Promise<MergeWritten & { from: [string, string]; shortIds: [string, string] }> {
  const [{ loadSession, resolveSession }, { shortIds }, { RepoError }] = await Promise.all([import("../sessions/index.js"), import("../sessions/short-id.js"), import("../repo/errors.js")]);
  return withCatalog(host, false, async (catalog) => {
    const ra = resolveSession(catalog.sessions, a);
    const rb = resolveSession(catalog.sessions, b);
    if (ra.id === rb.id) throw new RepoError(`"${a}" and "${b}" are the same session ${ra.id}: give two different sessions`, "usage");
    const [sa, sb] = [await loadSession(catalog, ra), await loadSession(catalog, rb)];
    // What was read only in part is written so: the merged file holds those parts as text.
    for (const [r, loaded] of [[ra, sa], [rb, sb]] as const) for (const w of loaded.warnings) host.onWarning?.(`session ${r.id}: ${w}`);
    const short = shortIds([ra.id, rb.id], catalog.ids);
    const written = await writeMerged(host.config, { record: ra, session: sa, shortId: short.get(ra.id)! }, { record: rb, session: sb, shortId: short.get(rb.id)! }, output);
    return { ...written, from: [ra.id, rb.id], shortIds: [short.get(ra.id)!, short.get(rb.id)!] };
  });
}

/** `sessions tag` / `untag`: pi-guard's own tags (pi's files are not touched). */
export async function tagSession(host: SessionsHost, id: string, names: string[], remove = false): Promise<{ id: string; shortId: string; tags: string[] }> {
  const { changeTags, checkTagNames } = await import("../sessions/tags.js");
  checkTagNames(names);
  const [{ resolveSession }, { shortId }] = await Promise.all([import("../sessions/index.js"), import("../sessions/short-id.js")]);
  const { record, short } = await withCatalog(host, false, async (c) => {
    const found = resolveSession(c.sessions, id);
    return { record: found, short: shortId(found.id, c.ids) };
  });
  return { id: record.id, shortId: short, tags: await changeTags(host.config.dataDir, record.id, names, remove) };
}

/** The filters and options `stats` and `dashboard` share, as typed. */
export interface StatsOptions {
  /** A stretch without a snapshot longer than this many hours is a gap. */
  gap: string;
  since?: string;
  until?: string;
  project?: string;
  agent?: string;
  /** The IANA zone whose midnights cut the days (default: this machine's). */
  tz?: string;
}

/** `stats`: the catalog and the snapshot timeline, reduced to the numbers stats and dashboard show. */
export async function sessionStats(host: SessionsHost, opts: StatsOptions, range?: (zone: ZoneDays) => { since?: Date; until?: Date }): Promise<Stats> {
  const gapHours = Number(opts.gap);
  const { RepoError } = await import("../repo/errors.js");
  if (!Number.isFinite(gapHours) || gapHours <= 0) throw new RepoError(`--gap must be a number of hours above 0, not "${opts.gap}"`, "usage");
  const { checkZone, localZone, ZoneDays } = await import("../sessions/time-zone.js");
  const zone = new ZoneDays(checkZone(opts.tz ?? localZone()));
  const { timeRange } = await import("../sessions/time-filter.js");
  const times = range ? range(zone) : timeRange(opts, zone);
  const agent = await knownAgentName(opts.agent);
  const { computeStats } = await import("../sessions/stats.js");
  return withCatalog(
    host,
    false,
    async (catalog) => {
      const timeline = catalog.snapshots.map((r) => ({ id: r.id, time: r.time, host: r.host, tags: r.tags }));
      const { statsOriginKeys } = await import("../sessions/index.js");
      return computeStats(catalog.sessions, { target: host.config.repo, timeline }, { gapHours, originKeys: await statsOriginKeys(catalog), zone: zone.zone, ...times, project: opts.project, agent });
    },
    { damage: true },
  );
}

/**
 * `dashboard`: one self-contained HTML page of the stats over `range` ("30d", "all"; default 30d)
 * or over since/until, written to `output`.
 */
export async function writeDashboard(host: SessionsHost, opts: StatsOptions & { output: string; range?: string }): Promise<{ stats: Stats; bytes: number }> {
  const { RepoError } = await import("../repo/errors.js");
  if (opts.range !== undefined && (opts.since !== undefined || opts.until !== undefined)) throw new RepoError("give --range or --since/--until, not both", "usage");
  const { dashboardRange, rangeStart, renderDashboard } = await import("../export/dashboard.js");
  const days = opts.since !== undefined || opts.until !== undefined ? undefined : dashboardRange(opts.range ?? "30d");
  const stats = await sessionStats(host, opts, days === undefined ? undefined : (zone) => (days === "all" ? {} : { since: rangeStart(days, zone) }));
  const { writeExport } = await import("../export/index.js");
  const html = renderDashboard(stats);
  await writeExport(opts.output, html);
  return { stats, bytes: Buffer.byteLength(html) };
}

export interface ExportRequest {
  format?: string;
  /** A file, written atomically; none: stdout. Never inside a folder pi-guard backs up. */
  output?: string;
  /** Replace an existing `output`. */
  force?: boolean;
  branch?: string;
  redact?: boolean;
}

/** The format and the output of an export, checked before any work so that a mistake fails fast and alone. */
export async function checkExport(config: Pick<Config, "roots">, req: ExportRequest): Promise<ExportFormat> {
  const [{ checkExportTarget, parseFormat }, { RepoError }] = await Promise.all([import("../export/index.js"), import("../repo/errors.js")]);
  const format = parseFormat(req.format, req.output);
  if (req.force && !req.output) throw new RepoError("--force goes with --output only", "usage");
  if (req.output) await checkExportTarget(req.output, config.roots, !!req.force);
  return format;
}

/** `export`: one session (live or only in a snapshot) streamed to `output` or stdout; the bytes written. */
export async function exportSessionById(host: SessionsHost, id: string, req: ExportRequest, format: ExportFormat): Promise<{ id: string; source: string; bytes: number }> {
  const [{ withSession }, { exportSessionTo, fileSink, stdoutSink }] = await Promise.all([import("./catalog.js"), import("../export/index.js")]);
  return withSession(await host.engine(), id, { lockWaitMs: host.lockWaitMs }, async (catalog, record) => {
    const source = catalog.describeSource(record.id);
    // --redact masks every agent's credentials too, and those of the snapshot the session is read from.
    const secrets = req.redact ? await catalog.redactionSecrets(record.id) : undefined;
    const bytes = await catalog.byteSource(record.id);
    const output = req.output;
    try {
      const sink = output ? () => fileSink(output, { overwrite: !!req.force }) : async () => stdoutSink();
      const written = await exportSessionTo(bytes, sink, { format, branch: req.branch, redact: req.redact, secrets, agentDir: host.config.agentDir, source, fallbackId: record.id, onWarning: host.onWarning });
      return { id: record.id, source, bytes: written };
    } finally {
      await bytes.close();
    }
  });
}
