// Setup file (vitest.config.ts): after each test file, remove the temp folders its tests made with
// tempRoot or makeSandbox, also when a test failed before its own cleanup ran.
import { afterAll } from "vitest";
import { removeTempRoots } from "./tmp.js";

afterAll(removeTempRoots);
