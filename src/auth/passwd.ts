// `gatewayd passwd`: replaced by the identity store implementation (sessions issue).
export async function runPasswd(_file: string, _rest: string[], _clear: boolean): Promise<number> {
  process.stderr.write('gatewayd: passwd is not available in this build yet\n');
  return 1;
}
