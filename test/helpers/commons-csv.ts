// Apache Commons CSV (the CSV library of Kura's web UI) in a Java process, through
// test/helpers/CommonsCsvPeer.java: Debian's libcommons-csv-java and the JDK's single-file source
// launcher. Requests are answered in order, one line each.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

export const COMMONS_CSV_JAR = '/usr/share/java/commons-csv.jar';
const SOURCE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'CommonsCsvPeer.java');

export function haveCommonsCsv(): boolean {
  return fs.existsSync(COMMONS_CSV_JAR) && fs.existsSync('/usr/bin/java');
}

/** For `t.test(name, commonsCsvSkip(), fn)`: skips when the peer is missing, fails under CI=true. */
export function commonsCsvSkip(): { skip?: string } {
  if (haveCommonsCsv()) return {};
  if (process.env.CI === 'true') throw new Error(`required test peer missing under CI: ${COMMONS_CSV_JAR} and java (apt-get install libcommons-csv-java default-jre-headless)`);
  return { skip: 'Commons CSV (libcommons-csv-java) or java not installed' };
}

/** A record's fields; null is Commons' null (an absent value, printed as nothing). */
export type PeerRecord = (string | null)[];

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');
const encodeRecords = (records: PeerRecord[]) => records.map((r) => r.map((f) => (f === null ? '~' : `.${b64(f)}`)).join(',')).join(';');

export class CommonsCsvPeer {
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly waiting: ((line: string) => void)[] = [];

  constructor() {
    this.proc = spawn('/usr/bin/java', ['-cp', COMMONS_CSV_JAR, SOURCE], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    this.proc.stderr.on('data', (d) => (stderr += d));
    readline.createInterface({ input: this.proc.stdout }).on('line', (line) => this.waiting.shift()?.(line));
    this.proc.on('exit', (code) => {
      for (const w of this.waiting.splice(0)) w(`err ${b64(`java exited with ${code}: ${stderr}`)}`);
    });
  }

  private ask(line: string): Promise<string> {
    return new Promise((resolve, reject) => {
      this.waiting.push((answer) => (answer.startsWith('ok ') || answer === 'ok' ? resolve(answer.slice(3)) : reject(new Error(unb64(answer.slice(4))))));
      this.proc.stdin.write(`${line}\n`);
    });
  }

  /** CSVParser.parse(text, CSVFormat.RFC4180): the records. */
  async parse(text: string): Promise<string[][]> {
    const answer = await this.ask(`parse ${b64(text)}`);
    if (answer === '') return [];
    return answer.split(';').map((r) => r.split(',').map((f) => unb64(f.slice(1))));
  }

  /** CSVPrinter with CSVFormat.RFC4180, print(field) for each and println() after each record. */
  async print(records: PeerRecord[]): Promise<string> {
    return unb64(await this.ask(`print ${encodeRecords(records)}`));
  }

  async close(): Promise<void> {
    this.proc.stdin.end();
    if (this.proc.exitCode === null) await new Promise((r) => this.proc.once('exit', r));
  }
}
