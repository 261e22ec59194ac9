// The repository's root: the nearest folder above this file whose package.json is pi-guard's. Found
// by walking up rather than by a fixed "../..", so that it is also right when this file runs
// compiled under dist/ (bench/claude-sweep.ts imports the agent helpers, which need it).
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const pkg = path.join(dir, "package.json");
    if (existsSync(pkg) && JSON.parse(readFileSync(pkg, "utf8")).name === "pi-guard") return dir;
    if (path.dirname(dir) === dir) throw new Error(`no pi-guard package.json above ${from}`);
  }
}

export const PROJECT_ROOT = findRoot(path.dirname(fileURLToPath(import.meta.url)));
