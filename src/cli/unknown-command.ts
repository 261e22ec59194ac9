// commander prints the help and exits 0 for `pi-guard watch --help` (or `help watch`) before it
// notices that `watch` is no command. A typo then looks like a command that exists. This finds an
// unknown command name in the arguments first, so that main can let commander report it as usual.

import type { Command, Option } from "commander";

const HELP_FLAGS = new Set(["-h", "--help"]);

function findOption(cmd: Command | null, token: string): Option | undefined {
  const flag = token.includes("=") ? token.slice(0, token.indexOf("=")) : token.startsWith("--") ? token : token.slice(0, 2);
  for (let c: Command | null = cmd; c; c = c.parent) {
    const hit = c.options.find((o) => o.long === flag || o.short === flag);
    if (hit) return hit;
  }
  return undefined;
}

/**
 * When `args` (argv without node and the script) names a command that does not exist, the same
 * arguments without help flags and `help` commands, so that parsing them reports the unknown
 * command. Undefined when every command named exists, or when it cannot tell for sure.
 */
export function argsForUnknownCommand(program: Command, args: string[]): string[] | undefined {
  let cmd = program;
  const helpCommands = new Set<number>();
  for (let i = 0; i < args.length; i++) {
    const token = args[i];
    if (token === "--") return undefined;
    if (token.startsWith("-") && token !== "-") {
      if (HELP_FLAGS.has(token)) continue;
      const opt = findOption(cmd, token);
      // A value is glued on (--repo=x, -rx), or there is none to skip.
      if (!opt || !(opt.required || opt.optional) || token.includes("=") || (!token.startsWith("--") && token.length > 2)) continue;
      // An optional or variadic value may or may not take the next words: no guessing.
      if (opt.optional || opt.variadic) return undefined;
      i++;
      continue;
    }
    if (cmd.commands.length === 0) return undefined;
    const sub = cmd.commands.find((c) => c.name() === token || c.aliases().includes(token));
    if (sub) {
      cmd = sub;
      continue;
    }
    if (token === "help") {
      helpCommands.add(i);
      continue;
    }
    const end = args.includes("--") ? args.indexOf("--") : args.length;
    return args.filter((a, j) => !helpCommands.has(j) && !(j < end && HELP_FLAGS.has(a)));
  }
  return undefined;
}

/**
 * An unknown command's error points to the help that lists the commands at its level
 * (`pi-guard sessions --help` for `pi-guard sessions frob`), rather than "run with --help".
 */
export function pointUnknownCommandsToHelp(cmd: Command, path = cmd.name()): void {
  if (cmd.commands.length === 0) return;
  const { outputError } = cmd.configureOutput();
  cmd.configureOutput({
    outputError: (str, write) => {
      if (!/unknown command/.test(str) || !outputError) return outputError?.(str, write);
      write(`pi-guard: ${str.trim().replace(/^error: /, "").replace(/\s*\n\s*/g, " ")} (\`${path} --help\` lists the commands)\n`);
    },
  });
  for (const sub of cmd.commands) pointUnknownCommandsToHelp(sub, `${path} ${sub.name()}`);
}
