/** Ask for a secret on the terminal without echoing it. Only called when stdin is a TTY. */
export async function promptHidden(question: string): Promise<string> {
  const { default: readline } = await import("node:readline"); // most commands never prompt
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    const rlAny = rl as unknown as { _writeToOutput: (s: string) => void; output: NodeJS.WritableStream };
    let asked = false;
    rlAny._writeToOutput = (s: string) => {
      if (!asked) {
        rlAny.output.write(s);
        asked = true;
      }
    };
    rl.question(question, (answer) => {
      rl.close();
      process.stderr.write("\n");
      resolve(answer);
    });
    rl.on("SIGINT", () => {
      rl.close();
      reject(new Error("cancelled"));
    });
  });
}
