// The repository's config object and format version, apart from format.ts so that reading a
// repository's id (repo/peek.ts, on every warm `sessions list` or `search`) does not load the
// format's codecs and the index-file code format.ts imports. format.ts re-exports both.

/** Object names inside a target. See docs/FORMAT.md, which must change with format.ts. */
export const CONFIG_KEY = "config";
export const FORMAT_VERSION = 2;
