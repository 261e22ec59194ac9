import { execa } from "execa";
import { closeSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BIN } from "../helpers/cli.js";
import { bigText, makePiSession } from "../helpers/pi-factory.js";
import { tempRoot } from "../helpers/tmp.js";

const root = tempRoot("log-big");
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("salvage --from-log with 100 MB lines", () => {
  it("recovers a 100 MB prompt from a log whose lines are over 100 MB, with memory bounded by a few lines", async () => {
    const size = 100 * 1024 * 1024;
    const made = await makePiSession({ agentDir: join(root, "agent"), cwd: join(root, "proj"), turns: [{ user: bigText(size), assistant: ["ok"] }] });
    const log = join(root, "big.log");
    // Written line by line: the test itself must not build one 500 MB string.
    const fd = openSync(log, "w");
    writeSync(fd, readFileSync(made.file, "utf8").split("\n", 1)[0] + "\n");
    for (const e of made.events) writeSync(fd, `${JSON.stringify(e)}\n`);
    closeSync(fd);
    made.events.length = 0;
    const longest = statSync(log).size;
    expect(longest).toBeGreaterThan(3 * size);

    const out = join(root, "out");
    const env = { HOME: join(root, "home"), XDG_DATA_HOME: join(root, "data"), PI_CODING_AGENT_DIR: join(root, "agent2") };
    const run = await execa("/usr/bin/time", ["-f", "maxrss_kb=%M", process.execPath, BIN, "--json", "salvage", "--from-log", log, "--out", out], {
      env,
      extendEnv: true,
      reject: false,
    });
    expect(run.exitCode).toBe(0);
    const rssMb = Number(/maxrss_kb=(\d+)/.exec(String(run.stderr))![1]) / 1024;
    console.log(`100 MB-line log: ${(longest / 2 ** 20).toFixed(0)} MiB log, peak RSS ${rssMb.toFixed(0)} MiB`);
    const file = join(out, readdirSync(out)[0]);
    const lines = readFileSync(file, "utf8").split("\n");
    const user = lines.map((l) => (l.includes('"role":"user"') ? JSON.parse(l) : undefined)).find(Boolean);
    expect(user.message.content[0].text.length).toBe(size);
    // One line is held as bytes, as a string and as parsed objects; about 8x the line, never the file.
    expect(rssMb).toBeLessThan(1000);
  }, 600_000);
});
