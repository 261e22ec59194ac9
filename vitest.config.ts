import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Crash and CLI tests spawn real processes; two cores, so keep parallelism modest.
    maxWorkers: 2,
    setupFiles: ["test/helpers/cleanup.ts"],
  },
});
