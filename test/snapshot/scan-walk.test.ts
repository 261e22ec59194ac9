// The scan lstats the next entries of a folder while it yields the current one (LSTAT_AHEAD in
// src/snapshot/scan.ts). What it yields must not change: every entry, in sorted order, with its
// own stat, through folders deeper and wider than the window, names that are not UTF-8 included.
// Checked against a plain synchronous walk of the same real tree.

import { execFileSync } from "node:child_process";
import { lstatSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { scanSources } from "../../src/snapshot/scan.js";
import { tempRoot } from "../helpers/tmp.js";

/** [relative path, type, inode] of every entry below `dir`, sorted by name bytes at each level. */
function plainWalk(dir: Buffer, rel: Buffer | undefined): [string, string, number][] {
  const out: [string, string, number][] = [];
  const names = readdirSync(dir, { encoding: "buffer" }).sort(Buffer.compare);
  for (const name of names) {
    const abs = Buffer.concat([dir, Buffer.from("/"), name]);
    const relPath = rel ? Buffer.concat([rel, Buffer.from("/"), name]) : name;
    const st = lstatSync(abs);
    const type = st.isDirectory() ? "dir" : st.isFile() ? "file" : st.isSymbolicLink() ? "symlink" : "special";
    out.push([relPath.toString("base64"), type, st.ino]);
    if (st.isDirectory()) out.push(...plainWalk(abs, relPath));
  }
  return out;
}

describe("the source walk", () => {
  it("yields every entry in sorted order with its own stat, through folders wider and deeper than its look-ahead", async () => {
    const root = path.join(tempRoot("scan-walk"), "agent");
    mkdirSync(root);
    // 40 entries at the top, folders among them (the window spans a descent), nested 3 deep.
    for (let i = 0; i < 40; i++) {
      const name = `e${String(i).padStart(2, "0")}`;
      if (i % 7 === 3) {
        mkdirSync(path.join(root, name, "inner", "deeper"), { recursive: true });
        for (let j = 0; j < 20; j++) writeFileSync(path.join(root, name, `f${j}`), `${i}:${j}`);
        writeFileSync(path.join(root, name, "inner", "deeper", "last"), "x");
      } else writeFileSync(path.join(root, name), "x".repeat(i));
    }
    symlinkSync("e00", path.join(root, "link"));
    execFileSync("mkfifo", [path.join(root, "pipe")]);
    writeFileSync(Buffer.from(`${root}/bad-\xff-name`, "latin1"), "not UTF-8");
    // An empty folder, and one removed again: neither leaves a gap in the order.
    mkdirSync(path.join(root, "empty"));
    mkdirSync(path.join(root, "gone"));
    rmSync(path.join(root, "gone"), { recursive: true });

    const seen: [string, string, number][] = [];
    for await (const e of scanSources([{ name: "agent", path: root }], { include: [], exclude: [] })) {
      seen.push([e.pathBytes ?? Buffer.from(e.path).toString("base64"), e.type, e.stat.ino]);
    }
    const expected = plainWalk(Buffer.from(root), undefined);
    expect(seen.length).toBe(expected.length);
    expect(seen.length).toBeGreaterThan(150);
    expect(seen).toEqual(expected);
  });
});
