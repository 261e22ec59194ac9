// The conversation typed into the real TUI: markdown, a long paragraph that wraps at 200
// columns, a prompt that wraps, and bash/write/read tool calls with visible output.

import type { TuiTurn } from "./pi-tui.js";

const LONG = "This paragraph is deliberately long so that pi has to wrap it across several terminal lines, which the salvage code must join back together without losing any of the words; it mentions alpha, bravo, charlie, delta, echo, foxtrot, golf, hotel, india, juliett, kilo, lima, mike, november, oscar and papa.";

export const TUI_TURNS: TuiTurn[] = [
  {
    prompt: "Hello pi, please introduce yourself briefly.",
    replies: [[{ text: `Hello! I am a **scripted** model with \`inline code\` support.\n\n${LONG}\n\n- first point\n- second point\n\nThat is all.` }]],
  },
  {
    prompt: "Count the files in this project with a shell command please.",
    replies: [
      [{ text: "I will list the directory first." }, { tool: "bash", args: { command: "echo one; echo two; echo three" } }],
      [{ text: "The command printed three lines: one, two and three." }],
    ],
  },
  {
    prompt: `This prompt is long on purpose so that it wraps inside the editor box and the user message box of the terminal user interface, and it asks the model to write a small note file and read it back afterwards ${"please ".repeat(6)}thanks.`,
    replies: [
      [{ text: "Writing the note now." }, { tool: "write", args: { path: "note.txt", content: "remember the milk\n" } }],
      [{ text: "And reading it back." }, { tool: "read", args: { path: "note.txt" } }],
      [{ text: "## Summary\n\nThe note says to remember the milk.\n\n```\nremember the milk\n```\n\nDone with the note." }],
    ],
  },
];

/** What pi draws in ways that are easy to misread: cut output, a failed command, two tool boxes in a row. */
export const EDGE_TURNS: TuiTurn[] = [
  { prompt: "Print many lines", replies: [[{ text: "Printing." }, { tool: "bash", args: { command: "seq 1 40" } }], [{ text: "Printed forty lines." }]] },
  { prompt: "Now fail", replies: [[{ text: "Failing." }, { tool: "bash", args: { command: "echo oops >&2; exit 3" } }], [{ text: "It failed with code 3." }]] },
  {
    prompt: "Edit the file",
    replies: [
      [{ tool: "write", args: { path: "a.txt", content: "x = 1\ny = 2\n" } }],
      [{ tool: "edit", args: { path: "a.txt", edits: [{ oldText: "y = 2", newText: "y = 3" }] } }],
      [{ text: "Edited." }],
    ],
  },
];

/** Replies with thinking, as a reasoning model streams it: pi draws it italic in its thinkingText colour. */
export const THINKING_TURNS: TuiTurn[] = [
  {
    prompt: "Think first, then answer: what is two plus two?",
    replies: [[{ thinking: "The user wants a sum. Two plus two is four; no tool is needed for that." }, { text: "Two plus two is **four**.\n\n*This whole line is emphasised, and it is answer text, not thinking.*" }]],
  },
  {
    prompt: "Now check the date with the shell.",
    replies: [
      [{ thinking: "A shell call answers this; date prints it." }, { tool: "bash", args: { command: "echo 2026-11-30" } }],
      [{ thinking: "It printed the date.\n\nI can answer now." }, { text: "The shell says it is 2026-11-30.\n\nAnything else?" }],
    ],
  },
];
