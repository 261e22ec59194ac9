// Terminal scrollback as lines of text plus the background colour each line sits on. pi's TUI
// draws user prompts and tool calls on coloured boxes and assistant text on the default
// background, so the colour is what tells them apart when the capture kept its escapes
// (`tmux capture-pane -e`, a terminal's "copy with formatting"). Without escapes bg is null.

export interface ScreenLine {
  text: string;
  /** The SGR background in effect ("48;2;52;53;65", "44", ...), or null for the default. */
  bg: string | null;
}

export interface Screen {
  lines: ScreenLine[];
  /** Whether the input held any escape sequences at all (else roles come from layout only). */
  styled: boolean;
}

// CSI (ESC [ params final), OSC (ESC ] ... BEL or ESC \), and two-byte escapes (ESC x).
const ESCAPE = /\x1b\[([0-9;:?<=>]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

/** The background after applying one SGR parameter list to `bg`. */
function applySgr(params: string, bg: string | null): string | null {
  const p = params === "" ? ["0"] : params.split(/[;:]/);
  for (let i = 0; i < p.length; i++) {
    const n = Number(p[i]);
    if (n === 0 || n === 49) bg = null;
    else if ((n >= 40 && n <= 47) || (n >= 100 && n <= 107)) bg = String(n);
    else if (n === 48 && p[i + 1] === "2") {
      bg = `48;2;${p.slice(i + 2, i + 5).join(";")}`;
      i += 4;
    } else if (n === 48 && p[i + 1] === "5") {
      bg = `48;5;${p[i + 2]}`;
      i += 2;
    } else if (n === 38) i += p[i + 1] === "2" ? 4 : 2; // skip foreground colour arguments
  }
  return bg;
}

export function readScreen(raw: string): Screen {
  const styled = raw.includes("\x1b");
  const lines: ScreenLine[] = [];
  let bg: string | null = null;
  for (const rawLine of raw.replace(/\r\n?/g, "\n").split("\n")) {
    let text = "";
    let lineBg: string | null | undefined;
    let last = 0;
    const take = (upto: number) => {
      const chunk = rawLine.slice(last, upto);
      // A line's colour is the one under its first visible character.
      if (lineBg === undefined && chunk.trim() !== "") lineBg = bg;
      text += chunk;
    };
    for (const m of rawLine.matchAll(ESCAPE)) {
      take(m.index);
      last = m.index + m[0].length;
      if (m[2] === "m") bg = applySgr(m[1] ?? "", bg);
    }
    take(rawLine.length);
    // Blank lines (box padding) take the colour in effect at their end.
    lines.push({ text: text.replace(/\s+$/, ""), bg: lineBg === undefined ? bg : lineBg });
  }
  while (lines.length && lines[lines.length - 1].text === "") lines.pop();
  return { lines, styled };
}
