import type { Command } from "commander";
import type { EmptiedGroup } from "../repo/retention.js";
import type { EngineForgetResult } from "../engine/types.js";
import type { RetentionRequest } from "../library/retention.js";
import type { PruneReport } from "../repo/prune.js";
import { context, type Context } from "./context.js";
import { EXIT, formatBytes, info, printJson, table, warn } from "./output.js";
import { Progress } from "./progress.js";

export interface ForgetFlags extends RetentionRequest {
  host?: string;
  includeSpecial?: boolean;
  dryRun?: boolean;
  prune?: boolean;
  maxUnused?: string;
  allowDamaged?: boolean;
  unsafeAllowRemoveAll?: boolean;
}

const short = (id: string) => id.slice(0, 8);
const when = (t: string) => (t ? t.replace("T", " ").replace(/\.\d+Z$/, "Z") : "(unreadable)");

/**
 * The groups a forget empties or would empty, one line each; when it refused, a one-line error and
 * exit 1: the command asked for was not carried out (the same on the restic engine).
 */
export async function reportEmptiedGroups(ctx: Context, r: { dryRun: boolean; refused: boolean; emptiedGroups: EmptiedGroup[]; byIds?: boolean }): Promise<void> {
  const groups = r.emptiedGroups;
  if (!groups.length) return;
  const { emptiedGroupText } = await import("../present/retention.js");
  const why = r.byIds ? "the ids name every snapshot of" : "the policy keeps no snapshot of";
  for (const g of groups) {
    if (r.refused) info(ctx.out, `refused: ${why} ${emptiedGroupText(g)}`);
    else info(ctx.out, `${r.dryRun ? "would remove" : "removed"} every snapshot of ${emptiedGroupText(g)} (--unsafe-allow-remove-all)`);
  }
  if (!r.refused) return;
  const fix = r.byIds
    ? "leave one of each group out, or pass --unsafe-allow-remove-all"
    : "fix the policy so that it keeps something of each group (see --dry-run), or, to empty a host's groups on purpose, pass --host and --unsafe-allow-remove-all";
  warn(`refusing to forget: it would remove every snapshot of ${groups.length} group(s) (${groups.map((g) => `host ${g.host}`).join(", ")}); nothing ${r.dryRun ? "would be" : "was"} forgotten; ${fix}`);
  process.exitCode = EXIT.failure;
}

/** "1.2 MiB freed (3.4 MiB → 2.2 MiB)": what a prune gave back. */
function freed(r: PruneReport): string {
  if (r.nothingToDo) return `nothing to free (${formatBytes(r.bytes.after)} in use)`;
  return `${formatBytes(Math.max(0, r.bytes.before - r.bytes.after))} freed (${formatBytes(r.bytes.before)} → ${formatBytes(r.bytes.after)})`;
}

/** `pruned`: what the prune after it did, in words; `howToFree`: what frees the data when none ran. */
function printForget(ctx: Context, r: Omit<EngineForgetResult, "prune">, pruned: string | undefined, howToFree: string): void {
  if (r.keep.length) {
    info(ctx.out, `keep ${r.keep.length} snapshot(s):`);
    info(ctx.out, table(r.keep.map((k) => ["  " + short(k.id), when(k.time), k.host, k.reasons.join(", ")])));
  }
  if (r.remove.length) {
    info(ctx.out, `${r.dryRun || r.refused ? "would remove" : "remove"} ${r.remove.length} snapshot(s):`);
    info(ctx.out, table(r.remove.map((k) => ["  " + short(k.id), when(k.time), k.host, k.tags.join(",")])));
  }
  for (const u of r.unreadable) info(ctx.out, `left alone: snapshot ${short(u.id)} cannot be read (${u.error}); forget it by id`);
  if (r.refused) return;
  if (r.remove.length === 0) info(ctx.out, `nothing to forget: the policy keeps all ${r.keep.length} snapshot(s)`);
  else if (r.dryRun) info(ctx.out, `dry run: would forget ${r.remove.length} and keep ${r.keep.length} snapshot(s); nothing was changed`);
  else info(ctx.out, `forgot ${r.removed} snapshot(s), kept ${r.keep.length}; ${pruned ?? howToFree}`);
}

function printPrune(ctx: Context, r: PruneReport): void {
  const would = r.dryRun ? "would " : "";
  if (r.nothingToDo) {
    const extra = [r.indexFiles.deleted ? `${r.indexFiles.deleted} superseded index file(s) deleted` : "", r.tempFilesDeleted ? `${r.tempFilesDeleted} temp file(s) of dead writers deleted` : ""].filter(Boolean);
    info(ctx.out, `nothing to prune: all ${r.packs.before} pack(s) (${formatBytes(r.bytes.before)}) hold data that ${r.snapshots} snapshot(s) use${extra.length ? `; ${extra.join(", ")}` : ""}`);
    return;
  }
  const rows = [
    ["packs", `${r.packs.before} before: ${would}delete ${r.packs.deleted}, ${would}repack ${r.packs.repacked}${r.dryRun ? "" : ` into ${r.packs.written}`}, keep ${r.packs.kept}${r.dryRun ? "" : `; ${r.packs.after} now`}`],
    [
      "bytes",
      `${formatBytes(r.bytes.before)} before: ${would}delete ${formatBytes(r.bytes.deleted)}, ${would}repack ${formatBytes(r.bytes.repacked)}${r.dryRun ? "" : ` into ${formatBytes(r.bytes.written)}; ${formatBytes(r.bytes.after)} now`}`,
    ],
    ["blobs", `${r.blobs.used} in use by ${r.snapshots} snapshot(s); ${would}move ${r.blobs.repacked}, ${would}drop ${r.blobs.removed}`],
  ];
  if (!r.dryRun) rows.push(["index", `${r.indexFiles.written ? `1 new file replaced ${r.indexFiles.deleted}` : "unchanged"}`]);
  if (r.tempFilesDeleted) rows.push(["temp", `${r.tempFilesDeleted} file(s) of dead writers deleted`]);
  if (r.blobs.missing.length) rows.push(["MISSING", `${r.blobs.missing.length} used blob(s) were already missing (run \`pi-guard check --read-data\`)`]);
  if (r.blobs.damaged.length) rows.push(["DAMAGED", `${r.blobs.damaged.length} used blob(s) are damaged; their packs were kept as they are`]);
  info(ctx.out, table(rows));
  if (r.dryRun) info(ctx.out, "dry run: nothing was changed");
}

async function runPrune(ctx: Context, repo: Awaited<ReturnType<Context["open"]>>, opts: { dryRun?: boolean; maxUnused?: string; allowDamaged?: boolean }): Promise<PruneReport> {
  const { pruneRepository } = await import("../library/retention.js");
  const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
  try {
    return await pruneRepository(repo, { ...opts, lockWaitMs: ctx.lockWaitMs, onProgress: (p) => progress.update(`${p.phase} ${p.done}/${p.total}`) });
  } finally {
    progress.done();
  }
}

/** Pruning went on past damage (--allow-damaged): the work is done, the repository is still damaged. */
async function exitForDamage(r: PruneReport | undefined): Promise<void> {
  const { pruneLeftDamage } = await import("../library/retention.js");
  if (pruneLeftDamage(r)) process.exitCode = EXIT.damaged;
}

export function registerPruneCommands(program: Command): void {
  program
    .command("forget")
    .argument("[ids...]", "snapshot ids (or unique prefixes) to forget")
    .description("delete snapshots a retention policy does not keep (their data goes with `prune`)")
    .option("--keep-last <n>", "keep the n newest snapshots")
    .option("--keep-within <duration>", "keep every snapshot within this long of the newest one (1h, 2d, 1y6m; m = months)")
    .option("--keep-hourly <n>", "keep the newest snapshot of each of the last n hours that have one")
    .option("--keep-daily <n>", "keep the newest snapshot of each of the last n days that have one")
    .option("--keep-weekly <n>", "keep the newest snapshot of each of the last n ISO weeks that have one")
    .option("--keep-monthly <n>", "keep the newest snapshot of each of the last n months that have one")
    .option("--keep-yearly <n>", "keep the newest snapshot of each of the last n years that have one")
    .option("--keep-tag <tag...>", "keep snapshots with this tag (a,b: with both tags)")
    .option("--policy", "use the retention policy of the config file (default: 1h of everything, 48 hourly, 30 daily, 26 weekly)")
    .option("--host <host>", "only consider snapshots of this host")
    .option("--include-special", "let the policy also remove pre-restore, pre-delete, import and suspect-loss snapshots (kept by default)")
    .option("--unsafe-allow-remove-all", "let the policy (with --host) or the ids remove every snapshot of a host+folders group")
    .option("--dry-run", "show what would be forgotten; change nothing")
    .option("--prune", "then run `pi-guard prune`")
    .option("--max-unused <percent>", "with --prune: see `pi-guard prune --help`", "10%")
    .option("--allow-damaged", "with --prune: see `pi-guard prune --help`")
    .addHelpText(
      "after",
      `
Snapshots are grouped by host and backed-up folders, and the policy applies to each group as in
restic: periods are in local time, each keeps the newest snapshot in it, and a snapshot is kept
when any rule keeps it (the reasons are listed). Pre-restore, pre-delete, import and suspect-loss
snapshots are always kept and do not use up a period, unless --include-special. Without any --keep-*
option, --policy or ids, nothing is forgotten (exit 2): forgetting every snapshot is never allowed.
Forgetting deletes snapshot objects only; \`pi-guard prune\` then removes the data no snapshot
uses. Takes the exclusive lock (a dry run: a shared one). See docs/RETENTION.md.

A forget never removes every snapshot of a group: if the policy keeps none of a group's snapshots
(a typo in --keep-tag), or the ids name all of them, nothing at all is forgotten, each such group
is named, and the exit code is 1; --dry-run shows the same. --unsafe-allow-remove-all allows it:
by policy only together with --host, so that one host's groups can go but never the repository's.

Examples:
  $ pi-guard forget --keep-within 1h --keep-hourly 48 --keep-daily 30 --dry-run
  $ pi-guard forget --policy --prune
  $ pi-guard forget --keep-last 10 --keep-tag important --json
  $ pi-guard forget 1a2b3c4d
  $ pi-guard forget --host old-laptop --keep-tag keep --unsafe-allow-remove-all`,
    )
    .action(async (ids: string[], flags: ForgetFlags, cmd: Command) => {
      const ctx = context(cmd);
      const { retentionPolicy, unusedShare } = await import("../library/retention.js");
      const policy = await retentionPolicy(flags, ctx.config);
      const maxUnusedFraction = await unusedShare(flags.maxUnused); // a bad value is a usage error before anything is forgotten
      const engine = await ctx.engine();
      const progress = new Progress(!!flags.prune && !ctx.out.json && !ctx.out.quiet);
      let report: EngineForgetResult;
      try {
        report = await engine.forget({
          policy,
          ids: ids.length ? ids : undefined,
          dryRun: flags.dryRun,
          host: flags.host,
          includeSpecial: flags.includeSpecial,
          allowRemoveAll: flags.unsafeAllowRemoveAll,
          lockWaitMs: ctx.lockWaitMs,
          prune: flags.prune ? { maxUnusedFraction, allowDamaged: flags.allowDamaged, onProgress: (p) => progress.update(`${p.phase} ${p.done}/${p.total}`) } : undefined,
        });
      } finally {
        progress.done();
      }
      const { prune, ...forgot } = report;
      const pruned = prune?.engine === "native" ? prune.report : undefined;
      if (ctx.out.json) printJson({ ...forgot, pruned: !!prune, ...(pruned ? { prune: pruned } : {}) });
      else {
        printForget(ctx, forgot, prune && (pruned ? `pruned: ${freed(pruned)}` : `${engine.kind} prune freed their data`), engine.kind === "restic" ? "`pi-guard forget --prune` (or restic prune) frees their data" : "`pi-guard prune` frees their data");
        if (pruned) printPrune(ctx, pruned);
      }
      await reportEmptiedGroups(ctx, { ...report, byIds: ids.length > 0 });
      await exitForDamage(pruned);
    });

  program
    .command("prune")
    .description("remove data that no snapshot uses; repack mostly unused packs, compact small ones")
    .option("--dry-run", "show what would be removed and repacked; change nothing")
    .option("--max-unused <percent>", "unused bytes that may stay in partly used packs, as a share of what is kept", "10%")
    .option("--allow-damaged", "go on past missing blobs and damaged packs (kept as they are) instead of refusing")
    .addHelpText(
      "after",
      `
Reads every snapshot's file list to find the data in use, deletes packs that hold none, and
rewrites (decrypts, re-frames, re-seals) the used blobs of packs that are mostly unused or small,
so no byte of removed data is carried over. New packs and one new index are written before
anything is deleted, so a prune killed at any moment leaves every snapshot restorable, and the
next prune finishes the job. Temp files of dead writers are removed too.

If a snapshot's file list cannot be read, or data that snapshots use is missing or damaged, prune
changes nothing and exits 3, naming it: run \`pi-guard check --read-data\`. --allow-damaged goes
on anyway, keeping damaged packs whole (nothing more is lost than already was). Takes the
exclusive lock: snapshots and restores wait (or fail with --lock-wait 0), and it waits for them.

Examples:
  $ pi-guard prune --dry-run
  $ pi-guard prune
  $ pi-guard prune --max-unused 0%      # repack every pack that holds any unused byte
  $ pi-guard prune --json`,
    )
    .action(async (opts: { dryRun?: boolean; maxUnused?: string; allowDamaged?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const { unusedShare } = await import("../library/retention.js");
      await unusedShare(opts.maxUnused); // a bad value is a usage error before the repository is opened
      const repo = await ctx.open();
      const report = await runPrune(ctx, repo, opts);
      if (ctx.out.json) printJson(report);
      else printPrune(ctx, report);
      await exitForDamage(report);
    });
}
