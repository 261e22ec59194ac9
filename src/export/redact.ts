// --redact: mask secrets in every string of an exported session (text, tool arguments, tool
// output, header). Two sources: well-known key shapes, and the exact values stored in the agent
// dir's auth.json, which catches keys of providers whose shapes we do not know.

import { promises as fs } from "node:fs";
import path from "node:path";

export const REDACTED = "[REDACTED]";

/** Shapes of API keys and tokens seen in agent sessions (env dumps, config files, curl lines). */
const SECRET_PATTERNS: RegExp[] = [
  /\bsk-[A-Za-z0-9_-]{16,}/g, // OpenAI, Anthropic (sk-ant-...), DeepSeek, OpenRouter (sk-or-...)
  /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{40,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g, // Slack
  /\bAKIA[0-9A-Z]{16}\b/g, // AWS access key id
  /\bAIza[0-9A-Za-z_-]{35}/g, // Google API key
  /\bglpat-[A-Za-z0-9_-]{20,}/g, // GitLab
  /\bhf_[A-Za-z0-9]{30,}/g, // Hugging Face
  /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/g, // JWTs (OAuth access tokens)
  /(\b(?:Bearer|token)\s+)[A-Za-z0-9._~+/=-]{20,}/gi,
  /((?:api[_-]?key|secret|password|access[_-]?token|refresh[_-]?token)["']?\s*[:=]\s*["']?)[^\s"',]{8,}/gi,
];

/** Every string of 8+ characters in auth.json: keys, OAuth access and refresh tokens. */
export async function authSecrets(agentDir: string): Promise<string[]> {
  let value: unknown;
  try {
    value = JSON.parse(await fs.readFile(path.join(agentDir, "auth.json"), "utf8"));
  } catch {
    return [];
  }
  const out = new Set<string>();
  const walk = (v: unknown, key: string) => {
    if (typeof v === "string") {
      // Short or descriptive fields ("api_key", "oauth") are not secrets and would over-mask.
      if (v.length >= 8 && !/^(type|provider|kind)$/i.test(key)) out.add(v);
    } else if (v && typeof v === "object") for (const [k, inner] of Object.entries(v)) walk(inner, k);
  };
  walk(value, "");
  return [...out].sort((a, b) => b.length - a.length);
}

export type Redactor = (text: string) => string;

export function makeRedactor(knownSecrets: readonly string[]): Redactor {
  return (text) => {
    let out = text;
    for (const s of knownSecrets) if (out.includes(s)) out = out.split(s).join(REDACTED);
    for (const re of SECRET_PATTERNS) {
      out = out.replace(re, (match, prefix?: unknown) => (typeof prefix === "string" && match.startsWith(prefix) ? prefix + REDACTED : REDACTED));
    }
    return out;
  };
}

/** A deep copy with every string passed through the redactor (object keys are left alone). */
export function redactDeep<T>(value: T, redact: Redactor): T {
  if (typeof value === "string") return redact(value) as T;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    // Image bytes are base64, where a key shape can occur by chance; masking would break the image.
    const isImage = (value as { type?: unknown }).type === "image";
    for (const [k, v] of Object.entries(value)) out[k] = isImage && k === "data" ? v : redactDeep(v, redact);
    return out as T;
  }
  return value;
}
