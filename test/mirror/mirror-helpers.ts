// Shared by the mirror tests: the config file that names the mirrors.

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Sandbox } from "../helpers/tmp.js";

export function writeConfig(sb: Sandbox, config: unknown): void {
  mkdirSync(path.join(sb.configHome, "pi-guard"), { recursive: true });
  writeFileSync(path.join(sb.configHome, "pi-guard", "config.json"), JSON.stringify(config));
}
