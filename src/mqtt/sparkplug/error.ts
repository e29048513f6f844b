// The error of the Sparkplug topic and host-state modules (topic.ts, host-state.ts): `detail` says
// what is wrong, `where` the path to it (outermost first), `offset` the byte of a payload where the
// offending element starts, when there is one.

export class SparkplugError extends Error {
  constructor(
    readonly detail: string,
    readonly where: readonly string[] = [],
    readonly offset?: number,
  ) {
    super(`${where.length ? `${where.join(': ')}: ` : ''}${detail}${offset === undefined ? '' : ` (at byte ${offset})`}`);
    this.name = 'SparkplugError';
  }

  /** The same error seen from an enclosing element (`label`), with `offset` if it had none. */
  within(label: string | undefined, offset?: number): SparkplugError {
    return new SparkplugError(this.detail, label ? [label, ...this.where] : this.where, this.offset ?? offset);
  }
}
