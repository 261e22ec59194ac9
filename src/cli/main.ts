import { Command, CommanderError, Option } from "commander";
import { VERSION } from "../version.js";
import { EXIT, reportError } from "./output.js";
import { argsForUnknownCommand, pointUnknownCommandsToHelp } from "./unknown-command.js";
import { routeProcessWarnings } from "./warnings.js";
import { commandWord } from "./start.js";

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

type Registrar = (program: Command) => void;
const VERSION_FLAGS = new Set(["-V", "--version"]);

/**
 * The top-level commands (with aliases) each module registers, in the order of the full table
 * (`pi-guard --help` lists them so). A command line that names one of them builds only its group:
 * loading and building every command's definitions was a measurable part of a short command such
 * as a warm `sessions search` (bench/README.md, stop 31). test/cli/start-dispatch.test.ts checks
 * that these names are exactly the full table's.
 */
export const GROUPS: readonly { names: readonly string[]; load: () => Promise<Registrar> }[] = [
  { names: ["init", "snapshot", "backup", "snapshots", "check"], load: async () => (await import("./repo-commands.js")).registerRepoCommands },
  { names: ["restore", "archive", "demo"], load: async () => (await import("./restore-commands.js")).registerRestoreCommands },
  { names: ["verify"], load: async () => (await import("./verify-command.js")).registerVerifyCommand },
  { names: ["key"], load: async () => (await import("./repo-commands.js")).registerKeyCommands },
  { names: ["doctor"], load: async () => (await import("./repo-commands.js")).registerDoctorCommand },
  { names: ["agents"], load: async () => (await import("./agents-commands.js")).registerAgentsCommand },
  { names: ["repair", "salvage"], load: async () => (await import("./salvage-commands.js")).registerSalvageCommands },
  { names: ["sessions", "stats", "dashboard", "export"], load: async () => (await import("./sessions-commands.js")).registerSessionsCommands },
  { names: ["status", "schedule", "run-scheduled", "service"], load: async () => (await import("./service-commands.js")).registerOpsCommands },
  { names: ["forget", "prune"], load: async () => (await import("./prune-commands.js")).registerPruneCommands },
  { names: ["watch"], load: async () => (await import("./watch-commands.js")).registerWatchCommands },
  { names: ["copy"], load: async () => (await import("./copy-commands.js")).registerCopyCommands },
  { names: ["pi"], load: async () => (await import("./pi-commands.js")).registerPiCommands },
];

/**
 * The command table; with `args` (argv without node and the script) only the group of the command
 * they name, when start.ts's strict reading finds its name (anything else builds the whole table:
 * help, unknown commands, an option it is unsure of).
 */
export async function buildProgram(args?: readonly string[]): Promise<Command> {
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
  const word = args && commandWord(args);
  const group = word === undefined ? undefined : GROUPS.find((g) => g.names.includes(word));
  // commander prints the version for a leading --version before it looks for a command.
  const groups = group ? [group] : args && VERSION_FLAGS.has(args[0]!) ? [] : GROUPS;
  for (const register of await Promise.all(groups.map((g) => g.load()))) register(program);
  pointUnknownCommandsToHelp(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  routeProcessWarnings();
  const program = await buildProgram(argv.slice(2));
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
