import type { Command } from "commander";
import { fileURLToPath } from "node:url";
import { context } from "./context.js";
import { info, printJson, warn } from "./output.js";

/** The bundled extension, next to the bundled CLI (dist/cli → dist/pi-extension; scripts/bundle.mjs). */
const extensionFile = (): string => fileURLToPath(new URL("../pi-extension/index.js", import.meta.url));

const EXPLAIN = `
The extension runs inside pi (pi 1.x): at every turn_end, agent_settled and session_shutdown it
asks the running \`pi-guard watch\` of this agent dir to snapshot at once (it never writes the
repository itself); while an answer streams it keeps it in an in-flight journal in pi-guard's
state dir, which \`pi-guard salvage --from-journals\` turns back into a session if pi dies
mid-answer; and it shows in pi's footer whether the session is protected ("pi-guard: saved 2 s
ago", "pi-guard: NOT PROTECTED: watcher stopped"). See docs/EXTENSION.md.

install-extension writes one new file, <agent dir>/extensions/pi-guard.js, which pi discovers by
itself and which loads the extension from this pi-guard's package; pi's settings.json is not
touched. Running it again changes nothing (or points the file at this pi-guard); uninstall removes
only that file, and only if it is pi-guard's. A running pi picks it up at its next start or /reload.
For one run only: pi -e <that extension file>.`;

export function registerPiCommands(program: Command): void {
  const pi = program.command("pi").description("pi-guard's pi extension: install or remove it (docs/EXTENSION.md)");
  pi.command("install-extension")
    .description("install pi-guard's extension into pi (a loader file in <agent dir>/extensions/)")
    .option("--dry-run", "say what would be done, write nothing")
    .addHelpText("after", `${EXPLAIN}\n\nExamples:\n  $ pi-guard pi install-extension\n  $ pi-guard pi install-extension --dry-run --json\n  $ pi-guard --agent-dir ~/other-agent pi install-extension`)
    .action(async (opts: { dryRun?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const { installPiExtension } = await import("../library/agents.js");
      const r = await installPiExtension(ctx.config.agentDir, extensionFile(), !!opts.dryRun);
      if (ctx.out.json) return printJson(r);
      const verb = { installed: "installed", updated: "updated", unchanged: "already installed (unchanged)", removed: "", absent: "" }[r.action];
      info(ctx.out, `${r.dryRun && r.action !== "unchanged" ? `would be ${verb}` : verb}: ${r.loader} → ${r.extension}`);
      for (const other of r.alsoLoadedBy) warn(`pi also loads pi-guard through ${other}: remove that entry, or pi runs the extension twice`);
      if (r.action !== "unchanged" && !r.dryRun) info(ctx.out, "a running pi loads it at its next start or /reload; `pi-guard watch` must run for snapshots on each turn");
    });
  pi.command("uninstall-extension")
    .description("remove pi-guard's extension loader from <agent dir>/extensions/")
    .option("--dry-run", "say what would be done, write nothing")
    .addHelpText("after", `${EXPLAIN}\n\nExamples:\n  $ pi-guard pi uninstall-extension\n  $ pi-guard pi uninstall-extension --dry-run --json`)
    .action(async (opts: { dryRun?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const { uninstallPiExtension } = await import("../library/agents.js");
      const r = await uninstallPiExtension(ctx.config.agentDir, extensionFile(), !!opts.dryRun);
      if (ctx.out.json) return printJson(r);
      info(ctx.out, r.action === "absent" ? `not installed: ${r.loader} does not exist` : `${r.dryRun ? "would be removed" : "removed"}: ${r.loader}`);
      for (const other of r.alsoLoadedBy) warn(`pi still loads pi-guard through ${other}`);
    });
}
