// Terminal scrollback as lines of text plus the background colour each line sits on. pi's TUI
// draws user prompts and tool calls on coloured boxes and assistant text on the default
// background, so the colour is what tells them apart when the capture kept its escapes
// (`tmux capture-pane -e`, a terminal's "copy with formatting"). Without escapes bg is null.

export interface ScreenLine {
  text: string;
  /** The SGR background in effect ("48;2;52;53;65", "44", ...), or null for the default. */
  bg: string | null;
  /**
   * Every visible character is italic and in a set foreground colour: how pi draws thinking
   * (theme thinkingText, italic). Answer text uses neither for a whole line.
   */
  thinkingStyle: boolean;
}

export interface Screen {
  lines: ScreenLine[];
  /** Whether the input held any escape sequences at all (else roles come from layout only). */
  styled: boolean;
}

// CSI (ESC [ params final), OSC (ESC ] ... BEL or ESC \), and two-byte escapes (ESC x).
const ESCAPE = /\x1b\[([0-9;:?<=>]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

interface Style {
  bg: string | null;
  fg: boolean;
  italic: boolean;
}

/** The style after applying one SGR parameter list. */
function applySgr(params: string, style: Style): Style {
  let { bg, fg, italic } = style;
  const p = params === "" ? ["0"] : params.split(/[;:]/);
  for (let i = 0; i < p.length; i++) {
    const n = Number(p[i]);
    if (n === 0) {
      bg = null;
      fg = false;
      italic = false;
    } else if (n === 49) bg = null;
    else if (n === 39) fg = false;
    else if (n === 3) italic = true;
    else if (n === 23) italic = false;
    else if ((n >= 30 && n <= 37) || (n >= 90 && n <= 97)) fg = true;
    else if ((n >= 40 && n <= 47) || (n >= 100 && n <= 107)) bg = String(n);
    else if (n === 48 && p[i + 1] === "2") {
      bg = `48;2;${p.slice(i + 2, i + 5).join(";")}`;
      i += 4;
    } else if (n === 48 && p[i + 1] === "5") {
      bg = `48;5;${p[i + 2]}`;
      i += 2;
    } else if (n === 38) {
      fg = true;
      i += p[i + 1] === "2" ? 4 : 2; // skip foreground colour arguments
    }
  }
  return { bg, fg, italic };
}

export function readScreen(raw: string): Screen {
  const styled = raw.includes("\x1b");
  const lines: ScreenLine[] = [];
  let style: Style = { bg: null, fg: false, italic: false };
  for (const rawLine of raw.replace(/\r\n?/g, "\n").split("\n")) {
    let text = "";
    let lineBg: string | null | undefined;
    let thinkingStyle = true;
    let last = 0;
    const take = (upto: number) => {
      const chunk = rawLine.slice(last, upto);
      if (chunk.trim() !== "") {
        // A line's colour is the one under its first visible character.
        if (lineBg === undefined) lineBg = style.bg;
        if (!style.italic || !style.fg) thinkingStyle = false;
      }
      text += chunk;
    };
    for (const m of rawLine.matchAll(ESCAPE)) {
      take(m.index);
      last = m.index + m[0].length;
      if (m[2] === "m") style = applySgr(m[1] ?? "", style);
    }
    take(rawLine.length);
    text = text.replace(/\s+$/, "");
    // Blank lines (box padding) take the colour in effect at their end.
    lines.push({ text, bg: lineBg === undefined ? style.bg : lineBg, thinkingStyle: styled && text !== "" && thinkingStyle });
  }
  while (lines.length && lines[lines.length - 1].text === "") lines.pop();
  return { lines, styled };
}
