// Sessions are bounded per identity as well as in all: an identity logging in again and again evicts
// only its own least recently used sessions, and when the store is full the identity holding the most
// pays — never an administrator for another identity's logins. Against the real daemon.

import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { login, type Browser } from '../helpers/session-client.js';

const CURRENT = '/services/session/v1/currentIdentity';
const live = async (b: Browser) => (await b.request(CURRENT)).status === 200;

t.test("one identity's login flood does not evict other identities' sessions", async (t) => {
  const pw = 'Passw0rd-123';
  const d = await startDaemon(t, {
    rest: { 'session.max.count': 12, 'session.max.per.identity': 4 },
    identities: {
      admin: { password: pw, permissions: ['kura.admin'] },
      op: { password: pw, permissions: ['rest.assets'] },
      u1: { password: pw, permissions: [] },
      u2: { password: pw, permissions: [] },
    },
  });
  const admin = await login(d, 'admin', pw);
  const op: Browser[] = [];
  for (let i = 0; i < 40; i++) op.push(await login(d, 'op', pw));
  t.ok(await live(admin), "the administrator's session survives 40 logins of another identity");
  t.ok(await live(op[39]), "op's newest session is valid");
  t.notOk(await live(op[0]), "op's oldest session was evicted");
  let opLive = 0;
  for (const b of op) if (await live(b)) opLive++;
  t.equal(opLive, 4, 'op keeps session.max.per.identity sessions');
  // Fill the store (12) with other identities: the one holding the most pays, never the administrator.
  const others: Browser[] = [];
  for (const u of ['u1', 'u2']) for (let i = 0; i < 4; i++) others.push(await login(d, u, pw));
  t.ok(await live(admin), "the administrator's session survives a full store");
  t.ok(await live(others[7]), 'the newest login has a session');
  let total = (await live(admin)) ? 1 : 0;
  for (const b of [...op, ...others]) if (await live(b)) total++;
  t.ok(total <= 12, `sessions in all: ${total} (bound 12)`);
});
