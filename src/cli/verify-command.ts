import type { Command } from "commander";
import { context } from "./context.js";
import { formatBytes, formatDuration, info, printJson, table, warn } from "./output.js";
import { Progress } from "./progress.js";
import { shownPath } from "./repo-commands.js";
import type { Difference } from "../snapshot/verify.js";

function detail(d: Difference): string {
  if (d.error) return d.error;
  if (d.liveType) return `a ${d.type} in the snapshot, a ${d.liveType} on disk`;
  if (d.status === "changed" && d.type === "symlink") return "another link target";
  if (d.status === "changed" && d.from !== undefined) {
    const sizes = `snapshot ${formatBytes(d.snapshotSize!)}, on disk ${formatBytes(d.liveSize!)}`;
    return d.from === d.snapshotSize ? `the snapshot's bytes are its start; ${sizes}` : `differs from byte ${d.from} on; ${sizes}`;
  }
  return "";
}

export function registerVerifyCommand(program: Command): void {
  program
    .command("verify")
    .description("compare the live files with a snapshot byte for byte (reads them only)")
    .argument("[when]", 'latest (default), a snapshot id, an ISO time, or e.g. "2h ago"')
    .option("--host <host>", "choose among this host's snapshots (default: this host's, when several hosts share the repository)")
    .addHelpText(
      "after",
      `
Every file and symlink of the snapshot is compared with what is at its path now, in the sources
of the current configuration (the same filters as a snapshot): each file is read in the lengths of
the snapshot's blobs and each piece checked against the blob's id (HMAC-SHA-256), so "same" means
exactly the bytes a restore would write. Files that differ (and from which byte), that are missing,
or that are new are listed; folders, modes and times are not compared. FIFOs, sockets and devices
are listed apart and are no difference. Of the repository only the index and the file list are
read (check --read-data reads the data itself), under a shared lock; the sources are only read.

It finds what a snapshot's change detection cannot: a file rewritten in place before its tail
within snapshot.fullReadIntervalMs of its last full read (docs/FORMAT.md §10). Then
\`pi-guard snapshot --full-read\` backs up every file read in full, trusting nothing of the last one.

Exit 0 when identical, 1 when anything differs, 3 when the snapshot's own record of a file cannot
be found in the repository (damage).

Examples:
  $ pi-guard verify                       # the live agent dir against the latest snapshot
  $ pi-guard verify 3f2a9c1e
  $ pi-guard verify "1h ago" --json | jq '.differences[] | select(.status == "changed") | .path'`,
    )
    .action(async (when: string | undefined, opts: { host?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const repo = await ctx.open();
      const { verifyAgainstSnapshot } = await import("../library/repository.js");
      const progress = new Progress(!ctx.out.json && !ctx.out.quiet);
      let report;
      try {
        report = await verifyAgainstSnapshot(ctx.config, repo, {
          when,
          host: opts.host,
          lockWaitMs: ctx.lockWaitMs,
          onProgress: (p) => progress.update(`${p.files} files, ${formatBytes(p.bytes)} read  ${p.current}`),
        });
      } finally {
        progress.done();
      }
      const { snapshot: s, differences } = report;
      process.exitCode = report.exit;
      for (const r of report.rootsNotConfigured) warn(`root "${r.name}" (${r.path}) of the snapshot is not configured now: not compared`);
      if (ctx.out.json) {
        printJson({
          snapshotId: s.id,
          snapshotTime: s.snapshot.time,
          host: s.snapshot.host,
          identical: report.identical,
          files: report.files,
          same: report.same,
          bytes: report.bytes,
          differences,
          special: report.special,
          rootsNotConfigured: report.rootsNotConfigured,
          durationMs: report.durationMs,
        });
        return;
      }
      for (const d of differences) info(ctx.out, `${d.status.padEnd(10)} ${shownPath(d.root, d.path)}${detail(d) ? `  (${detail(d)})` : ""}`);
      const count = (status: string) => differences.filter((d) => d.status === status).length;
      const kinds = ["changed", "missing", "new", "unreadable", "damaged"].map((k) => [k, count(k)] as const).filter(([, n]) => n > 0);
      info(
        ctx.out,
        table([
          ["snapshot", `${s.id.slice(0, 8)}  ${s.snapshot.time}, host ${s.snapshot.host}`],
          ["compared", `${report.files} files and links, ${report.same} the same; ${formatBytes(report.bytes)} read in ${formatDuration(report.durationMs)}`],
          ...(report.special.length ? [["not compared", `${report.special.length} FIFO(s), socket(s) or device(s)`]] : []),
          ["result", report.identical ? "identical" : `NOT identical: ${kinds.map(([k, n]) => `${n} ${k}`).join(", ") || "roots not compared"}`],
        ]),
      );
      // The next snapshot would trust what it trusted before (FORMAT.md §10): say how to read all.
      if (differences.some((d) => d.status === "changed" && d.type === "file")) info(ctx.out, "to back up every file as it is now, reading each in full: pi-guard snapshot --full-read");
    });
}
