// A TCP proxy in front of s3rver that stages an S3 outage on purpose: from the first request whose
// request line matches a pattern, for a set time, it refuses connections (stops listening, as a
// server that is down), answers every request with 503 SlowDown (a server that is overloaded), or
// 403 AccessDenied (a permanent refusal); then it lets everything through again. It counts what it
// did, so a test can assert that the outage really happened without timing anything.
// A body fault (armBodyFault) hits one request instead: part-way through its body the connection
// is cut (a network that drops mid-upload), or one byte is changed (damage on the way).

import net from "node:net";

export type OutageMode = "refuse" | "503" | "403";

export interface Outage {
  mode: OutageMode;
  /** Tested against each request line ("PUT /bucket/prefix/data/ab/ab01… HTTP/1.1"). */
  trigger: RegExp;
  ms: number;
}

export interface BodyFault {
  /** "cut": forward `at` bytes of the body, then close both connections; "flip": invert the byte at `at`. */
  action: "cut" | "flip";
  trigger: RegExp;
  at: number;
}

export interface OutageProxy {
  port: number;
  endpoint: string;
  /** The next request that matches starts the outage. */
  arm(outage: Outage): void;
  /** The next request that matches, with a body longer than `at`, gets the fault; once. */
  armBodyFault(fault: BodyFault): void;
  /** Request lines that got the armed body fault. */
  bodyFaults: string[];
  /** End the outage now (if one is on). */
  heal(): Promise<void>;
  stats: {
    /** Requests that passed through to s3rver. */
    passed: number;
    /** The outage began, and (after `ms`) ended. */
    started: boolean;
    ended: boolean;
    /** Connections cut when the outage began. */
    cut: number;
    /** Requests answered with the outage's status (503 or 403). */
    refusedRequests: number;
    /** The request line that started the outage. */
    triggeredBy?: string;
  };
  close(): Promise<void>;
}

const REQUEST_LINE = /^([A-Z]+ \S+ HTTP\/1\.[01])\r\n/;

function errorResponse(status: 503 | 403): string {
  const [reason, code, message] = status === 503 ? ["Slow Down", "SlowDown", "Please reduce your request rate."] : ["Forbidden", "AccessDenied", "Access Denied"];
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/xml\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

export async function startOutageProxy(upstreamPort: number): Promise<OutageProxy> {
  /** Client connections; closing one closes its upstream too. */
  const live = new Set<net.Socket>();
  let armed: Outage | undefined;
  let active: Outage | undefined;
  let timer: NodeJS.Timeout | undefined;
  let port = 0;
  const stats: OutageProxy["stats"] = { passed: 0, started: false, ended: false, cut: 0, refusedRequests: 0 };
  let bodyFault: BodyFault | undefined;
  const bodyFaults: string[] = [];

  const refuseRequest = (client: net.Socket, mode: "503" | "403") => {
    stats.refusedRequests++;
    client.end(errorResponse(mode === "503" ? 503 : 403));
    setTimeout(() => client.destroy(), 50).unref();
  };

  const server = net.createServer((client) => {
    live.add(client);
    client.on("close", () => live.delete(client));
    client.on("error", () => undefined);
    let upstream: net.Socket | undefined;
    let answered = false;
    /** A request of this connection that is to get the body fault: its line, and body bytes seen (-1: still in the headers). */
    let faulting: { line: string; fault: BodyFault; seen: number } | undefined;
    client.on("data", (data: Buffer) => {
      if (answered) return;
      let chunk = data;
      const line = REQUEST_LINE.exec(chunk.toString("latin1", 0, Math.min(chunk.length, 2048)))?.[1];
      if (line !== undefined && bodyFault && bodyFault.trigger.test(line)) {
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(chunk.toString("latin1", 0, Math.min(chunk.length, 8192)))?.[1] ?? 0);
        // A body too short to reach the fault leaves it armed for the next request that matches.
        if (length > bodyFault.at) {
          faulting = { line, fault: bodyFault, seen: -1 };
          bodyFault = undefined;
        }
      }
      if (line !== undefined && armed && armed.trigger.test(line)) begin(armed, line, client);
      if (active && active.mode !== "refuse" && (line !== undefined || !upstream)) {
        // This connection is answered here from now on: its upstream goes without taking it along.
        upstream?.removeAllListeners("close").destroy();
        answered = true;
        return refuseRequest(client, active.mode);
      }
      if (active) return client.destroy();
      if (line !== undefined) stats.passed++;
      if (!upstream) {
        upstream = net.connect(upstreamPort, "127.0.0.1");
        upstream.on("close", () => client.destroy());
        upstream.on("error", () => client.destroy());
        upstream.on("data", (d: Buffer) => client.write(d));
        client.on("close", () => upstream?.destroy());
      }
      if (faulting) {
        let bodyStart = 0;
        if (faulting.seen < 0) {
          const end = chunk.indexOf("\r\n\r\n");
          if (end >= 0) {
            faulting.seen = 0;
            bodyStart = end + 4;
          }
        }
        const inBody = faulting.seen >= 0 ? chunk.length - bodyStart : 0;
        const { fault } = faulting;
        if (inBody > 0 && faulting.seen + inBody > fault.at) {
          const cutAt = bodyStart + (fault.at - faulting.seen);
          bodyFaults.push(faulting.line);
          faulting = undefined;
          if (fault.action === "cut") {
            const up = upstream;
            up.write(chunk.subarray(0, cutAt), () => {
              up.destroy();
              client.destroy();
            });
            answered = true;
            return;
          }
          chunk = Buffer.from(chunk);
          chunk[cutAt] ^= 0xff;
        } else if (faulting) faulting.seen += inBody;
      }
      upstream.write(chunk);
    });
  });

  const listen = () => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));

  /** `by` (the triggering request's connection) is answered with the outage's status, unless connections are refused. */
  function begin(outage: Outage, line: string, by: net.Socket): void {
    armed = undefined;
    active = outage;
    stats.started = true;
    stats.triggeredBy = line;
    // Every open connection is cut, as when a server goes away: keep-alive sockets do not survive.
    for (const s of live) {
      if (s === by && outage.mode !== "refuse") continue;
      stats.cut++;
      s.destroy();
    }
    if (outage.mode === "refuse") server.close();
    timer = setTimeout(() => void heal(), outage.ms);
  }

  async function heal(): Promise<void> {
    if (!active) return;
    clearTimeout(timer);
    const was = active;
    active = undefined;
    stats.ended = true;
    if (was.mode === "refuse") await listen();
  }

  await listen();
  port = (server.address() as net.AddressInfo).port;
  return {
    port,
    endpoint: `http://127.0.0.1:${port}`,
    arm: (outage) => {
      armed = outage;
      stats.started = false;
      stats.ended = false;
      stats.cut = 0;
      stats.refusedRequests = 0;
      stats.triggeredBy = undefined;
    },
    armBodyFault: (fault) => {
      bodyFault = fault;
    },
    bodyFaults,
    heal,
    stats,
    close: async () => {
      clearTimeout(timer);
      for (const s of live) s.destroy();
      if (server.listening) await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
