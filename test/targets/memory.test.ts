import { MemoryTarget } from "../../src/targets/memory.js";
import { LimitTarget } from "../../src/targets/limit.js";
import { RetryTarget } from "../../src/targets/retry.js";
import { targetConformance } from "./conformance.js";

targetConformance("memory", { make: async () => new MemoryTarget() });
// The wrappers must not change what a target does, only how often and how many at once.
targetConformance("memory behind retry and limit", { make: async () => new RetryTarget(new LimitTarget(new MemoryTarget(), 2), { baseDelayMs: 1 }) });
