import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSessionText } from "../../src/agents/pi/parse.js";
import type { SessionEntry, SessionHeader } from "../../src/model/session.js";
import { parseSessionFileName, serializeSession, sessionDirName, sessionFileName, sessionFilePath, writeFileAtomic } from "../../src/agents/pi/writer.js";
import { makePiSession } from "../helpers/pi-factory.js";
import { copyFixtures } from "./fixtures.js";
import { tempRoot } from "../helpers/tmp.js";

describe("serializeSession", () => {
  it.each(["branched.jsonl", "forked.jsonl"])("reproduces %s (written by pi) byte for byte", (name) => {
    const text = readFileSync(copyFixtures().get(name)!, "utf8");
    const parsed = parseSessionText(text);
    expect(serializeSession(parsed.header!, parsed.entries as SessionEntry[])).toBe(text);
  });
});

describe("pi's file naming", () => {
  it("maps cwd to pi's folder name", () => {
    expect(sessionDirName("/Users/x/proj")).toBe("--Users-x-proj--");
    expect(sessionDirName("C:\\Users\\x")).toBe("--C--Users-x--");
    expect(sessionDirName("\\\\server\\share")).toBe("---server-share--");
    expect(sessionDirName("rel/dir")).toBe("--rel-dir--");
  });

  it("names files from the header time and id, and reads them back", () => {
    const header = { type: "session", version: 3, id: "01a2-uuid", timestamp: "2024-12-03T14:00:00.123Z", cwd: "/p" } as SessionHeader;
    expect(sessionFileName(header)).toBe("2024-12-03T14-00-00-123Z_01a2-uuid.jsonl");
    expect(parseSessionFileName(`/x/${sessionFileName(header)}`)).toEqual({ id: "01a2-uuid", timestamp: header.timestamp });
    expect(parseSessionFileName("notes.jsonl")).toBeNull();
  });

  it("predicts where pi itself put a real session", async () => {
    const root = tempRoot("naming");
    const agentDir = join(root, "agent");
    const cwd = join(root, "my:proj");
    const { file } = await makePiSession({ agentDir, cwd, turns: [{ user: "hi", assistant: ["hello"] }] });
    const header = parseSessionText(readFileSync(file)).header!;
    expect(file).toBe(sessionFilePath(join(agentDir, "sessions"), header));
  });
});

describe("writeFileAtomic", () => {
  it("writes whole files, refuses to overwrite unless asked, and leaves no temp files", async () => {
    const dir = tempRoot("atomic");
    const target = join(dir, "sub", "s.jsonl");
    await writeFileAtomic(target, "one\n", { mkdir: true });
    expect(readFileSync(target, "utf8")).toBe("one\n");
    await expect(writeFileAtomic(target, "two\n")).rejects.toMatchObject({ code: "EEXIST" });
    expect(readFileSync(target, "utf8")).toBe("one\n");
    await writeFileAtomic(target, Buffer.from("three\n"), { overwrite: true });
    expect(readFileSync(target, "utf8")).toBe("three\n");
    expect(readdirSync(join(dir, "sub"))).toEqual(["s.jsonl"]);
  });

  it("cleans up its temp file when the target dir is missing", async () => {
    const dir = tempRoot("atomic");
    writeFileSync(join(dir, "keep"), "x");
    await expect(writeFileAtomic(join(dir, "missing", "f"), "x")).rejects.toBeDefined();
    expect(readdirSync(dir)).toEqual(["keep"]);
    expect(existsSync(join(dir, "missing"))).toBe(false);
  });
});
