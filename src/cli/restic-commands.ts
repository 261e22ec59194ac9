// What is left of the restic dispatch: init, snapshot, snapshots, restore, check and status call
// the engine the config selects (src/engine/), and the scheduled jobs do too. The commands below
// still get a restic action of their own before they run: forget (its flags are prune-commands'),
// and the sessions commands, whose cross-agent catalog is being rebuilt (issue 19, item 8). Every
// other command that opens a repository is refused by openTarget in one line (exit 2).
import type { Command } from "commander";
import { RepoError } from "../repo/errors.js";
import { parseRepoLocation } from "../targets/location.js";
import type { ResticSession } from "../restic/run.js";
import type { SessionRecord } from "../sessions/catalog.js";
import { context, type Context } from "./context.js";
import { info, printJson, table } from "./output.js";
import { policyFrom, reportEmptiedGroups, type ForgetFlags } from "./prune-commands.js";
import { promptHidden } from "./prompt.js";
import { checkExportFlags, exportAndReport, printSessionList, printSessionView, type ExportFlags, type ListFlags } from "./sessions-commands.js";

/** `session(true)`: a new repository, whose prompted password is asked twice. */
type Route = (ctx: Context, session: (isNew?: boolean) => Promise<ResticSession>, args: unknown[], opts: Record<string, unknown>) => Promise<void>;

/** `pi-guard <path>` → what it does on a restic repository. */
const ROUTES: Record<string, Route> = {
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
  "sessions list": async (ctx, session, _args, opts) => {
    const flags = opts as ListFlags;
    const [{ resticSessions }, { filterSessions }, { timeRange }] = await Promise.all([import("../restic/sessions.js"), import("../sessions/query.js"), import("../sessions/time-filter.js")]);
    const range = timeRange(flags);
    const all = await resticSessions(ctx.config, await session());
    await printSessionList(ctx, filterSessions(all, { project: flags.project, tag: flags.tag, deleted: flags.deleted, host: flags.host, ...range }), all);
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
