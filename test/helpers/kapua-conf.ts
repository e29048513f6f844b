// Eclipse Kapua's JAXB binding of Kura's CONF-V1 XML in a Java process, through
// test/helpers/KapuaConfPeer.java: the JAXB reference implementation (Debian's libjaxb-java) and
// the JDK's single-file source launcher. A reply is read as Kapua reads it (strict unmarshalling,
// then what its translator needs); a Configuration Put body is written as Kapua's marshaller writes it.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const JARS = ['jaxb-api', 'jaxb-runtime', 'jaxb-core', 'istack-commons-runtime', 'javax.activation', 'txw2', 'stax-ex', 'FastInfoset'].map((j) => `/usr/share/java/${j}.jar`);
const SOURCE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'KapuaConfPeer.java');

export function haveKapuaPeer(): boolean {
  return JARS.every((j) => fs.existsSync(j)) && fs.existsSync('/usr/bin/java');
}

/** For `t.test(name, kapuaPeerSkip(), fn)`: skips when the peer is missing, fails under CI=true. */
export function kapuaPeerSkip(): { skip?: string } {
  if (haveKapuaPeer()) return {};
  if (process.env.CI === 'true') throw new Error('required test peer missing under CI: the JAXB reference implementation and java (apt-get install libjaxb-java default-jre-headless)');
  return { skip: 'JAXB (libjaxb-java) or java not installed' };
}

/** A property as Kapua holds it: the Java class of its value (`Integer`, `Double[]`, …) and its toString(s). */
export interface KapuaProperty {
  class: string;
  value: string | (string | null)[];
}
export interface KapuaAd {
  id: string;
  name: string | null;
  type: string;
  cardinality: number | null;
  required: boolean | null;
  default: string | null;
  min: string | null;
  max: string | null;
  options: [string, string][];
}
export interface KapuaConfiguration {
  pid: string;
  definition: { id: string | null; name: string | null; description: string | null; ad: KapuaAd[] } | null;
  properties: Record<string, KapuaProperty>;
}

/** A property of a Configuration Put: Kapua's ConfigPropertyType name (`integerType`, `passwordType`, …). */
export interface PutProperty {
  name: string;
  type: string;
  values: string[];
  array?: boolean;
}

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

export class KapuaConfPeer {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly waiting: ((line: string) => void)[] = [];

  constructor() {
    this.proc = spawn('/usr/bin/java', ['-cp', JARS.join(':'), SOURCE], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    this.proc.stderr.on('data', (d) => (stderr += d));
    readline.createInterface({ input: this.proc.stdout }).on('line', (line) => this.waiting.shift()?.(line));
    this.proc.on('exit', (code) => {
      for (const w of this.waiting.splice(0)) w(`err ${b64(`java exited with ${code}: ${stderr}`)}`);
    });
  }

  private ask(line: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.waiting.push((answer) => (answer.startsWith('ok ') ? resolve(JSON.parse(answer.slice(3))) : reject(new Error(Buffer.from(answer.slice(4), 'base64').toString()))));
      this.proc.stdin.write(`${line}\n`);
    });
  }

  /** KuraDeviceConfiguration as Kapua unmarshals it; rejects where Kapua fails. */
  async configurations(xml: string | Buffer): Promise<KapuaConfiguration[]> {
    return ((await this.ask(`conf ${b64(xml)}`)) as { configurations: KapuaConfiguration[] }).configurations;
  }

  /** KuraSnapshotIds as Kapua unmarshals it (ids as decimal texts: Java longs). */
  async snapshotIds(xml: string | Buffer): Promise<string[]> {
    return ((await this.ask(`snapshots ${b64(xml)}`)) as { ids: string[] }).ids;
  }

  /** The body of Kapua's Configuration Put of `pid` with `properties` (passwords base64, encrypted="true"). */
  async putBody(pid: string, properties: PutProperty[]): Promise<string> {
    const spec = properties.map((p) => [b64(p.name), p.type, String(!!p.array), ...p.values.map(b64)].join(','));
    return (await this.ask(`put ${[b64(pid), ...spec].join(' ')}`)) as string;
  }

  async close(): Promise<void> {
    this.proc.stdin.end();
    if (this.proc.exitCode === null) await new Promise((r) => this.proc.once('exit', r));
  }
}
