/** A one-line progress display on a TTY (stderr); silent otherwise, so pipes and --json stay clean. */
export class Progress {
  private readonly enabled: boolean;
  private last = "";

  constructor(enabled: boolean) {
    this.enabled = enabled && !!process.stderr.isTTY;
  }

  update(line: string): void {
    if (!this.enabled) return;
    const cols = process.stderr.columns || 80;
    const text = line.length > cols - 1 ? line.slice(0, cols - 2) + "…" : line;
    process.stderr.write(`\r${text.padEnd(this.last.length)}`);
    this.last = text;
  }

  done(): void {
    if (this.enabled && this.last) process.stderr.write(`\r${" ".repeat(this.last.length)}\r`);
    this.last = "";
  }
}
