import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, it } from "vitest";
import { LocalTarget, TEMP_INFIX } from "../../src/targets/local.js";
import { targetConformance } from "./conformance.js";

const made: string[] = [];
afterAll(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

targetConformance("local folder", {
  async make() {
    const dir = mkdtempSync(path.join(os.tmpdir(), "pi-guard-local-target-"));
    made.push(dir);
    return new LocalTarget(path.join(dir, "repo"));
  },
  async plantTemp(target, key) {
    const file = path.join(target.localPath!, ...key.split("/")) + `${TEMP_INFIX}abc123`;
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, "half a write");
  },
});

it("list of everything skips the staging folder tmp/ of a folder repository", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pi-guard-local-target-"));
  made.push(dir);
  const t = new LocalTarget(dir);
  await t.put("config", Buffer.from("{}"));
  mkdirSync(path.join(dir, "tmp"));
  writeFileSync(path.join(dir, "tmp", "host-1-abc.pack"), "staging");
  const keys: string[] = [];
  for await (const o of t.list("")) keys.push(o.key);
  expect(keys).toEqual(["config"]);
});
