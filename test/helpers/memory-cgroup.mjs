// A memory cgroup for a daemon under test: the systemd unit's `MemoryMax=`
// (rootfs/usr/lib/systemd/system/gatewayd.service) enforced by the kernel as systemd enforces it on
// the device, so a daemon that grows past it is killed by the OOM killer instead of merely measuring
// high. Made below the caller's own cgroup when that is writable (cgroup v1 `memory` controller, or
// cgroup v2), else at the hierarchy's root; where neither works `makeMemoryCgroup` returns undefined
// and the caller measures RSS instead. Plain JavaScript, so that robust/ can use it as the tests do
// (types in memory-cgroup.d.mts).

import fs from 'node:fs';
import path from 'node:path';

const V1 = '/sys/fs/cgroup/memory';
const V2 = '/sys/fs/cgroup';
const MULTIPLIER = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 };

/** This process's cgroup path for the v1 `memory` controller, or (controller '') the v2 one. */
function own(controller) {
  for (const line of fs.readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, ctrls, p] = line.split(':');
    if (p !== undefined && (controller === '' ? line.startsWith('0::') : ctrls.split(',').includes(controller))) return p;
  }
  return undefined;
}

const stat = (file, key) => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(fs.readFileSync(file, 'utf8'))?.[1] ?? 0);

function tryMake(parent, name) {
  const dir = path.join(parent, name);
  try {
    fs.mkdirSync(dir);
    return dir;
  } catch {
    return undefined;
  }
}

// The shell puts itself into the cgroup and becomes the command: the process is limited from its
// first allocation on (cgroup v1 does not move what was charged before joining).
const wrapWith = (procs) => ['/bin/sh', '-c', 'echo $$ > "$1" && shift && exec "$@"', 'sh', procs];

/** A cgroup limited to `limitBytes` of memory and no swap, or undefined when none can be made here. */
export function makeMemoryCgroup(name, limitBytes) {
  if (fs.existsSync(path.join(V1, 'memory.limit_in_bytes'))) {
    const mine = own('memory');
    const dir = (mine && tryMake(path.join(V1, mine), name)) || tryMake(V1, name);
    if (dir) {
      try {
        fs.writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(limitBytes));
        if (fs.existsSync(path.join(dir, 'memory.memsw.limit_in_bytes'))) fs.writeFileSync(path.join(dir, 'memory.memsw.limit_in_bytes'), String(limitBytes));
        return {
          dir,
          version: 1,
          wrap: wrapWith(path.join(dir, 'cgroup.procs')),
          rss: () => stat(path.join(dir, 'memory.stat'), 'rss'),
          oomKills: () => stat(path.join(dir, 'memory.oom_control'), 'oom_kill'),
          remove: () => fs.rmdirSync(dir),
        };
      } catch {
        fs.rmdirSync(dir);
      }
    }
  }
  if (fs.existsSync(path.join(V2, 'cgroup.controllers'))) {
    const mine = own('');
    const dir = mine !== undefined ? tryMake(path.join(V2, mine), name) : undefined;
    if (dir) {
      try {
        fs.writeFileSync(path.join(dir, 'memory.max'), String(limitBytes));
        if (fs.existsSync(path.join(dir, 'memory.swap.max'))) fs.writeFileSync(path.join(dir, 'memory.swap.max'), '0');
        return {
          dir,
          version: 2,
          wrap: wrapWith(path.join(dir, 'cgroup.procs')),
          rss: () => stat(path.join(dir, 'memory.stat'), 'anon'),
          oomKills: () => stat(path.join(dir, 'memory.events'), 'oom_kill'),
          remove: () => fs.rmdirSync(dir),
        };
      } catch {
        fs.rmdirSync(dir);
      }
    }
  }
  return undefined;
}

/** The unit's `MemoryMax=` in bytes. */
export function unitMemoryMax(root) {
  const unit = fs.readFileSync(path.join(root, 'rootfs', 'usr', 'lib', 'systemd', 'system', 'gatewayd.service'), 'utf8');
  const m = /^MemoryMax=(\d+)([KMG]?)$/m.exec(unit);
  if (!m) throw new Error('no MemoryMax= in the systemd unit');
  return Number(m[1]) * MULTIPLIER[m[2]];
}

/** A process's resident set now and at its peak (VmRSS, VmHWM), bytes; 0 when it is gone. */
export function processRss(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(s)?.[1] ?? 0) * 1024;
    return { now: kb('VmRSS'), peak: kb('VmHWM') };
  } catch {
    return { now: 0, peak: 0 };
  }
}
