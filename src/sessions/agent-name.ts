// The agent a catalog record belongs to: its name in the agent registry ("pi", "claude", ...).
// A module of its own so the catalog's warm path does not load the session parser to name pi.

/** The agent of the sessions summarizeSession reads (pi's JSONL). */
export const PI_AGENT = "pi";
