// The pi session model: read-only parsing, tree queries, pi-identical writing, repair, stats,
// and where pi keeps its files.
export * from "./types.js";
export * from "./parse.js";
export * from "./tree.js";
export * from "./writer.js";
export * from "./repair.js";
export * from "./stats.js";
export * from "./paths.js";
export * from "./nesting.js";
export * from "./system-prompt.js";
