/**
 * What `pi-guard snapshot` does once its flags are parsed, for the command table (repo-commands.ts)
 * and for a plain snapshot (start.ts's early dispatch): snapshot-plain.ts prints a snapshot the
 * watcher took with printSnapshot, and snapshot-direct.ts runs snapshotAction when none did. One
 * body for all, so their output and exit codes are the same.
 */
import type { SnapshotTaken } from "../library/snapshot.js";
import type { Context } from "./context.js";
import { formatBytes, formatDuration, info, printJson, table, warn } from "./output.js";
import { Progress } from "./progress.js";

export interface SnapshotOptions {
  tag?: string[];
  fromTar?: string;
  time?: string;
  init?: boolean;
  allowEmpty?: boolean;
  acceptLoss?: boolean;
  fullRead?: boolean;
}

/**
 * `handOff`, when given, is why the running watcher did not take this plain snapshot: start.ts
 * asked it already, so it is not asked again.
 */
export async function snapshotAction(ctx: Context, opts: SnapshotOptions, handOff?: string): Promise<void> {
  const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
  const onProgress = (p: { files: number; bytes: number; current: string }) => progress.update(`${p.files} files, ${formatBytes(p.bytes)}  ${p.current}`);
  // A plain snapshot goes to the running watcher when there is one (src/library/snapshot.ts).
  const { snapshotHere, takeSnapshot } = await import("../library/snapshot.js");
  const engineOpts = { ...opts, tags: opts.tag, lockWaitMs: ctx.lockWaitMs, onProgress, readAll: opts.fullRead };
  const engine = () => ctx.engine();
  const taken = await (handOff === undefined ? takeSnapshot(ctx.config, engine, engineOpts) : snapshotHere(ctx.config, engine, engineOpts, handOff)).finally(() => progress.done());
  await printSnapshot(ctx, taken);
}

/** What `pi-guard snapshot` prints and exits with for a snapshot taken here or by the watcher. */
export async function printSnapshot(ctx: Context, taken: SnapshotTaken): Promise<void> {
  const { result: r, via } = taken;
  const restic = taken.engine === "restic";
  const where = restic ? `restic repository at ${ctx.config.repo.slice("restic:".length)}` : `repository at ${ctx.config.repo}`;
  if (r.created) info(ctx.out, `created ${where}${r.created.keyFile ? `; key file ${r.created.keyFile} (keep a copy somewhere safe)` : ""}`);
  const result = r.snapshot;
  if (!result) {
    warn(`nothing to back up: ${ctx.config.agentDir} does not exist (set PI_CODING_AGENT_DIR or --agent-dir)`);
    if (ctx.out.json) printJson({ snapshotId: null, reason: "agent dir missing", agentDir: ctx.config.agentDir, via });
    return;
  }
  const s = result.summary;
  const { notes } = taken;
  if (!ctx.out.json) for (const n of notes) info(ctx.out, `note: ${n}`);
  const { findingsExit, snapshotFindings } = await import("../engine/verdict.js");
  // The mirrors' lines come last, from reportShipments, with what each one got.
  const findings = await snapshotFindings(r, ctx.config.repo);
  for (const f of findings.filter((f) => f.kind !== "mirror")) warn(f.message);
  if (result.loss && r.lossAccepted) info(ctx.out, `accepted the deletion of ${result.loss.lost} of ${result.loss.filesBefore} files: snapshot ${result.id.slice(0, 8)} is the new whole state`);
  const exit = findingsExit(findings);
  if (exit && !process.exitCode) process.exitCode = exit;
  // Mirrors are shipped only by a snapshot taken here: start.ts's bundle of the hand-off path does not load the copy commands.
  const shipping = r.mirrors.length ? await import("./copy-commands.js") : undefined;
  if (ctx.out.json) {
    printJson({
      snapshotId: result.id,
      time: result.time,
      parent: result.parent,
      tags: result.tags,
      skipped: result.skipped,
      ...(restic ? { engine: "restic" } : { changedWhileRead: result.changedWhileRead, special: result.special, notes }),
      ...s,
      suspectLoss: result.loss ?? null,
      // An agent's own age-based cleanup since the last whole snapshot (not a loss), or null.
      ...(restic ? {} : { cleanup: result.cleanup ?? null }),
      lossAccepted: r.lossAccepted,
      ...(shipping ? { mirrors: r.mirrors.map(shipping.shipmentJson) } : {}),
      via,
      // Why a running watcher did not take it, when one was asked.
      ...(taken.handOff !== undefined ? { handOff: taken.handOff } : {}),
    });
    shipping?.reportShipments(ctx, r.mirrors, result.id);
    return;
  }
  info(
    ctx.out,
    table([
      ["snapshot", `${result.id.slice(0, 8)}  ${result.time}${restic ? "  (restic)" : ""}${result.tags.length ? `  [${result.tags.join(", ")}]` : ""}`],
      ["files", `${s.files} (${s.filesNew} new, ${s.filesChanged} changed, ${s.filesUnchanged} unchanged)`],
      ["total", formatBytes(s.bytesTotal)],
      ["new data", s.bytesStored === undefined ? formatBytes(s.bytesNew) : `${formatBytes(s.bytesNew)} (${formatBytes(s.bytesStored)} stored)`],
      ["duration", formatDuration(s.durationMs)],
    ]),
  );
  shipping?.reportShipments(ctx, r.mirrors, result.id);
}
