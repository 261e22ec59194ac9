import type { Command } from "commander";
import { context } from "./context.js";
import { info, printJson, table } from "./output.js";

export function registerSalvageCommands(program: Command): void {
  program
    .command("repair")
    .description("fix a damaged session file (torn or glued lines, lost header) into a copy pi can load")
    .argument("<file>", "the session .jsonl file")
    .option("--in-place", "replace the file itself, after saving a backup beside it")
    .option("--out <file>", "write the repaired session here (never overwritten)")
    .option("--cwd <path>", "project dir for a header that has to be rebuilt")
    .addHelpText(
      "after",
      `
Without --in-place the original is never touched: the repaired copy is FILE.repaired.jsonl
(or FILE.repaired-2.jsonl ... if that exists). With --in-place the original is first copied to
FILE.<time>.bak and the repaired file is swapped in atomically.

Examples:
  $ pi-guard repair ~/.pi/agent/sessions/--home-me-proj--/2026-01-01T10-00-00-000Z_<id>.jsonl
  $ pi-guard repair broken.jsonl --in-place --json`,
    )
    .action(async (file: string, opts: { inPlace?: boolean; out?: string; cwd?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const { repairFile } = await import("../salvage/repair-file.js");
      const result = await repairFile(file, { inPlace: opts.inPlace, out: opts.out, fallbackCwd: opts.cwd });
      const r = result.report;
      if (ctx.out.json) {
        printJson({
          file: result.file,
          changed: r.changed,
          output: result.output,
          backup: result.backup,
          entries: r.entries,
          recoveredEntries: r.recoveredEntries,
          droppedLines: r.droppedLines,
          headerSynthesized: r.headerSynthesized,
          actions: r.actions,
        });
        return;
      }
      if (!r.changed) {
        info(ctx.out, `${file}: no damage found, nothing written (${r.entries} entries)`);
        return;
      }
      for (const action of r.actions) info(ctx.out, `  ${action}`);
      const rows = [
        ["entries", `${r.entries} (${r.recoveredEntries} taken back out of glued lines)`],
        ["written", result.output ?? ""],
      ];
      if (result.backup) rows.push(["backup", result.backup]);
      info(ctx.out, table(rows));
    });
}
