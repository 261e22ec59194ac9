import type { Command } from "commander";
import type { CopyReport } from "../repo/replicate.js";
import type { MirrorShipment } from "../repo/ship.js";
import { mirrorFailure } from "../engine/verdict.js";
import { context, type Context } from "./context.js";
import { EXIT, formatBytes, info, printJson, warn } from "./output.js";
import { Progress } from "./progress.js";

function copyLine(r: CopyReport): string {
  const copied = `${r.copied.length} snapshot(s) copied, ${r.present.length} already there`;
  const data = `${r.blobsCopied} blob(s), ${formatBytes(r.bytesCopied)} (${r.packsWritten} pack(s), ${formatBytes(r.bytesStored)} stored)`;
  return `${copied}; ${data}`;
}

export function shipmentJson(s: MirrorShipment): unknown {
  return { mirror: s.mirror, ok: !s.error, created: s.created ?? false, error: s.error ?? null, transient: s.transient ?? null, copy: s.report ?? null };
}

/**
 * What a snapshot (or watch) reports about its mirrors. A mirror that got nothing is a loud warning
 * and exit 1: "shipped to each" would otherwise be a lie. Returns whether all were shipped.
 */
export function reportShipments(ctx: Context, shipments: MirrorShipment[], snapshotId: string): boolean {
  let ok = true;
  for (const s of shipments) {
    if (!s.error && s.report) {
      info(ctx.out, `mirror ${s.mirror}: ${s.created ? "created, " : ""}${copyLine(s.report)}`);
      continue;
    }
    ok = false;
    warn(mirrorFailure(s, snapshotId, ctx.config.repo));
  }
  if (!ok && !process.exitCode) process.exitCode = EXIT.failure;
  return ok;
}

export function registerCopyCommands(program: Command): void {
  program
    .command("copy")
    .description("copy snapshots from one repository location to another (a mirror of the same repository)")
    .argument("[snapshots...]", "snapshot ids (or unique prefixes) to copy; all when none")
    .option("--from <location>", "the source: a folder or s3://bucket/prefix (default: the repository, --repo / PI_GUARD_REPO)")
    .option("--to <location>", "the destination (default: every mirror in the config file's \"mirrors\")")
    .option("--host <host>", "only snapshots of this host")
    .option("--latest", "only the newest snapshot of each host")
    .addHelpText(
      "after",
      `
Both locations hold the same repository: the destination is either empty (it becomes a copy: the
repository's config and key objects are copied verbatim, so the same key file or password opens
it) or a copy made earlier. A location holding another repository is refused. Snapshots the
destination already has are skipped; for the others, the data the destination lacks is read and
verified, packed on the destination, indexed, and only then is the snapshot object written, so a
snapshot that shows on the destination is complete. A snapshot whose data is damaged in the source
is reported and not copied (exit 3); the others are.

Progress goes to stderr. Exit 0 when every chosen snapshot is on the destination.

Examples:
  $ pi-guard copy --to s3://my-backups/pi/laptop             # every snapshot
  $ pi-guard copy --to /mnt/usb/pi-guard --latest
  $ pi-guard copy --from s3://my-backups/pi/laptop --to ./repo 3fa9c2e1
  $ pi-guard copy --latest --json                            # to every configured mirror`,
    )
    .action(async (ids: string[], opts: { from?: string; to?: string; host?: string; latest?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const { copyExit, copyToMirrors } = await import("../library/repository.js");
      const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
      let shipments: MirrorShipment[];
      try {
        shipments = await copyToMirrors(ctx.config, {
          ...opts,
          ids,
          lockWaitMs: ctx.lockWaitMs,
          onWarning: warn,
          onProgress: (p) => progress.update(`snapshot ${p.snapshot}/${p.snapshots}: ${p.blobs} blobs, ${formatBytes(p.bytes)}`),
        });
      } finally {
        progress.done();
      }
      if (ctx.out.json) printJson(shipments.map(shipmentJson));
      for (const s of shipments) {
        if (s.report) {
          if (!ctx.out.json) info(ctx.out, `${s.mirror}: ${s.created ? "created, " : ""}${copyLine(s.report)}`);
          for (const f of s.report.failed) warn(f.error);
          for (const u of s.report.unreadable) warn(`skipped unreadable snapshot in the source: ${u.error}`);
          if (s.report.selected === 0 && !ctx.out.json) info(ctx.out, `${s.mirror}: no snapshot matched; nothing to copy`);
        } else {
          warn(s.error?.startsWith(s.mirror) ? s.error : `${s.mirror}: ${s.error}`);
        }
      }
      process.exitCode = copyExit(shipments);
    });
}
