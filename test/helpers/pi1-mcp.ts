// pi 1.6.0's new agent dir files, written by pi itself, offline: `pi mcp add` writes mcp.json
// (headers, env, args, an OAuth client secret), and pi's own McpOAuthCredentialStore (the code
// behind `pi mcp login`) saves an OAuth state into mcp-auth.json, with pi's lock, layout and mode.
// A real sign-in needs an authorization server and a browser; the store is the part that writes.
// trust.json, crashes.json and models-store.json come from pi's own ProjectTrustStore,
// recordCrash and FileModelsStore. pi 1.x runs only on its own Node, so all of it is a child process.

import { execFileSync } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { pi1Env } from "./pi1.js";
import { pi1Dir, pi1Node } from "./tools.js";

const piCli = () => path.join(pi1Dir(), "node_modules", ".bin", "pi");

/** `pi mcp add ARGS` in the sandbox, run in `cwd` (where `--local` writes `.pi/mcp.json`); throws with pi's stderr when it fails. */
export function piMcpAdd(home: string, agentDir: string, args: string[], cwd = home): void {
  execFileSync(pi1Node(), [piCli(), "mcp", "add", ...args], { env: pi1Env(home, agentDir), cwd, stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
}

/** pi-mcp's McpOAuthState, as pi stores it per server. */
export interface McpOAuthState {
  serverUrl: string;
  clientInformation?: { client_id: string; client_secret?: string };
  tokens?: { access_token: string; token_type: string; refresh_token?: string; id_token?: string; expires_in?: number; scope?: string };
  tokensExpireAt?: number;
  codeVerifier?: string;
  oauthState?: string;
}

const core = (file: string) => pathToFileURL(path.join(pi1Dir(), "node_modules", "@earendil-works", "pi-coding-agent", "dist", "core", file)).href;

/** Run an ES module script on pi's Node with pi's environment for the sandbox; `arg` is its process.argv[1]. */
function runPiScript(home: string, agentDir: string, script: string, arg: unknown): void {
  execFileSync(pi1Node(), ["--input-type=module", "-e", script, JSON.stringify(arg)], { env: pi1Env(home, agentDir), cwd: home, stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
}

/** trust.json (a saved "trust" for `projectDir`), crashes.json (one crash record) and models-store.json, by pi's own code. */
export function piWriteStateFiles(home: string, agentDir: string, projectDir: string): void {
  const script = `const { ProjectTrustStore } = await import(${JSON.stringify(core("trust-manager.js"))});
const { recordCrash } = await import(${JSON.stringify(core("crash-log.js"))});
const { FileModelsStore } = await import(${JSON.stringify(core("models-store.js"))});
const [agentDir, projectDir] = JSON.parse(process.argv[1]);
new ProjectTrustStore(agentDir).set(projectDir, true);
if (!recordCrash({ kind: "uncaught_exception", error: new Error("faux crash for a test"), cwd: projectDir })) throw new Error("recordCrash failed");
await new FileModelsStore().write("acme", { models: [{ id: "acme-large" }], fetchedAt: 1764474000000 });`;
  runPiScript(home, agentDir, script, [agentDir, projectDir]);
}

/** Save `state` for server `name` into <agentDir>/mcp-auth.json with pi's own credential store. */
export function piMcpSaveOAuth(home: string, agentDir: string, name: string, state: McpOAuthState): void {
  const oauth = pathToFileURL(path.join(pi1Dir(), "node_modules", "@earendil-works", "pi-coding-agent", "dist", "extensions", "mcp", "oauth.js")).href;
  const script = `const { McpOAuthCredentialStore } = await import(${JSON.stringify(oauth)});
const [name, state] = JSON.parse(process.argv[1]);
await new McpOAuthCredentialStore().forServer(name, state.serverUrl).save(state);`;
  runPiScript(home, agentDir, script, [name, state]);
}
