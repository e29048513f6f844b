// Kura's typed metrics (KuraPayload's KuraMetric): what an MQTT request carries besides its body and
// what a reply or a notification may carry back. Ground, so a resource family can read a request's
// metrics and answer with metrics without knowing the codec (src/mqtt/kura-payload.ts encodes them).

export const METRIC_TYPES = ['DOUBLE', 'FLOAT', 'INT64', 'INT32', 'BOOL', 'STRING', 'BYTES'] as const;
export type MetricType = (typeof METRIC_TYPES)[number];

/** INT64 values are bigints (exact); FLOAT values are already rounded to float32. */
export type KuraMetric =
  | { name: string; type: 'DOUBLE'; value: number }
  | { name: string; type: 'FLOAT'; value: number }
  | { name: string; type: 'INT64'; value: bigint }
  | { name: string; type: 'INT32'; value: number }
  | { name: string; type: 'BOOL'; value: boolean }
  | { name: string; type: 'STRING'; value: string }
  | { name: string; type: 'BYTES'; value: Buffer };
