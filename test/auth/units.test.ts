// Tables for the pure pieces of the auth layer: BASIC and cookie parsing, password rules, hash
// forms, session store bounds and expiry, throttle windows (fake clocks, no sleeping).
import t from 'tap';
import { BasicCache, parseBasic } from '../../src/auth/basic-credentials.js';
import { cookieValue, parseCookies } from '../../src/auth/layer.js';
import { commonName } from '../../src/auth/providers/certificate.js';
import { passwordFailures } from '../../src/auth/password-policy.js';
import { PasswordHasher, hashKind, kuraSha256, needsRehash, safeEqual, safeEqualText } from '../../src/auth/password-hash.js';
import { SessionStore } from '../../src/auth/session-store.js';
import { LoginThrottle } from '../../src/auth/throttle.js';
import { gsonJson } from '../../src/api/session.js';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

t.test('parseBasic', async (t) => {
  const cases: [string | undefined, { user: string; password: string } | undefined][] = [
    [`Basic ${b64('foo:bar')}`, { user: 'foo', password: 'bar' }],
    [`Basic ${b64('foo:b:a:r')}`, { user: 'foo', password: 'b:a:r' }],
    [`Basic ${b64('foo:')}`, { user: 'foo', password: '' }],
    [`Basic ${b64('jürgen:pässword')}`, { user: 'jürgen', password: 'pässword' }],
    [`  Basic   ${b64('foo:bar')}  `, { user: 'foo', password: 'bar' }],
    [`basic ${b64('foo:bar')}`, undefined],
    [`BASIC ${b64('foo:bar')}`, undefined],
    [`Basic ${b64('foobar')}`, undefined],
    ['Basic', undefined],
    ['Basic a', undefined],
    ['Basic ####', undefined],
    [`Basic ${b64('foo:bar')} x`, undefined],
    [`Basic ${Buffer.from([0x66, 0x3a, 0xff]).toString('base64')}`, undefined],
    ['', undefined],
    [undefined, undefined],
  ];
  for (const [h, want] of cases) t.same(parseBasic(h), want, String(h));
});

t.test('BASIC cache: by credentials and by the exact header, bound to the stamp, aged, forgotten, bounded', async (t) => {
  let now = 1_000_000;
  const c = new BasicCache(() => now);
  // A password no digest text will contain by chance ('bar' appeared in one of the 256+ base64
  // digests below in about 1 run in 25).
  const creds = { user: 'foo', password: 'correct-horse-battery' };
  const header = `Basic ${Buffer.from('foo:correct-horse-battery').toString('base64')}`;
  t.notOk(c.has(creds, 1));
  t.equal(c.header(header), undefined);
  c.remember(creds, 1);
  c.rememberHeader(header, 'foo', 1);
  t.ok(c.has(creds, 1));
  t.notOk(c.has(creds, 2), 'another credentials stamp');
  t.notOk(c.has(creds, 1), 'and the entry is gone');
  t.notOk(c.has({ user: 'foo', password: 'baz' }, 1));
  t.same(c.header(header), { user: 'foo', credentials: 1, at: now });
  t.equal(c.header(`Basic ${Buffer.from('foo:baz').toString('base64')}`), undefined, 'another password');
  t.equal(c.header(` ${header}`), undefined, 'only the exact header');
  now += 10 * 60_000 + 1;
  t.equal(c.header(header), undefined, 'aged out');
  c.rememberHeader(header, 'foo', 1);
  c.remember(creds, 1);
  c.forget('foo');
  t.equal(c.header(header), undefined, 'forgotten with its identity');
  t.notOk(c.has(creds, 1));
  for (let i = 0; i < 300; i++) c.rememberHeader(`Basic ${i}`, `u${i}`, 1);
  t.equal(c.header('Basic 0'), undefined, 'least recently used dropped beyond 256');
  t.equal(c.header('Basic 299')?.user, 'u299');
  const text = JSON.stringify([...Object.values(c)].map((v) => (v instanceof Map ? [...v.keys()] : String(v))));
  t.notOk(text.includes(creds.password) || text.includes(header.slice(6)), 'neither the password nor the header is kept');
});

/** A test name with every character outside printable ASCII escaped (U+2028 would break a TAP line). */
const ascii = (s: string): string => s.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

t.test('parseCookies and commonName', async (t) => {
  const c = parseCookies('a=1; JSESSIONID=abc; JSESSIONID=second; q="quoted"; bad; =x');
  t.equal(c.get('JSESSIONID'), 'abc', 'first occurrence wins');
  t.equal(c.get('q'), 'quoted');
  t.equal(c.size, 3);
  t.equal(parseCookies(undefined).size, 0);
  // The one-cookie lookup of every request answers as the map does.
  const headers = ['a=1; JSESSIONID=abc; JSESSIONID=second; q="quoted"; bad; =x', ' JSESSIONID = v ;', 'x=1;JSESSIONID="";y', 'JSESSIONID', 'JSESSIONID=a=b; c', '=JSESSIONID=1', ';;JSESSIONID=z;;', 'q="', '',
    // Around the fast path (a name followed at once by '='): spaces a trim removes, longer names.
    'JSESSIONID=\tv\t', 'JSESSIONID=\u00a0v\u00a0; a=1', 'JSESSIONID= v', 'JSESSIONID=v ', 'JSESSIONIDX=1; JSESSIONID=2', 'JSESSIONID =1; JSESSIONID=2',
    'JSESSIONID=; JSESSIONID=2', 'JSESSIONID=\u00e9v\u00ff', 'JSESSIONID=\x7fv', 'aJSESSIONID=1; JSESSIONID=3', 'JSESSIONID=', 'JSESSIONID=\u2028v\u3000', 'JSESSIONID=""'];
  for (const h of headers) for (const name of ['JSESSIONID', 'q', 'a', 'x', 'bad', '']) t.equal(cookieValue(h, name), parseCookies(h).get(name), `${ascii(JSON.stringify(h))} ${name}`);
  t.equal(cookieValue(undefined, 'JSESSIONID'), undefined);
  t.equal(commonName({ CN: 'foo', DC: 'bar.com' }), 'foo');
  t.equal(commonName({ CN: ['first', 'second'] }), 'first');
  t.equal(commonName({ O: 'x' }), undefined);
  t.equal(commonName(undefined), undefined);
});

t.test('password rules: order and edge cases', async (t) => {
  const all = { passwordMinimumLength: 8, passwordRequireDigits: true, passwordRequireSpecialChars: true, passwordRequireBothCases: true };
  t.same(passwordFailures('a', all), [
    'Password length must be at least 8 characters',
    'Password must contain at least one digit',
    'Password must contain both uppercase and lowercase characters',
    'Password must contain at least one non alphanumeric character',
  ]);
  t.same(passwordFailures('Abcdef1!', all), []);
  t.same(passwordFailures('Abcdef1!\n', all).length, 3, 'a line terminator fails every regex rule');
  t.same(passwordFailures('', { ...all, passwordMinimumLength: 0, passwordRequireDigits: false, passwordRequireSpecialChars: false, passwordRequireBothCases: false }), []);
  t.same(passwordFailures('😀😀😀😀', { ...all, passwordRequireDigits: false, passwordRequireBothCases: false }), [], 'length in UTF-16 code units, emoji is special');
});

t.test('password hashes', async (t) => {
  const h = new PasswordHasher();
  const stored = await h.hash('secret');
  t.equal(hashKind(stored), 'scrypt');
  t.notOk(needsRehash(stored));
  t.ok(await h.verify('secret', stored));
  t.notOk(await h.verify('Secret', stored));
  t.not(await h.hash('secret'), stored, 'salted');
  const kura = kuraSha256('admin');
  t.equal(kura, 'jGl25bVBBBW96Qi9Te4V37Fnqchz/Eu4qB9vKrRIqRg=', "Kura's documented hash of admin");
  t.equal(hashKind(kura), 'kura-sha256');
  t.ok(needsRehash(kura));
  t.ok(await h.verify('admin', kura));
  t.notOk(await h.verify('admin2', kura));
  for (const bad of ['', 'plain', '$scrypt$ln=31,r=8,p=1$AAAAAAAAAAA=$AAAAAAAAAAAAAAAAAAAAAA==', '$scrypt$ln=14,r=8,p=1$$']) {
    t.equal(hashKind(bad), undefined, bad);
    t.notOk(await h.verify('x', bad));
  }
  const weaker = stored.replace('ln=14', 'ln=10');
  t.ok(needsRehash(weaker), 'older parameters are upgraded');
  t.ok(safeEqual('abc', 'abc'));
  t.notOk(safeEqual('abc', 'abd'));
  t.notOk(safeEqual('abc', 'abcd'));
  t.ok(safeEqualText('8f4652ab-118a', '8f4652ab-118a'));
  t.notOk(safeEqualText('8f4652ab-118a', '8f4652ab-118b'), 'last character differs');
  t.notOk(safeEqualText('xf4652ab-118a', '8f4652ab-118a'), 'first character differs');
  t.notOk(safeEqualText('abc', 'abcd'), 'shorter');
  t.notOk(safeEqualText('abcd', 'abc'), 'longer');
  t.notOk(safeEqualText('', 'a'));
  t.ok(safeEqualText('', ''));
  t.notOk(safeEqualText('\ud800', '\udc00'), 'lone surrogates compared by code unit');
});

t.test('session store: bound, LRU eviction, expiry strictly greater than the interval', async (t) => {
  let now = 0;
  const s = new SessionStore(2, 10, () => now);
  const a = s.create('u', 1, false);
  const b = s.create('u', 1, false);
  t.match(a.id, /^[A-Za-z0-9_-]{22}$/);
  t.not(a.id, b.id);
  s.touch(a);
  const c = s.create('v', 1, false);
  t.equal(s.get(b.id), undefined, 'least recently active evicted');
  t.ok(s.get(a.id) && s.get(c.id));
  now = 10_000;
  t.notOk(s.expired(a), 'exactly the interval is not expired');
  now = 10_001;
  t.ok(s.expired(a));
  s.sweep();
  t.equal(s.size, 0);
  const d = s.create('w', 1, false);
  s.create('w', 1, false);
  t.equal(s.invalidateUser('w'), 2);
  t.equal(s.get(d.id), undefined);
  s.inactivitySeconds = 0;
  const e = s.create('x', 1, false);
  now = 1e12;
  t.notOk(s.expired(e), 'interval 0 disables expiry');
});

t.test('throttle windows', async (t) => {
  let now = 0;
  const th = new LoginThrottle(1000, () => now);
  th.failed('foo', 'a');
  th.failed('foo', 'a');
  t.equal(th.wait('foo', 'a'), 0, 'two free failures');
  const windows: number[] = [];
  for (let i = 0; i < 6; i++) {
    th.failed('foo', 'a');
    windows.push(th.wait('foo', 'b'));
    now += windows[i];
  }
  t.same(windows, [250, 500, 1000, 1000, 1000, 1000], 'doubling up to the bound');
  th.succeeded('foo');
  t.equal(th.wait('foo', 'b'), 0, 'success clears the name');
  for (let i = 0; i < 11; i++) th.failed(`n${i}`, 'addr');
  t.equal(th.wait('someone', 'addr'), 250, 'the address is throttled after 10 free failures');
  now += 15 * 60_000 + 1;
  t.equal(th.wait('someone', 'addr'), 0, 'forgotten after 15 idle minutes');
  const off = new LoginThrottle(0, () => now);
  for (let i = 0; i < 50; i++) off.failed('foo', 'a');
  t.equal(off.wait('foo', 'a'), 0, '0 disables');
});

t.test('gsonJson escapes like Gson', async (t) => {
  t.equal(gsonJson({ message: "a<b>&c='d'" }), '{"message":"a\\u003cb\\u003e\\u0026c\\u003d\\u0027d\\u0027"}');
});

t.test('hash limiter: bounded concurrency and queue', async (t) => {
  const { HashLimiter } = await import('../../src/auth/password-hash.js');
  const l = new HashLimiter(1, 2);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let running = 0;
  let peak = 0;
  const job = (n: number) => l.run(async () => {
    running++;
    peak = Math.max(peak, running);
    await gate;
    running--;
  }, { client: `10.0.0.${n}`, name: 'x', failures: 0 });
  const jobs = [job(1), job(2), job(3)];
  await t.rejects(job(4), /too many password checks/, 'a fourth check waits nowhere: refused');
  const own = l.run(async () => 'own');
  release();
  await Promise.all(jobs);
  t.equal(await own, 'own', 'the daemon\'s own hashing waited instead');
  t.equal(peak, 1, 'never more than one at once');
  t.equal(l.computed, 4);
});

t.test('identity store: change kinds, credential stamps, external edits', async (t) => {
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const { IdentityStore } = await import('../../src/auth/identity-store.js');
  const { silentLogger } = await import('../../src/log.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-idunit-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = await IdentityStore.open(dir, { a: { password: 'pw-a', permissions: ['rest.assets'], passwordChangeNeeded: false } }, silentLogger);
  const events: string[] = [];
  store.onChange((n, k) => events.push(`${n}:${k}`));
  const s0 = store.get('a')!.credentials;
  await store.update('a', { permissions: ['rest.deploy'], passwordChangeNeeded: true });
  t.equal(store.get('a')!.credentials, s0, 'attributes keep the stamp');
  await store.setPassword('a', 'pw-a2', true);
  const s1 = store.get('a')!.credentials;
  t.not(s1, s0, 'a new password changes the stamp');
  t.equal(store.get('a')!.passwordChangeNeeded, false);
  await store.create('b', { permissions: [] });
  t.equal(store.get('b')!.passwordHash, undefined, 'certificate-only');
  await t.rejects(store.create('b', {}), /already exists/);
  await t.rejects(store.update('zz', {}), /does not exist/);
  await store.delete('b');
  t.same(events, ['a:attributes', 'a:credentials', 'b:credentials', 'b:deleted']);
  t.ok(await store.verifyPassword('a', 'pw-a2'));
  t.notOk(await store.verifyPassword('a', 'pw-a'));
  t.notOk(await store.verifyPassword('nobody', 'pw-a2'));

  // Another process (gatewayd passwd) rewrites the file.
  const other = await IdentityStore.open(dir, {}, silentLogger);
  await other.setPassword('a', 'pw-a3', false);
  events.length = 0;
  store.refreshIfChanged();
  t.same(events, ['a:credentials'], 'external password change noticed');
  t.ok(await store.verifyPassword('a', 'pw-a3'));
  const reopened = await IdentityStore.open(dir, { x: { password: 'seed', permissions: [], passwordChangeNeeded: false } }, silentLogger);
  t.same(reopened.list().map((i) => i.name), ['a'], 'an existing store is not re-seeded');
});

t.test('identity store: a password changed while it is being checked does not verify (docs/rest-api.md "Password checks")', async (t) => {
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const { IdentityStore } = await import('../../src/auth/identity-store.js');
  const { HashLimiter } = await import('../../src/auth/password-hash.js');
  const { silentLogger } = await import('../../src/log.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-idrace-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const hasher = new PasswordHasher(new HashLimiter(1, 32));
  const store = await IdentityStore.open(dir, { a: { password: 'old-password', permissions: [], passwordChangeNeeded: false } }, silentLogger, hasher);
  // Hold the one hash slot, so that the check of the old password and the change wait together.
  let release!: () => void;
  const held = hasher.limiter.run(() => new Promise<void>((r) => (release = r)));
  const check = store.verifyPassword('a', 'old-password', { client: '10.0.0.1', name: 'a', failures: 0 });
  const change = store.setPassword('a', 'new-password', false);
  release();
  await held;
  const [verified] = await Promise.all([check, change]);
  t.equal(verified, undefined, 'the old password, checked against the hash it had, is not accepted once it changed');
  t.notOk(await store.verifyPassword('a', 'old-password'), 'nor afterwards');
  t.ok(await store.verifyPassword('a', 'new-password'), 'the new one is');
});
