// Scale and offset, applied on reads only (Kura's BaseAsset; docs/configuration.md "assets"): only
// when scale ≠ 1 or offset ≠ 0, only for numeric types. INTEGER and LONG truncate scale and offset
// to integers first (Kura: `v*(int)scale + (int)offset`), so a scale of 0.5 on an INTEGER reads 0.

import type { ChannelConfig, TypedValue } from './types.js';
import { toFloat32 } from './values.js';

export function applyScaleOffset(v: TypedValue, ch: Pick<ChannelConfig, 'scale' | 'offset'>): TypedValue {
  const { scale, offset } = ch;
  if (scale === 1 && offset === 0) return v;
  switch (v.type) {
    case 'DOUBLE':
      return { type: 'DOUBLE', value: v.value * scale + offset };
    case 'FLOAT':
      return { type: 'FLOAT', value: toFloat32(toFloat32(v.value * toFloat32(scale)) + toFloat32(offset)) };
    case 'INTEGER':
      // Java int arithmetic wraps at 32 bits.
      return { type: 'INTEGER', value: (Math.imul(v.value, Math.trunc(scale) | 0) + (Math.trunc(offset) | 0)) | 0 };
    case 'LONG':
      return { type: 'LONG', value: BigInt.asIntN(64, v.value * BigInt(Math.trunc(scale)) + BigInt(Math.trunc(offset))) };
    default:
      return v;
  }
}

/**
 * The inverse of applyScaleOffset, for a write in engineering units to a raw register (a driver's
 * `scale.on.write`). INTEGER and LONG round to the nearest integer; a scale of 0 (or one that
 * truncates to 0) cannot be inverted.
 */
export function removeScaleOffset(v: TypedValue, ch: Pick<ChannelConfig, 'scale' | 'offset'>): TypedValue | string {
  const { scale, offset } = ch;
  if (scale === 1 && offset === 0) return v;
  const int = v.type === 'INTEGER' || v.type === 'LONG';
  const s = int ? Math.trunc(scale) : scale;
  if (s === 0) return `scale ${scale} cannot be inverted for a ${v.type} write`;
  switch (v.type) {
    case 'DOUBLE':
      return { type: 'DOUBLE', value: (v.value - offset) / s };
    case 'FLOAT':
      return { type: 'FLOAT', value: toFloat32((v.value - offset) / s) };
    case 'INTEGER':
      return { type: 'INTEGER', value: Math.round((v.value - Math.trunc(offset)) / s) | 0 };
    case 'LONG': {
      const n = v.value - BigInt(Math.trunc(offset));
      const d = BigInt(s);
      const r = n % d;
      const abs = (x: bigint) => (x < 0n ? -x : x);
      // Half away from zero, as Math.round does for positive values.
      const away = 2n * abs(r) >= abs(d) ? ((n < 0n) !== (d < 0n) ? -1n : 1n) : 0n;
      return { type: 'LONG', value: BigInt.asIntN(64, n / d + away) };
    }
    default:
      return v;
  }
}
