// The config locates agents through src/agents/locators.ts, without loading their adapters: that
// list must be the registry's, agent for agent and in the same order, with the same functions.
import { expect, it } from "vitest";
import { agentLocators } from "../../src/agents/locators.js";
import { allAgents } from "../../src/agents/registry.js";

it("the locators are the registry's adapters' own locate functions, in the registry's order", () => {
  expect(agentLocators().map((l) => l.name)).toEqual(allAgents().map((a) => a.name));
  for (const [i, adapter] of allAgents().entries()) expect(agentLocators()[i]!.locate, adapter.name).toBe(adapter.locate);
});
