// A pi-guard HTML export embeds the session the way `pi --export` does, so `salvage --from-html`
// gets the session back from the page alone: for a live session and for one only in a snapshot.

import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateWithPi } from "../helpers/pi-validate.js";
import { parseSessionText } from "../../src/agents/pi/parse.js";
import { runOk } from "../sessions/cli.js";
import { makeWorld, type World } from "../sessions/world.js";

let w: World;
beforeAll(async () => {
  w = await makeWorld("html-salvage");
});
afterAll(() => w?.sb.cleanup());

async function exportThenSalvage(sessionId: string, label: string) {
  const html = path.join(w.sb.root, `${label}.html`);
  await runOk(w.sb, ["export", sessionId, "--format", "html", "--output", html]);
  const out = w.sb.dir(`salvaged-${label}`);
  await runOk(w.sb, ["salvage", "--from-html", html, "--out", out, "--json"]);
  const files = readdirSync(out).filter((f) => f.endsWith(".jsonl"));
  expect(files).toHaveLength(1);
  return readFileSync(path.join(out, files[0]), "utf8");
}

describe("export --format html, then salvage --from-html", () => {
  it("recovers every entry of a live session", async () => {
    const original = parseSessionText(readFileSync(w.main.file, "utf8"));
    const text = await exportThenSalvage(w.main.sessionId, "live");
    validateWithPi(text);
    const recovered = parseSessionText(text);
    expect(recovered.header?.id).toBe(original.header?.id);
    // Salvage appends one provenance entry; everything before it is the original, entry for entry.
    expect(recovered.entries.slice(0, original.entries.length)).toEqual(original.entries);
    expect(recovered.entries.at(-1)).toMatchObject({ type: "custom", customType: "pi-guard/salvage" });
  });

  it("recovers a session that exists only in a snapshot", async () => {
    const original = parseSessionText(w.goneText);
    const text = await exportThenSalvage(w.gone.sessionId, "gone");
    validateWithPi(text);
    expect(parseSessionText(text).entries.slice(0, original.entries.length)).toEqual(original.entries);
  });
});
