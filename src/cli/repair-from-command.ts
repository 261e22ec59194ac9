import type { RepairFromReport } from "../repo/repair-from.js";
import type { Context } from "./context.js";
import { EXIT, formatBytes, info, printJson, table, warn } from "./output.js";
import { Progress } from "./progress.js";

const ids = (list: string[]) => list.map((id) => id.slice(0, 12)).join(", ");

/** `pi-guard repair --from A --to B [--dry-run]` (registered with `repair` in salvage-commands.ts). */
export async function runRepairFrom(ctx: Context, fromLocation: string, toLocation: string, dryRun: boolean): Promise<void> {
  const { repairFromCopy } = await import("../library/repository.js");
  const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
  let repaired: { from: string; to: string; report: RepairFromReport };
  try {
    repaired = await repairFromCopy(ctx.config, fromLocation, toLocation, { dryRun, lockWaitMs: ctx.lockWaitMs, onProgress: (line) => progress.update(line), onWarning: warn });
  } finally {
    progress.done();
  }
  const { from, to, report: r } = repaired;
  const unhealed = r.unhealed.blobs.length + r.unhealed.snapshots.length;
  if (ctx.out.json) printJson(r);
  else if (r.sound) info(ctx.out, `${to}: ${r.packs.checked} packs, ${r.indexFiles.listed} index files and ${r.snapshots.checked} snapshots are sound; nothing to repair`);
  else {
    const rows: string[][] = [];
    if (r.packs.missing.length) rows.push(["missing packs", `${r.packs.missing.length}: ${ids(r.packs.missing)}`]);
    if (r.packs.damaged.length) rows.push(["damaged packs", `${r.packs.damaged.length}: ${ids(r.packs.damaged)}`]);
    if (r.indexFiles.damaged.length) rows.push(["damaged index files", `${r.indexFiles.damaged.length}: ${ids(r.indexFiles.damaged)}`]);
    if (r.snapshots.damaged.length) rows.push(["damaged snapshots", `${r.snapshots.damaged.length}: ${ids(r.snapshots.damaged)}`]);
    const verb = dryRun ? "would write" : "wrote";
    rows.push(["blobs", `${verb} ${r.blobs.salvaged + r.blobs.copied} again: ${r.blobs.salvaged} salvaged from ${to}, ${r.blobs.copied} (${formatBytes(r.blobs.bytesCopied)}) copied from ${from}`]);
    if (!dryRun) {
      rows.push(["new index", `${r.newIndex?.slice(0, 12)} (${r.packsWritten} new pack(s)); replaced ${r.snapshots.replaced.length} snapshot object(s)`]);
      rows.push(["deleted", `${r.deleted.packs.length} damaged pack(s), ${r.deleted.indexFiles.length} superseded index file(s)`]);
    }
    info(ctx.out, table(rows));
  }
  for (const id of r.unhealed.blobs) warn(`cannot heal blob ${id.slice(0, 12)}: neither ${to} nor ${from} holds a good copy`);
  for (const s of r.unhealed.snapshots) warn(`cannot heal: ${s.error}`);
  if (unhealed) warn(`${unhealed} object(s) could not be healed; the damaged objects that held them were kept`);
  else if (!r.sound && !dryRun && !ctx.out.json) info(ctx.out, `${to} is healed; \`pi-guard check --read-data --repo ${to}\` verifies it`);
  if (r.notOnDestination && !ctx.out.json) info(ctx.out, `${r.notOnDestination} snapshot(s) of ${from} were never on ${to} (not damage; \`pi-guard copy --from ${from} --to ${to}\` copies them)`);
  if (unhealed || (dryRun && !r.sound)) process.exitCode = EXIT.damaged;
}
