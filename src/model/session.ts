// The common session model every agent's reader maps into (docs/AGENTS.md). It is pi's entry
// model, as pi 0.73.1 and pi 1.x write it (docs/session-format.md and
// docs/message-types.md in pi-coding-agent; 1.x additions checked against 1.6.0).
// Types are deliberately open (`[key: string]: unknown`): pi-guard must carry every field it
// does not know byte-for-byte, because a newer pi may add fields we have never seen.

export const CURRENT_SESSION_VERSION = 3;

export interface TextContent {
  type: "text";
  text: string;
  [key: string]: unknown;
}

export interface ImageContent {
  type: "image";
  data: string;
  mimeType: string;
  [key: string]: unknown;
}

export interface ThinkingContent {
  type: "thinking";
  thinking: string;
  thinkingSignature?: string;
  [key: string]: unknown;
}

export interface ToolCallContent {
  type: "toolCall";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  [key: string]: unknown;
}

export type ContentBlock = TextContent | ImageContent | ThinkingContent | ToolCallContent;

export interface UsageCost {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  total: number;
  /** pi 1.x: true when `total` is what the provider billed, not the catalog's estimate. */
  totalFromProvider?: boolean;
  [key: string]: unknown;
}

export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  cost: UsageCost;
  /** pi 1.x: the part of cacheWrite kept for one hour, and the reasoning part of output. */
  cacheWrite1h?: number;
  reasoning?: number;
  [key: string]: unknown;
}

export interface UserMessage {
  role: "user";
  content: string | (TextContent | ImageContent)[];
  timestamp: number;
  [key: string]: unknown;
}

export interface AssistantMessage {
  role: "assistant";
  content: (TextContent | ThinkingContent | ToolCallContent)[];
  api?: string;
  provider?: string;
  model?: string;
  usage?: Usage;
  stopReason?: "stop" | "length" | "toolUse" | "error" | "aborted" | "deferred";
  errorMessage?: string;
  timestamp: number;
  /** pi 1.x: the thinking level pi asked for, and how long the response took. */
  thinkingLevel?: string;
  durationMs?: number;
  [key: string]: unknown;
}

export interface ToolResultMessage {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: (TextContent | ImageContent)[];
  details?: unknown;
  isError: boolean;
  timestamp: number;
  /** pi 1.x: how long the tool ran, and the usage of model calls it made itself. */
  durationMs?: number;
  usage?: Usage;
  [key: string]: unknown;
}

/** A tool as a system message declares it to the model (pi-ai's Tool, without code). */
export interface ToolDeclaration {
  name: string;
  description?: string;
  /** A JSON Schema object: `properties`, `required`. */
  parameters?: unknown;
  [key: string]: unknown;
}

/**
 * pi 1.x: the system prompt and the tool list as messages. The first one of a branch declares
 * them; later ones patch them: `content` adds instructions, `sections` replaces sections by name
 * (`null` removes one), and `toolsAdded`/`toolsRemoved` change the tools (see system-prompt.ts).
 */
export interface SystemMessage {
  role: "system";
  content: string | TextContent[];
  sections?: Record<string, string | null>;
  toolsAdded?: ToolDeclaration[];
  toolsRemoved?: { name: string; [key: string]: unknown }[];
  timestamp: number;
  [key: string]: unknown;
}

export interface BashExecutionMessage {
  role: "bashExecution";
  command: string;
  output: string;
  exitCode: number | undefined;
  cancelled: boolean;
  truncated: boolean;
  fullOutputPath?: string;
  excludeFromContext?: boolean;
  timestamp: number;
  [key: string]: unknown;
}

export interface CustomMessage {
  /** "hookMessage" in version 2 files; migrated to "custom" in memory only. */
  role: "custom";
  customType: string;
  content: string | (TextContent | ImageContent)[];
  display: boolean;
  details?: unknown;
  timestamp: number;
  [key: string]: unknown;
}

export interface OtherMessage {
  role: string;
  timestamp?: number;
  [key: string]: unknown;
}

export type AgentMessage =
  | SystemMessage
  | UserMessage
  | AssistantMessage
  | ToolResultMessage
  | BashExecutionMessage
  | CustomMessage;

export interface SessionHeader {
  type: "session";
  version?: number;
  id: string;
  timestamp: string;
  cwd: string;
  parentSession?: string;
  [key: string]: unknown;
}

export interface EntryBase {
  type: string;
  id: string;
  parentId: string | null;
  timestamp: string;
  [key: string]: unknown;
}

export interface MessageEntry extends EntryBase {
  type: "message";
  message: AgentMessage | OtherMessage;
}

export interface ModelChangeEntry extends EntryBase {
  type: "model_change";
  provider: string;
  modelId: string;
}

export interface ThinkingLevelChangeEntry extends EntryBase {
  type: "thinking_level_change";
  thinkingLevel: string;
}

export interface CompactionEntry extends EntryBase {
  type: "compaction";
  summary: string;
  firstKeptEntryId: string;
  tokensBefore: number;
  /** pi 1.x: the whole system prompt and tool list at this point (the compacted context's start). */
  systemMessage?: SystemMessage;
  /** pi 1.x: what making the summary cost. */
  usage?: Usage;
}

export interface BranchSummaryEntry extends EntryBase {
  type: "branch_summary";
  fromId: string;
  summary: string;
  /** pi 1.x: what making the summary cost. */
  usage?: Usage;
}

/** pi 1.x: model usage outside any message (`kind` is open, e.g. "cache_warm"); never in the context. */
export interface UsageEntry extends EntryBase {
  type: "usage";
  kind: string;
  provider: string;
  model: string;
  usage: Usage;
  note?: string;
}

/**
 * pi 1.x: an append-only edit of what the model sees of an earlier entry; the target itself is
 * never changed. `replacement: null` leaves the target out of the context; otherwise its content
 * is replaced. The latest edit of a target on the branch wins.
 */
export interface ContextEditEntry extends EntryBase {
  type: "context_edit";
  targetId: string;
  replacement: { content: string | ContentBlock[]; [key: string]: unknown } | null;
}

export interface CustomEntry extends EntryBase {
  type: "custom";
  customType: string;
  data?: unknown;
}

export interface CustomMessageEntry extends EntryBase {
  type: "custom_message";
  customType: string;
  content: string | (TextContent | ImageContent)[];
  display: boolean;
}

export interface LabelEntry extends EntryBase {
  type: "label";
  targetId: string;
  label: string | undefined;
}

export interface SessionInfoEntry extends EntryBase {
  type: "session_info";
  name?: string;
}

export type SessionEntry =
  | MessageEntry
  | ModelChangeEntry
  | ThinkingLevelChangeEntry
  | CompactionEntry
  | BranchSummaryEntry
  | UsageEntry
  | ContextEditEntry
  | CustomEntry
  | CustomMessageEntry
  | LabelEntry
  | SessionInfoEntry;

/**
 * An entry as it stands in a file of any version: version 1 entries have no `id`/`parentId`,
 * and a damaged file may hold entries whose fields are missing. Use migrateToV3InMemory
 * (parse.ts) to turn these into SessionEntry values.
 */
export interface RawSessionEntry {
  type: string;
  id?: unknown;
  parentId?: unknown;
  timestamp?: unknown;
  [key: string]: unknown;
}

/** Entry types pi 0.73.1 and 1.x write; used to find where glued entries start. */
export const KNOWN_ENTRY_TYPES = [
  "message",
  "model_change",
  "thinking_level_change",
  "compaction",
  "branch_summary",
  "usage",
  "context_edit",
  "custom",
  "custom_message",
  "label",
  "session_info",
] as const;
