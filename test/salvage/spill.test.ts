// Logs hand each session on as soon as the log moves to the next one, and sessions wait for
// merging on disk (spill.ts): memory holds one session, not the log.

import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { salvageLog } from "../../src/salvage/log.js";
import { SessionSpill } from "../../src/salvage/spill.js";
import type { SalvagedSession } from "../../src/salvage/types.js";
import { makePiSession } from "../helpers/pi-factory.js";
import { jsonModeLog } from "./log-shapes.js";
import { tempRoot } from "../helpers/tmp.js";

const root = tempRoot("spill");
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("streaming log sessions through the spill file", () => {
  it("hands every session of a three-session log to the sink, keeps none, and reads them back intact", async () => {
    let log = "";
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const made = await makePiSession({ agentDir: join(root, "agent"), cwd: join(root, `p${n}`), turns: [{ user: `question ${n}`, assistant: [`answer ${n}`] }] });
      const text = readFileSync(made.file, "utf8");
      const header = JSON.parse(text.slice(0, text.indexOf("\n")));
      ids.push(header.id);
      log += jsonModeLog(header, made.events);
    }
    const file = join(root, "three.log");
    writeFileSync(file, log);

    const spill = new SessionSpill();
    const seen: SalvagedSession[] = [];
    try {
      const result = await salvageLog(file, (s) => {
        seen.push(s);
        spill.add(s);
      });
      expect(result.sessions).toEqual([]);
      expect(result.sessionCount).toBe(3);
      expect(seen.map((s) => s.header.id)).toEqual(ids);
      expect(spill.items.map((i) => i.id)).toEqual(ids);
      const back = spill.take([spill.items[1]]);
      expect(back).toEqual([JSON.parse(JSON.stringify(seen[1]))]);
      expect(spill.items.map((i) => i.id)).toEqual([ids[0], ids[2]]);
    } finally {
      spill.close();
    }
  });
});
