// A fake model server on 127.0.0.1 for the real agent CLIs (Claude Code, Codex, opencode, Gemini
// CLI) to talk to offline. The core knows no API: each API is a route module (anthropic.ts,
// responses.ts, chat.ts, gemini.ts) that recognises its requests and streams the next turn of the
// test's reply script in that API's SSE dialect. Every request is recorded, answered or not, and an
// unknown path gets a 404: the agents probe endpoints of their own (model lists, telemetry, updates),
// and a test should see them rather than have them hang.
//
// It runs inside the test process, so the agent must run as an async child (spawn/execa), never
// spawnSync: a blocked event loop would never answer.

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the server received. */
export interface RecordedRequest {
  method: string;
  /** The path without the query, as "/v1/messages". */
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  body: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
  /** Which route answered it ("anthropic", "responses", …), or null for a 404. */
  route: string | null;
}

/** A tool call the model makes: the agent runs it and sends the result back in its next request. */
export interface ToolCall {
  name: string;
  args: Record<string, unknown>;
  /** The call's id; a stable one is made up when absent. */
  id?: string;
}

/** One model reply: optional thinking, optional text, then optional tool calls. */
export interface Turn {
  thinking?: string;
  text?: string;
  toolCalls?: ToolCall[];
  /** Milliseconds between streamed chunks (for tests that kill the agent mid-stream); 0 by default. */
  chunkDelayMs?: number;
  /** Only a request for which this holds takes this turn; others get the side reply, and the turn waits. */
  match?: (req: RecordedRequest) => boolean;
}

export const say = (text: string, more: Partial<Turn> = {}): Turn => ({ text, ...more });
export const callTool = (name: string, args: Record<string, unknown>, more: Partial<Turn> = {}): Turn => ({ toolCalls: [{ name, args }], ...more });

/** Usage the routes report for every turn: fixed, so that tests can assert on the numbers. */
export const FAKE_USAGE = { inputTokens: 120, outputTokens: 30, cacheReadTokens: 10, cacheWriteTokens: 5 };

export interface RouteContext {
  server: FakeModelServer;
  /** The next turn of the script for this request (consumed), or the side reply when none applies. */
  nextTurn(req: RecordedRequest): Turn;
  /** Opens an SSE stream on res that honours the turn's chunk delay. */
  sse(res: ServerResponse, turn?: Turn): SseStream;
}

/**
 * A route: answers the request and returns true, or returns false to let the next route try.
 * A route that answers owns `res` and must end it.
 */
export type Route = {
  name: string;
  handle: (req: RecordedRequest, res: ServerResponse, ctx: RouteContext) => boolean | Promise<boolean>;
};

export interface FakeModelOptions {
  routes: Route[];
  /** The turns main requests take in order. */
  script?: Turn[];
  /** What a request gets when no script turn applies (side requests: titles, summaries, the script's end). */
  sideReply?: Turn;
  /** Requests for which this holds never take a script turn (a route's own notion of a side request may add to it). */
  isSideRequest?: (req: RecordedRequest) => boolean;
}

export interface FakeModelServer {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Requests a route answered with a script turn, in order. */
  turnRequests: RecordedRequest[];
  /** Turns not yet taken. */
  remaining(): Turn[];
  /** Replaces the rest of the script (for a second run of the agent against the same server). */
  setScript(turns: Turn[]): void;
  close(): Promise<void>;
}

export interface SseStream {
  /** Writes `event: name` (when given) and `data: <json>`, then waits the chunk delay. */
  send(event: string | null, data: unknown): Promise<void>;
  /** Writes a raw line block, as "data: [DONE]". */
  raw(text: string): Promise<void>;
  end(): void;
}

const MAX_BODY = 64 * 1024 * 1024;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on("data", (b: Buffer) => {
      size += b.length;
      if (size > MAX_BODY) return reject(new Error(`request body over ${MAX_BODY} bytes`));
      parts.push(b);
    });
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function openSse(res: ServerResponse, delayMs: number): SseStream {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const pause = () => (delayMs > 0 ? new Promise<void>((r) => setTimeout(r, delayMs)) : Promise.resolve());
  return {
    async send(event, data) {
      if (res.destroyed) return;
      res.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
      await pause();
    },
    async raw(text) {
      if (res.destroyed) return;
      res.write(text);
      await pause();
    },
    end: () => res.end(),
  };
}

/** Splits text into streamed pieces (words with their spaces), so that a delay applies per piece. */
export function chunks(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [text];
}

let idCounter = 0;
/** A fresh id with a prefix, as "toolu_fake_3". */
export const fakeId = (prefix: string): string => `${prefix}${++idCounter}`;

export async function startFakeModel(opts: FakeModelOptions): Promise<FakeModelServer> {
  let script = [...(opts.script ?? [])];
  const sideReply = opts.sideReply ?? { text: "ok" };
  const requests: RecordedRequest[] = [];
  const turnRequests: RecordedRequest[] = [];

  const ctx: RouteContext = {
    server: undefined as unknown as FakeModelServer,
    nextTurn(req) {
      if (opts.isSideRequest?.(req)) return sideReply;
      const i = script.findIndex((t) => !t.match || t.match(req));
      // Only the first pending turn may be taken: a matcher lets a turn wait, never jump ahead.
      if (i !== 0) return sideReply;
      turnRequests.push(req);
      return script.shift()!;
    },
    sse: (res, turn) => openSse(res, turn?.chunkDelayMs ?? 0),
  };

  const http = createServer(async (req, res) => {
    let rec: RecordedRequest | undefined;
    try {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const body = await readBody(req);
      let json: unknown;
      try {
        json = body ? JSON.parse(body) : undefined;
      } catch {
        json = undefined;
      }
      rec = { method: req.method ?? "GET", path: url.pathname, query: url.searchParams, headers: req.headers, body, json, route: null };
      requests.push(rec);
      for (const route of opts.routes) {
        if (await route.handle(rec, res, ctx)) {
          rec.route = route.name;
          return;
        }
      }
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { type: "not_found", message: `fake model server: no route for ${rec.method} ${rec.path}` } }));
    } catch (err) {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { type: "fake_server_error", message: (err as Error).message } }));
    }
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (http.address() as AddressInfo).port;
  const server: FakeModelServer = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    turnRequests,
    remaining: () => [...script],
    setScript: (turns) => {
      script = [...turns];
    },
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
  ctx.server = server;
  return server;
}
