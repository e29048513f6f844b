// The error of the Sparkplug topic and host-state modules (topic.ts, host-state.ts): its message
// says what is wrong with a topic id or a STATE payload.

export class SparkplugError extends Error {
  override name = 'SparkplugError';
}
