// pi 1.6.0's MCP credential files, written by pi itself, offline: `pi mcp add` writes mcp.json
// (headers, env, args, an OAuth client secret), and pi's own McpOAuthCredentialStore (the code
// behind `pi mcp login`) saves an OAuth state into mcp-auth.json, with pi's lock, layout and mode.
// A real sign-in needs an authorization server and a browser; the store is the part that writes.
// pi 1.x runs only on its own Node, so everything here is a child process.

import { execFileSync } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { pi1Env } from "./pi1.js";
import { pi1Dir, pi1Node } from "./tools.js";

const piCli = () => path.join(pi1Dir(), "node_modules", ".bin", "pi");

/** `pi mcp add ARGS` in the sandbox; throws with pi's stderr when it fails. */
export function piMcpAdd(home: string, agentDir: string, args: string[]): void {
  execFileSync(pi1Node(), [piCli(), "mcp", "add", ...args], { env: pi1Env(home, agentDir), cwd: home, stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
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

/** Save `state` for server `name` into <agentDir>/mcp-auth.json with pi's own credential store. */
export function piMcpSaveOAuth(home: string, agentDir: string, name: string, state: McpOAuthState): void {
  const oauth = pathToFileURL(path.join(pi1Dir(), "node_modules", "@earendil-works", "pi-coding-agent", "dist", "extensions", "mcp", "oauth.js")).href;
  const script = `const { McpOAuthCredentialStore } = await import(${JSON.stringify(oauth)});
const [name, state] = JSON.parse(process.argv[1]);
await new McpOAuthCredentialStore().forServer(name, state.serverUrl).save(state);`;
  execFileSync(pi1Node(), ["--input-type=module", "-e", script, JSON.stringify([name, state])], { env: pi1Env(home, agentDir), cwd: home, stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
}
