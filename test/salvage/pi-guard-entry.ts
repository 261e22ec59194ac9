// The CLI as the lead will wire it: buildProgram() from main.ts plus registerSalvageCommands.
// Kept here until main.ts registers the salvage commands itself.
import { CommanderError } from "commander";
import { buildProgram } from "../../src/cli/main.js";
import { EXIT, reportError } from "../../src/cli/output.js";
import { registerSalvageCommands } from "../../src/cli/salvage-commands.js";

const program = buildProgram();
if (!program.commands.some((c) => c.name() === "repair")) registerSalvageCommands(program);
try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exitCode = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
  else process.exitCode = reportError(err);
}
