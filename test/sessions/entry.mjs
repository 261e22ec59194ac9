// The built CLI as the lead will wire it: main.ts's program plus registerSessionsCommands.
// Used until main.ts registers the sessions commands itself (then the guard below skips it).
import { CommanderError } from "commander";
import { buildProgram } from "../../dist/src/cli/main.js";
import { EXIT, reportError } from "../../dist/src/cli/output.js";
import { registerSessionsCommands } from "../../dist/src/cli/sessions-commands.js";

const program = buildProgram();
if (!program.commands.some((c) => c.name() === "sessions")) registerSessionsCommands(program);
try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exitCode = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
  else process.exitCode = reportError(err);
}
