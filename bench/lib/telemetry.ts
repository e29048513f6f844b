// Reading gatewayd's telemetry for the scale benchmark (bench/README.md "Scale"), pure so that it is tested
// (test/bench/scale.test.ts). With the `json` encoding (docs/mqtt.md "Telemetry") every channel of a
// message carries the timestamp of the Modbus response it was read from, in ms since the epoch; the
// latency of a tag is the message's arrival at the subscriber minus that timestamp.

export interface Scan {
  /** Channels in the message. */
  tags: number;
  /** Channels that carry an error instead of a value. */
  errors: number;
  /** Their timestamps, one per channel, in message order. */
  stamps: number[];
}

/**
 * Scans one `json` telemetry payload without building the object tree: the subscriber must keep up
 * with tens of thousands of tags a second on a core it shares with gatewayd. Relies on the fixed
 * shape `{"name":…,"channels":[{"name":…,"timestamp":n,…},…]}` (channel names in this benchmark are
 * plain `cNNNN`, so no string can contain the keys searched for).
 */
export function scanTelemetry(payload: string): Scan {
  const stamps: number[] = [];
  const re = /"timestamp":(\d+)/g;
  for (let m = re.exec(payload); m; m = re.exec(payload)) stamps.push(Number(m[1]));
  let errors = 0;
  for (let at = payload.indexOf('"error":'); at >= 0; at = payload.indexOf('"error":', at + 8)) errors++;
  return { tags: stamps.length, errors, stamps };
}

/**
 * Latencies in 0.1 ms bins up to a bound (everything above lands in the last bin): percentiles of
 * millions of tags without keeping them.
 */
export class Histogram {
  private bins: Float64Array;
  count = 0;
  max = 0;

  constructor(private readonly maxMs = 60_000) {
    this.bins = new Float64Array(maxMs * 10 + 1);
  }

  add(ms: number, n = 1): void {
    const v = ms < 0 ? 0 : ms;
    this.bins[Math.min(this.bins.length - 1, Math.floor(v * 10))] += n;
    this.count += n;
    if (v > this.max) this.max = v;
  }

  /** Nearest-rank percentile (p in 0..100), as the upper edge of its 0.1 ms bin; NaN when empty. */
  percentile(p: number): number {
    if (this.count === 0) return NaN;
    const rank = Math.min(this.count, Math.max(1, Math.ceil((p / 100) * this.count)));
    let seen = 0;
    for (let i = 0; i < this.bins.length; i++) {
      seen += this.bins[i];
      if (seen >= rank) return Math.min((i + 1) / 10, this.maxMs);
    }
    return this.maxMs;
  }

  reset(): void {
    this.bins.fill(0);
    this.count = 0;
    this.max = 0;
  }
}

/** The poll counters of `GET /services/assets/{name}/_status` (docs/rest-api.md "Poll status") this benchmark uses. */
export interface PollCounters {
  pollInterval: number;
  lastPoll: number;
  polls: number;
  overruns: number;
}

/**
 * Poll-deadline misses of one asset between two readings of its status `windowMs` apart: the
 * schedule periods that got no poll started on time. Polls start at start + k × interval; an overrun
 * (a poll still running when the next was due) delays the next start, and the periods passed
 * meanwhile are skipped, not made up. So: the periods between the two last starts, less the polls
 * that started on time. No poll started in the window at all: every period of the window missed.
 */
export function pollMisses(a: PollCounters, b: PollCounters, windowMs: number): number {
  if (b.pollInterval <= 0) return 0;
  if (b.polls <= a.polls) return Math.floor(windowMs / b.pollInterval);
  const periods = Math.round((b.lastPoll - a.lastPoll) / b.pollInterval);
  const onTime = b.polls - a.polls - (b.overruns - a.overruns);
  return Math.max(0, periods - onTime);
}
