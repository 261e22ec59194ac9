import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Where a worker script lies: `<name>.js` beside the module at `moduleUrl` (tsc output), or beside
 * the bundle chunk holding that module's code (dist/cli, where the worker is an entry of its own).
 * Under vitest the module is TypeScript, and tsx lets the worker load the .ts sibling.
 */
export function workerScript(moduleUrl: string, name: string): { file: string; execArgv: string[] } {
  const self = fileURLToPath(moduleUrl);
  const ts = self.endsWith(".ts");
  return { file: path.join(path.dirname(self), `${name}${ts ? ".ts" : ".js"}`), execArgv: ts ? ["--import", "tsx"] : [] };
}

/** PI_GUARD_WORKERS, when it is a whole number (0: all work on the calling thread); else undefined. */
export function workersSetting(): number | undefined {
  const env = Number(process.env.PI_GUARD_WORKERS);
  return process.env.PI_GUARD_WORKERS && Number.isInteger(env) && env >= 0 ? env : undefined;
}
