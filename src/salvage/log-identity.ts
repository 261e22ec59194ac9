// Which session a log line names, and where it worked. Programs that wrap pi write plain lines
// beside its JSON: a web UI's "spawning: pi --mode rpc (cwd=/path)" and "rpc ready, session
// <uuid>", pi's own "Session file: …_<uuid>.jsonl" and "Stored session working directory does not
// exist: /path". pi's RPC answers name them too: get_state (sessionId, sessionFile), and
// new_session, switch_session, fork and clone say the process moved to another session.

export interface LineRef {
  line: number;
  /** The start of the line, for the report. */
  text: string;
}

export interface Named extends LineRef {
  value: string;
}

/** What one line says about the session it belongs to. */
export interface LineIdentity {
  sessionId?: string;
  cwd?: string;
  /** The line starts a new pi process ("spawning ..."): what follows is another session. */
  spawn?: boolean;
  /** pi moved to another session: keep the cwd (new_session, fork, clone) or not (switch_session). */
  moved?: "same-cwd" | "other-cwd";
}

const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
export const UUID_RE = new RegExp(`^${UUID}$`, "i");
/** "session <uuid>", "session: <uuid>", "sessionId=<uuid>", "session_id \"<uuid>\"". */
const SESSION_WORD = new RegExp(`\\bsession(?:[ _-]?id)?["']?\\s*[:=,]?\\s*["']?(${UUID})(?![0-9a-f-])`, "i");
/** pi's file names: <time>_<uuid>.jsonl. */
const SESSION_FILE = new RegExp(`_(${UUID})\\.jsonl\\b`, "i");
const PI_CWD_LINES = [/Stored session working directory does not exist:\s*(.+)$/, /Session found in different project:\s*(.+)$/];

const EXCERPT = 160;
/** The start of a line, control characters shown as "?": a log is hostile input and this is printed. */
export const excerpt = (text: string): string => {
  const cut = text.length > EXCERPT ? `${text.slice(0, EXCERPT - 1)}…` : text;
  return cut.replace(/[\u0000-\u001f\u007f-\u009f]/g, "?");
};

const isAbsolute = (p: string) => (p.startsWith("/") || /^[A-Za-z]:[\\/]/.test(p)) && !/[\u0000-\u001f\u007f]/.test(p);

/** The path after "cwd=" / "cwd:": quoted, inside the "(...)" it opens, or up to whitespace. */
function cwdAfter(text: string): string | undefined {
  const m = /(\(?)\bcwd\s*[=:]\s*/i.exec(text);
  if (!m) return undefined;
  let rest = text.slice(m.index + m[0].length);
  const quote = rest[0];
  if (quote === '"' || quote === "'") {
    const end = rest.indexOf(quote, 1);
    rest = end > 0 ? rest.slice(1, end) : "";
  } else if (m[1] === "(") {
    const end = rest.lastIndexOf(")");
    rest = end >= 0 ? rest.slice(0, end) : rest;
  } else {
    rest = rest.split(/[\s,;]/)[0] ?? "";
  }
  rest = rest.trim();
  return isAbsolute(rest) ? rest : undefined;
}

function idIn(text: string): string | undefined {
  return (SESSION_WORD.exec(text)?.[1] ?? SESSION_FILE.exec(text)?.[1])?.toLowerCase();
}

/** A plain (non-JSON) log line. */
export function plainLineIdentity(text: string): LineIdentity {
  const out: LineIdentity = {};
  const id = idIn(text);
  if (id) out.sessionId = id;
  const piCwd = PI_CWD_LINES.map((re) => re.exec(text)?.[1]?.trim()).find((p) => p && isAbsolute(p));
  const cwd = piCwd ?? cwdAfter(text);
  if (cwd) {
    out.cwd = cwd;
    if (/\bspawn/i.test(text)) out.spawn = true;
  }
  return out;
}

/** A pi JSON line: a session header or an RPC response. */
export function eventIdentity(e: Record<string, unknown>): LineIdentity {
  if (e.type === "session") {
    return {
      ...(typeof e.id === "string" ? { sessionId: e.id } : {}),
      ...(typeof e.cwd === "string" && e.cwd !== "" ? { cwd: e.cwd } : {}),
    };
  }
  if (e.type !== "response" || e.success !== true) return {};
  const data = (typeof e.data === "object" && e.data !== null ? e.data : {}) as Record<string, unknown>;
  switch (e.command) {
    case "get_state": {
      const id = typeof data.sessionId === "string" ? data.sessionId : typeof data.sessionFile === "string" ? SESSION_FILE.exec(data.sessionFile)?.[1] : undefined;
      return id ? { sessionId: id } : {};
    }
    case "new_session":
    case "fork":
    case "clone":
      return data.cancelled === true ? {} : { moved: "same-cwd" };
    case "switch_session":
      return data.cancelled === true ? {} : { moved: "other-cwd" };
    default:
      return {};
  }
}
