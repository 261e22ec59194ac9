// A program of its own that imports pi-guard by its package name: node_modules/pi-guard links to
// this checkout, as an install would hold it, so "exports" of package.json resolves the import.
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { PROJECT_ROOT } from "../helpers/cli.js";
import type { Sandbox } from "../helpers/tmp.js";

/** The program's folder (an ES-module package) in the sandbox. */
export function makePackageApp(sb: Sandbox): string {
  const app = sb.dir("app");
  mkdirSync(path.join(app, "node_modules"));
  symlinkSync(PROJECT_ROOT, path.join(app, "node_modules", "pi-guard"), "dir");
  writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  return app;
}
