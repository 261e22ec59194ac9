// The one place where a `restic:` repository location changes what a command does. Commands the
// restic engine (src/restic/) supports get its action instead of their own, before they run;
// every other command that opens a repository is refused by openTarget in one line (exit 2).
import type { Command } from "commander";
import { RepoError } from "../repo/errors.js";
import { parseRepoLocation } from "../targets/location.js";
import type { ResticSession } from "../restic/run.js";
import type { SessionRecord } from "../sessions/catalog.js";
import { context, type Context } from "./context.js";
import { EXIT, formatBytes, formatDuration, info, printJson, table, warn } from "./output.js";
import { policyFrom, reportEmptiedGroups, type ForgetFlags } from "./prune-commands.js";
import { Progress } from "./progress.js";
import { promptHidden } from "./prompt.js";
import { reportLoss } from "./repo-commands.js";
import { printRestoreResult, type RestoreFlags } from "./restore-commands.js";
import { checkExportFlags, exportAndReport, printSessionList, printSessionView, type ExportFlags, type ListFlags } from "./sessions-commands.js";

/** `session(true)`: a new repository, whose prompted password is asked twice. */
type Route = (ctx: Context, session: (isNew?: boolean) => Promise<ResticSession>, args: unknown[], opts: Record<string, unknown>) => Promise<void>;

/** `pi-guard <path>` → what it does on a restic repository. */
const ROUTES: Record<string, Route> = {
  init: async (ctx, session, _args, opts) => {
    if (opts.keyFileOnly) throw new RepoError("--key-file-only: restic has no key files; a restic repository is opened by a password (PI_GUARD_PASSWORD or PI_GUARD_PASSWORD_FILE)", "usage");
    const { resticInit } = await import("../restic/repository.js");
    const made = await resticInit(await session(true));
    if (ctx.out.json) printJson({ repo: ctx.config.repo, id: made.id, credential: "password", keyFile: null, engine: "restic" });
    else info(ctx.out, `created restic repository ${made.id.slice(0, 8)} at ${ctx.config.repo.slice("restic:".length)}`);
  },
  snapshot: async (ctx, session, _args, opts) => snapshot(ctx, session, opts as SnapshotFlags),
  snapshots: async (ctx, session, _args, opts) => snapshots(ctx, session, opts as { tag?: string; host?: string }),
  restore: async (ctx, session, [when], opts) => {
    const flags = opts as RestoreFlags;
    if (flags.delete) throw new RepoError("--delete is not available on a restic repository: a restore there creates and replaces files, never deletes (docs/RESTIC.md)", "usage");
    if (flags.undo) throw new RepoError("--undo is not available on a restic repository: undo a restore there by restoring the pre-restore snapshot it printed (docs/RESTIC.md)", "usage");
    if (flags.lock === false) throw new RepoError("--no-lock is not available on a restic repository: restic takes its own lock", "usage");
    const { resticRestore } = await import("../restic/restore.js");
    const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
    const result = await resticRestore(ctx.config, await session(), String(when), {
      targetDir: flags.target,
      paths: flags.path,
      session: flags.session,
      dryRun: flags.dryRun,
      host: flags.host,
      withMeta: flags.withMeta,
      onProgress: (p) => progress.update(`${p.files} files, ${formatBytes(p.bytes)}  ${p.current}`),
    });
    progress.done();
    printRestoreResult(ctx, flags, { ...result, snapshot: { id: result.snapshot.id, snapshot: { time: result.snapshot.time, host: result.snapshot.host } } }, true);
  },
  forget: async (ctx, session, [ids], opts) => {
    const flags = opts as ForgetFlags;
    if (Array.isArray(ids) && ids.length) throw new RepoError("on a restic repository pi-guard forgets by policy only; forget single snapshots with `restic forget <id>`", "usage");
    if (flags.allowDamaged) throw new RepoError("--allow-damaged is not available on a restic repository (restic prune refuses a damaged repository; see restic repair)", "usage");
    const policy = policyFrom(flags, ctx);
    if (!policy) throw new RepoError("nothing to forget by: give --keep-* options or --policy (forgetting every snapshot is never allowed)", "usage");
    if (flags.dryRun && flags.prune) throw new RepoError("--prune after a --dry-run would prune nothing; run them without --dry-run", "usage");
    const { resticForget } = await import("../restic/repository.js");
    const r = await resticForget(await session(), policy, { dryRun: flags.dryRun, prune: flags.prune, host: flags.host, includeSpecial: flags.includeSpecial, maxUnused: flags.maxUnused, allowRemoveAll: flags.unsafeAllowRemoveAll });
    if (ctx.out.json) {
      printJson(r);
      return reportEmptiedGroups(ctx, r);
    }
    const row = (k: { id: string; time: string; host: string; tags: string[]; reasons: string[] }) => ["  " + k.id.slice(0, 8), k.time, k.host, k.reasons.length ? k.reasons.join(", ") : k.tags.join(",")];
    if (r.keep.length) info(ctx.out, `keep ${r.keep.length} snapshot(s):\n${table(r.keep.map(row))}`);
    if (r.remove.length) info(ctx.out, `${r.dryRun || r.refused ? "would remove" : "remove"} ${r.remove.length} snapshot(s):\n${table(r.remove.map(row))}`);
    reportEmptiedGroups(ctx, r);
    if (r.refused) return;
    if (!r.remove.length) info(ctx.out, `nothing to forget: the policy keeps all ${r.keep.length} snapshot(s)`);
    else if (r.dryRun) info(ctx.out, `dry run: would forget ${r.remove.length} and keep ${r.keep.length} snapshot(s); nothing was changed`);
    else info(ctx.out, `forgot ${r.removed} snapshot(s), kept ${r.keep.length}${r.pruned ? "; restic prune freed their data" : "; `pi-guard forget --prune` (or restic prune) frees their data"}`);
  },
  check: async (ctx, session, _args, opts) => {
    const { resticCheck } = await import("../restic/repository.js");
    const r = await resticCheck(await session(), { readData: !!opts.readData });
    if (ctx.out.json) printJson(r);
    else {
      for (const p of r.problems) warn(`error: ${p}`);
      info(ctx.out, `restic check${r.readData ? " --read-data" : ""}: ${r.ok ? "no errors" : "DAMAGED"}`);
    }
    if (!r.ok) process.exitCode = EXIT.damaged;
  },
  "sessions list": async (ctx, session, _args, opts) => {
    const flags = opts as ListFlags;
    const [{ resticSessions }, { filterSessions }, { timeRange }] = await Promise.all([import("../restic/sessions.js"), import("../sessions/query.js"), import("../sessions/time-filter.js")]);
    const range = timeRange(flags);
    const all = await resticSessions(ctx.config, await session());
    await printSessionList(ctx, filterSessions(all, { project: flags.project, tag: flags.tag, deleted: flags.deleted, host: flags.host, ...range }), all);
  },
  status: async (ctx, session, _args, opts) => {
    const [{ resticStatus }, { printStatus, statusOptions }] = await Promise.all([import("../restic/status.js"), import("./service-commands.js")]);
    const { maxAgeMs, alert } = await statusOptions(ctx, opts);
    await printStatus(ctx, await resticStatus(ctx.config, await session(), { maxAgeMs }), alert);
  },
  "sessions show": async (ctx, session, [id], opts) => {
    const [{ resticSessions, readResticSession }, sessions] = await Promise.all([import("../restic/sessions.js"), import("../sessions/index.js")]);
    const s = await session();
    const record = sessions.resolveSession(await resticSessions(ctx.config, s), String(id));
    const { bytes, source } = await readResticSession(s, record);
    const view = sessions.sessionView(sessions.loadSessionBytes(bytes, record.id), opts.branch as string | undefined);
    printSessionView(ctx, record, view, source, opts, sessions.renderSession);
  },
  export: async (ctx, session, [id], opts) => exportSession(ctx, session, String(id), opts as ExportFlags),
};

/**
 * `pi-guard export` on restic. A live session needs no repository: it is looked for among the
 * live files first, without starting restic or asking for a password. Only a session that is no
 * longer on disk is looked up in pi-guard's restic snapshots and read back with `restic dump`.
 */
async function exportSession(ctx: Context, session: () => Promise<ResticSession>, id: string, opts: ExportFlags): Promise<void> {
  const [{ bufferSource }, { SessionCatalog }, { resolveSession }] = await Promise.all([import("../export/entry-stream.js"), import("../sessions/catalog.js"), import("../sessions/query.js")]);
  const format = await checkExportFlags(ctx, opts);
  const live = await SessionCatalog.build({ config: ctx.config, repo: null });
  try {
    let found: SessionRecord | undefined;
    try {
      found = resolveSession(live.sessions, id);
    } catch (err) {
      // None matches among the live files: look in the snapshots. An ambiguous id is still an error.
      if (!(err instanceof RepoError && err.kind === "not-found")) throw err;
    }
    if (found) return await exportAndReport(ctx, opts, format, found.id, live.describeSource(found.id), await live.byteSource(found.id));
    const { resticSessions, readResticSession } = await import("../restic/sessions.js");
    const s = await session();
    const record = resolveSession(await resticSessions(ctx.config, s), id);
    const { bytes, source } = await readResticSession(s, record);
    await exportAndReport(ctx, opts, format, record.id, source, { ...bufferSource(bytes), close: async () => {} });
  } finally {
    await live.close();
  }
}

interface SnapshotFlags {
  tag?: string[];
  fromTar?: string;
  time?: string;
  init?: boolean;
  allowEmpty?: boolean;
  acceptLoss?: boolean;
}

async function snapshot(ctx: Context, session: (isNew?: boolean) => Promise<ResticSession>, opts: SnapshotFlags): Promise<void> {
  if (opts.fromTar || opts.time) throw new RepoError("--from-tar is not available on a restic repository (import the tarball into a pi-guard repository, or use restic backup --stdin)", "usage");
  const { resticSnapshot } = await import("../restic/backup.js");
  const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
  const onProgress = (p: { files: number; bytes: number; current: string }) => progress.update(`${p.files} files, ${formatBytes(p.bytes)}  ${p.current}`);
  const { result, created, mirrors } = await resticSnapshot(ctx.config, () => session(), { ...opts, tags: opts.tag, onProgress }).finally(() => progress.done());
  if (created) info(ctx.out, `created restic repository at ${ctx.config.repo.slice("restic:".length)}`);
  if (!result) {
    warn(`nothing to back up: ${ctx.config.agentDir} does not exist (set PI_CODING_AGENT_DIR or --agent-dir)`);
    if (ctx.out.json) printJson({ snapshotId: null, reason: "agent dir missing", agentDir: ctx.config.agentDir });
    return;
  }
  if (result.skipped.length) {
    process.exitCode = EXIT.damaged;
    for (const k of result.skipped) warn(`skipped ${JSON.stringify(k.path)}: ${k.error}`);
    warn(`restic snapshot ${result.id.slice(0, 8)} is incomplete: ${result.skipped.length} path(s) could not be read`);
  }
  const lossAccepted = !!result.loss && !!opts.acceptLoss;
  await reportLoss(ctx, result.id, result.parent, result.loss, lossAccepted);
  const sum = result.summary;
  const { reportShipments, shipmentJson } = await import("./copy-commands.js");
  if (ctx.out.json) {
    printJson({
      snapshotId: result.id,
      time: result.snapshot.time,
      parent: result.parent ?? null,
      tags: result.snapshot.tags,
      skipped: result.skipped,
      engine: "restic",
      ...sum,
      suspectLoss: result.loss ?? null,
      lossAccepted,
      ...(mirrors.length ? { mirrors: mirrors.map(shipmentJson) } : {}),
    });
    reportShipments(ctx, mirrors, result.id);
    return;
  }
  info(
    ctx.out,
    table([
      ["snapshot", `${result.id.slice(0, 8)}  ${result.snapshot.time}  (restic)${result.snapshot.tags.length ? `  [${result.snapshot.tags.join(", ")}]` : ""}`],
      ["files", `${sum.files} (${sum.filesNew} new, ${sum.filesChanged} changed, ${sum.filesUnchanged} unchanged)`],
      ["total", formatBytes(sum.bytesTotal)],
      ["new data", formatBytes(sum.bytesNew)],
      ["duration", formatDuration(sum.durationMs)],
    ]),
  );
  reportShipments(ctx, mirrors, result.id);
}

async function snapshots(ctx: Context, session: () => Promise<ResticSession>, opts: { tag?: string; host?: string }): Promise<void> {
  const { listResticSnapshots } = await import("../restic/snapshots.js");
  const { formatLocalTime } = await import("../restore/select.js");
  const all = (await listResticSnapshots(await session(), { onUnreadable: (m) => warn(`skipped ${m}; run \`pi-guard check\``) })).filter((s) => (!opts.tag || s.tags.includes(opts.tag)) && (!opts.host || s.host === opts.host));
  if (ctx.out.json) {
    return printJson(all.map((s) => ({ id: s.id, shortId: s.id.slice(0, 8), time: s.time, localTime: formatLocalTime(new Date(s.time)), host: s.host, user: s.user, tags: s.tags, roots: s.roots, paths: s.paths })));
  }
  if (!all.length) return info(ctx.out, "no pi-guard snapshots in this restic repository yet (run `pi-guard snapshot`)");
  const rows = [["ID", "TIME (UTC)", "LOCAL TIME", "HOST", "TAGS"]];
  for (const s of all) rows.push([s.id.slice(0, 8), s.time.replace("T", " ").replace(/\.\d+Z$/, "Z"), formatLocalTime(new Date(s.time)).replace("T", " "), s.host, s.tags.join(",")]);
  info(ctx.out, table(rows));
}

function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/**
 * Before an action runs, a command with a restic route gets the restic action instead when the
 * repository is a `restic:` location. (Commander reads the action handler only after the
 * preAction hooks, so setting it here takes effect for this run.)
 */
export function routeResticRepositories(program: Command): void {
  program.hook("preAction", async (_program, action) => {
    const route = ROUTES[commandPath(action)];
    if (!route) return;
    // `sessions list --live` reads no repository: its own action does that.
    if (commandPath(action) === "sessions list" && action.opts().live) return;
    const ctx = context(action);
    // Decided without loading the restic engine (and execa): native repositories pay nothing.
    if (parseRepoLocation(ctx.config.repo).kind !== "restic") return;
    const { resticSession } = await import("../restic/repository.js");
    const prompt = process.stdin.isTTY && process.stderr.isTTY ? () => promptHidden("restic repository password: ") : undefined;
    const session = (isNew = false) => resticSession(ctx.config, prompt, { confirm: isNew });
    action.action(async (...args: unknown[]) => {
      const n = action.registeredArguments.length;
      await route(ctx, session, args.slice(0, n), args[n] as Record<string, unknown>);
    });
  });
}
