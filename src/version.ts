// Kept in step with package.json by test/version.test.ts; a constant avoids reading package.json
// at start-up from two different depths (src/ under vitest, dist/src/ when installed).
export const VERSION = "0.1.0";
export const PROGRAM = `pi-guard ${VERSION}`;
