import { createRequire } from "node:module";
import type * as Commander from "commander";
import { VERSION } from "../version.js";
import { EXIT, reportError } from "./output.js";
import { registerDoctorCommand, registerKeyCommands, registerRepoCommands } from "./repo-commands.js";
import { registerPruneCommands } from "./prune-commands.js";
import { registerCopyCommands } from "./copy-commands.js";
import { registerRestoreCommands } from "./restore-commands.js";
import { registerSalvageCommands } from "./salvage-commands.js";
import { registerSessionsCommands } from "./sessions-commands.js";
import { registerOpsCommands } from "./service-commands.js";
import { registerVerifyCommand } from "./verify-command.js";
import { registerWatchCommands } from "./watch-commands.js";
import { registerPiCommands } from "./pi-commands.js";
import { registerAgentsCommand } from "./agents-commands.js";
import { argsForUnknownCommand, pointUnknownCommandsToHelp } from "./unknown-command.js";
import { routeProcessWarnings } from "./warnings.js";

// Loaded as CommonJS: importing a CommonJS package from ESM costs a scan of its source for named
// exports, a measurable part of a short command's start-up.
const { Command, CommanderError, Option } = createRequire(import.meta.url)("commander") as typeof Commander;
type Command = Commander.Command;

export interface GlobalOptions {
  repo?: string;
  passwordFile?: string;
  keyFile?: string;
  agentDir?: string;
  config?: string;
  json?: boolean;
  quiet?: boolean;
  lockWait?: string;
}

export function buildProgram(): Command {
  const program = new Command("pi-guard")
    .version(VERSION)
    .description("Continuous, encrypted, deduplicated backups of the pi coding agent's sessions, and their recovery.")
    .option("-r, --repo <location>", "repository: a folder, s3://bucket/prefix or restic:<restic repository> (env PI_GUARD_REPO; default $XDG_DATA_HOME/pi-guard/repo)")
    .option("--password-file <file>", "read the repository password from a file (env PI_GUARD_PASSWORD_FILE)")
    .option("--key-file <file>", "key file for unattended use (env PI_GUARD_KEY_FILE; default $XDG_CONFIG_HOME/pi-guard/key)")
    .option("--agent-dir <dir>", "pi agent dir to back up (env PI_CODING_AGENT_DIR; default ~/.pi/agent)")
    .option("--config <file>", "config file (default $XDG_CONFIG_HOME/pi-guard/config.json)")
    .option("--json", "print machine-readable JSON")
    .option("-q, --quiet", "print only errors")
    .addOption(new Option("--lock-wait <seconds>", "wait this long for a locked repository").default("60"))
    // Usage errors are one line, like every other error (the hint is on the same line, not a second one).
    .configureOutput({ outputError: (str, write) => write(`pi-guard: ${str.trim().replace(/^error: /, "").replace(/\s*\n\s*/g, " ")} (run with --help for usage)\n`) })
    .exitOverride();
  program.addHelpText(
    "after",
    `
Examples:
  $ pi-guard init                      # create the repository (a key file if there is no password)
  $ pi-guard snapshot                  # back up ~/.pi/agent now
  $ pi-guard snapshots                 # list snapshots
  $ pi-guard restore "2h ago"          # put back the agent dir as of two hours ago (undoable)
  $ pi-guard check --read-data         # verify every byte of the repository
  $ pi-guard verify                    # compare the live files with the latest snapshot, byte for byte
  $ pi-guard demo                      # watch a lost sessions dir come back, in a temp folder

Environment: PI_GUARD_REPO, PI_GUARD_PASSWORD, PI_GUARD_PASSWORD_FILE, PI_GUARD_KEY_FILE,
PI_CODING_AGENT_DIR, XDG_CONFIG_HOME, XDG_DATA_HOME, NO_COLOR; for s3:// repositories the AWS SDK's
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL(_S3), and
PI_GUARD_RETRY_MAX (how long an outage is waited out: 5m by default, 0 for never) (docs/TARGETS.md);
for restic: repositories PI_GUARD_RESTIC (the restic binary) and restic's backend variables (docs/RESTIC.md).
Exit codes: 0 ok, 1 failure, 2 usage error, 3 damaged repository data or an incomplete snapshot.`,
  );
  registerRepoCommands(program);
  registerRestoreCommands(program);
  registerVerifyCommand(program);
  registerKeyCommands(program);
  registerDoctorCommand(program);
  registerAgentsCommand(program);
  registerSalvageCommands(program);
  registerSessionsCommands(program);
  registerOpsCommands(program);
  registerPruneCommands(program);
  registerWatchCommands(program);
  registerCopyCommands(program);
  registerPiCommands(program);
  pointUnknownCommandsToHelp(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  routeProcessWarnings();
  const program = buildProgram();
  try {
    const unknown = argsForUnknownCommand(program, argv.slice(2));
    await program.parseAsync(unknown ? [...argv.slice(0, 2), ...unknown] : argv);
    return (program as Command & { exitCodeOverride?: number }).exitCodeOverride ?? Number(process.exitCode ?? 0);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.code === "commander.help") return EXIT.ok;
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    return reportError(err);
  }
}
