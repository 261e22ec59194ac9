// Shared set-up for the forget/prune tests: a history of real snapshots (made by the CLI) whose
// contents differ, so that forgetting some leaves data only they used; each round's file state is
// recorded so survivors can be restored and compared byte for byte.

import { randomBytes, createHash } from "node:crypto";
import { rmSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import { readKeyFile } from "../../src/config/credentials.js";
import { Repository } from "../../src/repo/repository.js";
import { snapshotKey } from "../../src/repo/format.js";
import { LocalTarget } from "../../src/targets/local.js";
import type { PrunePhase } from "../../src/repo/prune.js";
import { collect, restoreJson, snapshot, spawnCli } from "../helpers/cli.js";
import { type FileState, fingerprint, listFiles, type Sandbox, treeState, writeFileExact, writePiConfigFiles } from "../helpers/tmp.js";

export interface Round {
  id: string;
  state: Map<string, FileState>;
}

export async function openRepo(sb: Sandbox): Promise<Repository> {
  return Repository.open(new LocalTarget(sb.repo), (await readKeyFile(path.join(sb.configHome, "pi-guard", "key")))!);
}

/** JSON lines of random text: compressible a little, unique per call. */
function lines(bytes: number): string {
  let out = "";
  while (out.length < bytes) out += JSON.stringify({ type: "message", id: randomBytes(4).toString("hex"), text: randomBytes(96).toString("base64") }) + "\n";
  return out;
}

/**
 * `n` snapshots. Each round appends to a live session (shared by all later snapshots), adds a new
 * session kept from then on, and writes a scratch file that only this round's snapshot holds.
 */
export async function makeHistory(sb: Sandbox, n: number, bytesPerRound = 64 * 1024): Promise<Round[]> {
  writePiConfigFiles(sb.agentDir);
  const dir = path.join(sb.sessionsDir, "--proj--");
  const live = path.join(dir, "live.jsonl");
  writeFileExact(live, lines(bytesPerRound), 0o644);
  const rounds: Round[] = [];
  for (let i = 0; i < n; i++) {
    writeFileExact(live, readFileSync(live, "utf8") + lines(bytesPerRound / 4), 0o644);
    writeFileExact(path.join(dir, `kept-${i}.jsonl`), lines(bytesPerRound / 2), 0o644);
    rmSync(path.join(dir, `scratch-${i - 1}.jsonl`), { force: true });
    writeFileExact(path.join(dir, `scratch-${i}.jsonl`), lines(bytesPerRound), 0o644);
    const s = await snapshot(sb, ["--quiet"]);
    rounds.push({ id: s.snapshotId, state: treeState(sb.agentDir) });
  }
  return rounds;
}

/**
 * Give a real snapshot another time (and extra tags): the same object re-saved, the old one
 * deleted. Returns the new id. Lets a test place snapshots at fixed times for the policy.
 */
export async function retime(repo: Repository, id: string, time: Date, tags: string[] = []): Promise<string> {
  const s = await repo.loadSnapshot(id);
  const newId = await repo.saveSnapshot({ ...s, time: time.toISOString(), tags: [...s.tags, ...tags] });
  await repo.target.delete(snapshotKey(id));
  return newId;
}

/** Every object file of the repository with its hash: to show a dry run changed nothing. */
export function repoListing(repoDir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of listFiles(repoDir)) {
    const rel = path.relative(repoDir, f);
    if (rel.startsWith("locks/")) continue;
    out[rel] = createHash("sha256").update(readFileSync(f)).digest("hex");
  }
  return out;
}

/** Each round restores (into a fresh folder) byte-identical to the state it was taken of. */
export async function expectRestores(sb: Sandbox, rounds: Round[]): Promise<void> {
  for (const r of rounds) {
    const target = path.join(sb.root, `restore-${r.id.slice(0, 8)}`);
    rmSync(target, { recursive: true, force: true });
    const res = await restoreJson(sb, [r.id, "--target", target]);
    expect(res.failed).toEqual([]);
    expect(fingerprint(treeState(target)), `snapshot ${r.id.slice(0, 8)}`).toEqual(fingerprint(r.state));
    rmSync(target, { recursive: true, force: true });
  }
}

/** Start `pi-guard prune` paused at `phase`; resolves once it says it is there. */
export async function pausedPrune(sb: Sandbox, phase: PrunePhase, args: string[] = []) {
  const child = spawnCli(sb, ["prune", ...args], { env: { PI_GUARD_TEST_PRUNE_PAUSE: phase } });
  const done = collect(child);
  let stderr = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (stderr.includes(`prune paused at ${phase}`)) resolve();
    });
    void done.then((r) => reject(new Error(`prune ended before pausing at ${phase}: ${r.code}\n${r.stdout}\n${r.stderr}`)));
  });
  return { child, done };
}

