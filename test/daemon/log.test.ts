// Log lines never carry control characters from user input (ESC sequences, NUL, DEL, C1 such as CSI,
// line separators): they are escaped, so a log viewed on a terminal or parsed line by line cannot be
// forged or garbled. Through the real daemon (a login with such a name), and for every control code.

import t from 'tap';
import { formatLine } from '../../src/log.js';
import { startDaemon } from '../helpers/daemon.js';

// Any raw C0 (tab included), DEL or C1 character, or U+2028/2029, in a line.
const RAW_CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

t.test('a user name with control characters reaches the log escaped', async (t) => {
  const d = await startDaemon(t, { 'log.level': 'info', identities: { admin: { password: 'Admin-pw-123', permissions: ['kura.admin'] } } });
  const name = 'evil\u001b[31mred\u0000nul\u009b2J\u007fdel\u2028x\u0085y\rforged level=error';
  const r = await d.request('/services/session/v1/login/password', { method: 'POST', body: { username: name, password: 'wrong-pw-1' } });
  t.equal(r.status, 401);
  const line = await d.waitForLog(/password authentication failed/);
  t.notMatch(line, RAW_CONTROL, 'no raw control character in the line');
  t.ok(line.includes('identity="evil\\u001b[31mred\\u0000nul\\u009b2J\\u007fdel\\u2028x\\u0085y\\rforged level=error"'), `escaped and quoted as one value: ${line}`);
  for (const l of d.logs) t.notMatch(l, RAW_CONTROL, `no raw control character in: ${JSON.stringify(l)}`);
});

t.test('every C0, DEL and C1 code is escaped, in values, messages and nested objects', async (t) => {
  for (let c = 0; c <= 0x9f; c = c === 0x1f ? 0x7f : c + 1) {
    const ch = String.fromCharCode(c);
    const line = formatLine('info', `m${ch}`, { v: `a${ch}b`, o: { n: `x${ch}` } });
    if (RAW_CONTROL.test(line)) t.fail(`code 0x${c.toString(16)} raw in ${JSON.stringify(line)}`);
  }
  t.equal(formatLine('info', 'm', { v: 'plain' }).endsWith(' v=plain'), true, 'plain values stay bare');
});
