// Stand-ins for the libgpiod v2 command-line tools (`gpioget`, `gpioset`), for testing the GPIO
// driver's chardev back-end where no GPIO character device and no v2 tools exist (no gpio-sim on
// the test machine, Debian ships the v1 tools). They accept exactly the options the driver uses,
// in libgpiod v2's syntax, and keep a simulated chip in files: `<dir>/<chip>/<offset>` holds the
// physical level; `<offset>.busy` exists while a gpioset process holds the line, as the kernel
// refuses a second request of a requested line. Every call is appended to `<dir>/calls`.
// This is a mock of the tools, not of the kernel: what it proves and what it does not is written
// in docs/drivers.md ("gpio", "What was tested").

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const GPIOGET = `#!/bin/sh
echo "gpioget $*" >> "$GPIO_FAKE_DIR/calls"
chip=; low=0; asis=0; numeric=0
while [ $# -gt 1 ]; do case "$1" in
  -c) chip=$2; shift 2;; -l) low=1; shift;; -a) asis=1; shift;; --numeric) numeric=1; shift;;
  *) echo "gpioget: unrecognized option '$1'" >&2; exit 1;; esac; done
d="$GPIO_FAKE_DIR/$chip"
[ -d "$d" ] || { echo "gpioget: cannot find GPIO chip '$chip'" >&2; exit 1; }
[ -f "$d/$1" ] || { echo "gpioget: offset $1 is out of range on chip '$chip'" >&2; exit 1; }
[ -e "$d/$1.busy" ] && { echo "gpioget: unable to request lines on chip '/dev/$chip': Device or resource busy" >&2; exit 1; }
v=$(cat "$d/$1"); [ $low = 1 ] && v=$((1 - v))
[ $numeric = 1 ] && echo $v || { [ $v = 1 ] && echo "\\"$1\\"=active" || echo "\\"$1\\"=inactive"; }
`;

const GPIOSET = `#!/bin/sh
echo "gpioset $*" >> "$GPIO_FAKE_DIR/calls"
chip=; low=0
while [ $# -gt 1 ]; do case "$1" in
  -c|-C) [ "$1" = -c ] && chip=$2; shift 2;; -l) low=1; shift;; --banner) shift;;
  *) echo "gpioset: unrecognized option '$1'" >&2; exit 1;; esac; done
off=\${1%%=*}; v=\${1#*=}
d="$GPIO_FAKE_DIR/$chip"
[ -d "$d" ] || { echo "gpioset: cannot find GPIO chip '$chip'" >&2; exit 1; }
[ -f "$d/$off" ] || { echo "gpioset: offset $off is out of range on chip '$chip'" >&2; exit 1; }
[ -e "$d/$off.busy" ] && { echo "gpioset: unable to request lines on chip '/dev/$chip': Device or resource busy" >&2; exit 1; }
touch "$d/$off.busy"
trap 'rm -f "$d/$off.busy"; kill $! 2>/dev/null; exit 0' TERM INT
[ $low = 1 ] && v=$((1 - v))
echo $v > "$d/$off"
echo "Setting line(s)... Press Ctrl-C to exit"
# The sleep keeps none of our pipes open, and is listed for the teardown: a TERM that reaches the
# shell before $! is set leaves it behind (seen once in 60 runs under load), and a sleep holding
# the test's stdout pipe kept the test process from exiting.
sleep 100000 </dev/null >/dev/null 2>&1 &
echo $! >> "$GPIO_FAKE_DIR/sleepers"
wait $!
`;

export interface FakeGpio {
  dir: string;
  /** Physical level of a line (what a meter on the pin would show). */
  level(chip: string, offset: number): string;
  setLevel(chip: string, offset: number, on: boolean): void;
  held(chip: string, offset: number): boolean;
  calls(): string[];
}

/** Installs the tools on PATH for this process (and its children) with the given chips and lines. */
export function fakeGpioTools(t: { teardown(fn: () => unknown): void }, chips: Record<string, Record<number, 0 | 1>>): FakeGpio {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-gpiod-'));
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, 'gpioget'), GPIOGET, { mode: 0o755 });
  fs.writeFileSync(path.join(bin, 'gpioset'), GPIOSET, { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'calls'), '');
  fs.writeFileSync(path.join(dir, 'sleepers'), '');
  for (const [chip, lines] of Object.entries(chips)) {
    fs.mkdirSync(path.join(dir, chip));
    for (const [off, v] of Object.entries(lines)) fs.writeFileSync(path.join(dir, chip, off), `${v}\n`);
  }
  const oldPath = process.env.PATH;
  process.env.PATH = `${bin}:${oldPath}`;
  process.env.GPIO_FAKE_DIR = dir;
  t.teardown(() => {
    for (const pid of fs.readFileSync(path.join(dir, 'sleepers'), 'utf8').split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone: its gpioset was ended and took it along
      }
    }
    process.env.PATH = oldPath;
    delete process.env.GPIO_FAKE_DIR;
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const file = (chip: string, off: number) => path.join(dir, chip, String(off));
  return {
    dir,
    level: (chip, off) => fs.readFileSync(file(chip, off), 'utf8').trim(),
    setLevel: (chip, off, on) => fs.writeFileSync(file(chip, off), on ? '1\n' : '0\n'),
    held: (chip, off) => fs.existsSync(`${file(chip, off)}.busy`),
    calls: () => fs.readFileSync(path.join(dir, 'calls'), 'utf8').split('\n').filter(Boolean),
  };
}
