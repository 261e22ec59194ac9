/**
 * `pi-guard demo`: the accident that started this project, re-enacted in a temp folder.
 * A realistic agent dir is generated (the benchmark's generator), backed up, then sessions/,
 * auth.json and models.json are deleted the way `npm install --prefix` reified them away, and an
 * in-place restore brings them back. Success means every file is byte-identical, modes included.
 */
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { generateAgentDir } from "../../bench/generate.js";
import { compareTrees, hashTree } from "../../bench/treeHash.js";
import { loadConfig } from "../config/config.js";
import { initRepository, restore, snapshotAgentDir } from "../engine.js";

export interface DemoResult {
  dir: string;
  files: number;
  bytes: number;
  deleted: string[];
  snapshotMs: number;
  restoreMs: number;
  identical: boolean;
  difference: string;
  authMode: string;
}

export async function runDemo(opts: { sizeMiB: number; keep: boolean; log: (line: string) => void }): Promise<DemoResult> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "pi-guard-demo-"));
  const agentDir = path.join(dir, "home", ".pi", "agent");
  const env = { HOME: path.join(dir, "home"), XDG_CONFIG_HOME: path.join(dir, "config"), XDG_DATA_HOME: path.join(dir, "data") };
  const config = loadConfig({ agentDir }, env);
  const step = (n: number, text: string) => opts.log(`${n}. ${text}`);
  try {
    step(1, `building a realistic agent dir (${opts.sizeMiB} MiB) in ${agentDir}`);
    const gen = generateAgentDir({ out: agentDir, sizeBytes: opts.sizeMiB * 1024 * 1024, seed: "demo" });
    const before = await hashTree(agentDir);
    opts.log(`   ${gen.sessions} sessions, ${before.size} files`);

    const { repo, keyFile } = await initRepository(config);
    step(2, `snapshot into ${config.repo} (key file ${keyFile})`);
    const snap = await snapshotAgentDir(config, repo);
    opts.log(`   snapshot ${snap.id.slice(0, 8)}: ${snap.snapshot.summary.files} files in ${snap.snapshot.summary.durationMs} ms`);

    const deleted = ["sessions", "auth.json", "models.json"];
    step(3, `npm reify: deleting ${deleted.join(", ")} (everything not in npm's manifest)`);
    for (const name of deleted) await fs.rm(path.join(agentDir, name), { recursive: true, force: true });

    step(4, "pi-guard restore latest");
    const restored = await restore(config, repo, "latest");
    const counts = restored.report.files.filter((f) => f.action !== "unchanged").length;
    opts.log(`   ${counts} files put back in ${restored.report.durationMs} ms (undo: snapshot ${restored.undoSnapshot?.slice(0, 8)})`);

    step(5, "comparing every byte with the original");
    const after = await hashTree(agentDir);
    const difference = compareTrees(before, after);
    const authMode = ((await fs.stat(path.join(agentDir, "auth.json"))).mode & 0o777).toString(8);
    const identical = difference === "identical" && authMode === "600";
    opts.log(`   ${identical ? "byte-identical" : `DIFFERENT: ${difference}`}; auth.json mode ${authMode}`);
    return {
      dir,
      files: before.size,
      bytes: snap.snapshot.summary.bytesTotal,
      deleted,
      snapshotMs: snap.snapshot.summary.durationMs,
      restoreMs: restored.report.durationMs,
      identical,
      difference,
      authMode,
    };
  } finally {
    if (!opts.keep) await fs.rm(dir, { recursive: true, force: true });
  }
}
