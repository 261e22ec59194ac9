import path from "node:path";
import { describe, expect, it } from "vitest";
import { insideOf, isInside } from "../../src/config/config.js";

// The watcher's filter (Watcher.ignored) uses insideOf on every file event: it must say what
// isInside says for the paths chokidar hands it (absolute, resolved once by the caller).
describe("insideOf", () => {
  const parents = ["/home/u/.pi/agent", "/home/u/.pi/agent/", "/", "/home/u/repo", "relative/dir"];
  const children = [
    "/home/u/.pi/agent",
    "/home/u/.pi/agent/sessions/a.jsonl",
    "/home/u/.pi/agentx/a.jsonl",
    "/home/u/.pi",
    "/home/u/repo/data/00/x",
    "/home/u/repo2",
    "/",
    "/home/u/.pi/agent/../agent/b",
    path.resolve("relative/dir/x"),
    path.resolve("relative/dirx"),
  ];
  for (const parent of parents)
    it(`agrees with isInside for ${parent}`, () => {
      const inside = insideOf(parent);
      for (const child of children) expect([child, inside(path.resolve(child))]).toEqual([child, isInside(child, parent)]);
    });
});
