// The command loop of a load process (bench/load/*): one JSON object a line on standard input, each
// answered by one JSON line on standard output, in order; the process ends with its standard input.

import readline from 'node:readline';

export type Command = { cmd?: string } & Record<string, any>;

export function serveCommands(handle: (cmd: Command) => object | Promise<object>, onEnd: () => void = () => {}): void {
  let queue: Promise<void> = Promise.resolve();
  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    queue = queue.then(async () => {
      let out: object;
      try {
        out = await handle(JSON.parse(line) as Command);
      } catch (err) {
        out = { error: (err as Error).message };
      }
      process.stdout.write(JSON.stringify(out) + '\n');
    });
  });
  process.stdin.on('end', () => {
    onEnd();
    process.exit(0);
  });
}
