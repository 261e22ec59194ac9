// Output a tool prints while it runs (pi's tool_execution_update) is kept in the in-flight journal:
// real pi 1.6.0 (RPC mode, faux provider) runs a real bash command that prints a line every 50 ms,
// is killed with kill -9 mid-run, and `salvage --from-journals --install` gives the printed lines
// back as a marked tool result after the saved answer that called the tool; pi 1.6.0's own parser
// loads the copy.
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ok } from "../helpers/cli.js";
import { pi1ToolCall, validatePi1 } from "../helpers/pi1.js";
import { makeSandbox, sha256File, type Sandbox } from "../helpers/tmp.js";
import { stateDir, waitFor, watchEnv } from "../watch/watch-helpers.js";
import { startRpcPi, stopPi, type RpcPi } from "./pi-rpc.js";

const sandboxes: Sandbox[] = [];
const pis: RpcPi[] = [];
afterEach(async () => {
  for (const p of pis.splice(0)) await stopPi(p, "SIGKILL");
  for (const sb of sandboxes.splice(0)) sb.cleanup();
});

const COMMAND = 'for i in $(seq 1 300); do echo "printed line $i"; sleep 0.05; done';

describe("the in-flight journal keeps a running tool's output", () => {
  it("kill -9 while bash prints: salvage --from-journals recovers the printed lines as a marked tool result pi 1.6.0 loads", async () => {
    const sb = makeSandbox("ext-tool");
    sandboxes.push(sb);
    mkdirSync(sb.agentDir, { recursive: true });
    const p = startRpcPi({ sb, env: watchEnv(sb), cwd: path.join(sb.home, "proj"), replies: [[pi1ToolCall("bash", { command: COMMAND })], "Done."] });
    pis.push(p);
    p.prompt("Print the lines.");
    const journalDir = path.join(stateDir(sb), "inflight");
    // Kill once the journal holds a few printed lines (read while bash runs).
    await waitFor("a journal holding bash's output", () => {
      const f = existsSync(journalDir) ? readdirSync(journalDir).find((n) => n.endsWith(".json")) : undefined;
      if (!f) return undefined;
      try {
        const j = JSON.parse(readFileSync(path.join(journalDir, f), "utf8"));
        return /printed line 5\n/.test(j.tools?.[0]?.text ?? "") ? f : undefined;
      } catch {
        return undefined; // mid-rename: look again
      }
    }, 60_000);
    p.child.kill("SIGKILL");
    expect(await p.exited).toBe("SIGKILL");
    const updates = p.events.filter((e) => e.event.type === "tool_execution_update").map((e) => e.event);
    const call = updates[0];
    const printed = String(updates.at(-1)!.partialResult.content[0]?.text ?? "");
    expect(printed).toMatch(/^printed line 1\n/);
    expect(printed).not.toContain("printed line 300"); // it really was killed mid-run

    const [original] = readdirSync(sb.sessionsDir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(sb.sessionsDir, f));
    const before = sha256File(original);
    // pi saved the answer that called bash, and has no result of it.
    expect(readFileSync(original, "utf8")).toContain(call.toolCallId);
    expect(readFileSync(original, "utf8")).not.toContain('"role":"toolResult"');

    const r = await ok(watchEnv(sb), ["salvage", "--from-journals", "--install", "--json"]);
    expect(r.json().sessions).toHaveLength(1);
    const installed = readdirSync(path.dirname(original)).map((f) => path.join(path.dirname(original), f)).filter((f) => f !== original && f.endsWith(".jsonl"));
    expect(installed).toHaveLength(1);
    const v = await validatePi1(readFileSync(installed[0], "utf8"), { expectMessages: true });
    const last = v.entries.findLast((e) => e.type === "message")!;
    const m = last.message as any;
    expect(m).toMatchObject({ role: "toolResult", toolCallId: call.toolCallId, toolName: "bash", isError: true });
    const [output, mark] = m.content.map((b: any) => b.text);
    expect(mark).toMatch(/^\[pi-guard: partial output recovered from the in-flight journal/);
    // The printed lines, in order, each one whole: a prefix of what bash had printed when pi died.
    const lines = output.trimEnd().split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(5);
    lines.forEach((l: string, i: number) => expect(l).toBe(`printed line ${i + 1}`));
    expect(printed.startsWith(output)).toBe(true);
    // pi's context holds the answer's call and the recovered result after it.
    expect(v.context.messages.at(-1)).toMatchObject({ role: "toolResult", toolCallId: call.toolCallId });
    expect(v.context.messages.at(-2)).toMatchObject({ role: "assistant" });
    expect(sha256File(original)).toBe(before);
  }, 120_000);
});
