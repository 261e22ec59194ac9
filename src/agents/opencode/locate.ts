// Where opencode keeps its data, apart from the adapter (src/agents/locators.ts).

import path from "node:path";
import { dirByPrecedence } from "../locate.js";
import type { AgentLocation, AgentRoot, LocateContext } from "../types.js";

export const OPENCODE_ROOT = "opencode";
/** A db that OPENCODE_DB puts outside the data dir: its folder is a root of its own. */
export const OPENCODE_DB_ROOT = "opencode-db";
export const ENV_OPENCODE_DB = "OPENCODE_DB";

/** flag > $XDG_DATA_HOME/opencode > config (`agents.opencode.dir`) > ~/.local/share/opencode; OPENCODE_DB adds the db's folder when it is elsewhere. */
export function locateOpencode(ctx: LocateContext): AgentLocation {
  const { env, home } = ctx;
  // A relative XDG_DATA_HOME is ignored, as the XDG spec (and opencode) ignore it.
  const { dir, foundBy, via } = dirByPrecedence(ctx, "XDG_DATA_HOME", path.join(home, ".local", "share", "opencode"), (v) => (path.isAbsolute(v) ? path.join(v, "opencode") : undefined));
  const roots: AgentRoot[] = [{ name: OPENCODE_ROOT, path: dir, agent: "opencode", foundBy, ...(via ? { via } : {}) }];
  const notes: string[] = [];
  const db = env[ENV_OPENCODE_DB];
  if (db && db !== ":memory:") {
    const abs = path.isAbsolute(db) ? db : path.join(dir, db);
    const rel = path.relative(dir, abs);
    if (rel.startsWith("..") || path.isAbsolute(rel)) {
      roots.push({ name: OPENCODE_DB_ROOT, path: path.dirname(abs), agent: "opencode", foundBy: "env", via: ENV_OPENCODE_DB });
      notes.push(`OPENCODE_DB puts the database at ${abs}: its folder is backed up as root "${OPENCODE_DB_ROOT}"`);
    }
  } else if (db === ":memory:") notes.push("OPENCODE_DB is :memory:: opencode keeps no sessions on disk");
  return { agent: "opencode", dir, foundBy, ...(via ? { via } : {}), roots, ...(notes.length ? { notes } : {}) };
}
