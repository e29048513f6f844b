// PEM text (RFC 7468): labelled Base64 blocks. The reader is strict where a lax one would hide a
// fault: a block must end with its own label, the Base64 must be well-formed, and text outside the
// blocks is allowed only as explanatory lines (RFC 7468 §2), never inside one.

export class PemError extends Error {
  override readonly name = 'PemError';
}

export interface PemBlock {
  label: string;
  der: Buffer;
}

const BEGIN = /^-----BEGIN ([A-Z0-9 ]{1,40})-----$/;
const END = /^-----END ([A-Z0-9 ]{1,40})-----$/;
const B64_LINE = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The blocks of `text`, at most `maxBlocks` of them. `text` is bounded by its caller (the request
 * body and the entry bounds of src/keystores/store.ts).
 */
export function parsePem(text: string, maxBlocks = 16): PemBlock[] {
  const blocks: PemBlock[] = [];
  let label: string | undefined;
  let body: string[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (label === undefined) {
      const m = BEGIN.exec(line);
      if (!m) {
        if (line.startsWith('-----')) throw new PemError(`line ${i + 1}: unexpected PEM boundary`);
        continue;
      }
      if (blocks.length >= maxBlocks) throw new PemError(`more than ${maxBlocks} PEM blocks`);
      label = m[1];
      body = [];
      continue;
    }
    const end = END.exec(line);
    if (end) {
      if (end[1] !== label) throw new PemError(`line ${i + 1}: "${label}" block ends with "${end[1]}"`);
      const b64 = body.join('');
      if (b64.length === 0 || b64.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) throw new PemError(`"${label}" block: malformed Base64`);
      blocks.push({ label, der: Buffer.from(b64, 'base64') });
      label = undefined;
      continue;
    }
    if (line.startsWith('-----') || line.includes(':')) throw new PemError(`line ${i + 1}: unexpected text inside a "${label}" block`);
    if (!B64_LINE.test(line)) throw new PemError(`line ${i + 1}: not Base64 inside a "${label}" block`);
    body.push(line);
  }
  if (label !== undefined) throw new PemError(`"${label}" block has no END line`);
  return blocks;
}

/** One PEM block, 64 characters a line (RFC 7468 §2). */
export function pemBlock(label: string, der: Buffer): string {
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}
