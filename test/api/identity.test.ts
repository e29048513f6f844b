// identity/v1 (Kura IdentityEndpointsTest I1–I9; docs/rest-api.md "identity/v1"), the persistent identity store
// (seeding, restart, Kura SHA-256 upgrade) and `gatewayd passwd`.
import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli, startDaemon } from '../helpers/daemon.js';
import { Browser, basic, login } from '../helpers/session-client.js';

const I = '/services/identity/v1';
const kuraHash = (p: string) => crypto.createHash('sha256').update(p).digest('base64');

t.test('identity/v1', async (t) => {
  const d = await startDaemon(t, {
    rest: { 'login.throttle.max.delay': 0 },
    identities: {
      // It grants only what it holds (docs/rest-api.md "identity/v1").
      idadmin: { password: 'idadmin', permissions: ['rest.identity', 'rest.assets', 'rest.system'] },
      plain: { password: 'plain', permissions: ['rest.assets'] },
    },
  });
  const admin = basic(d, 'idadmin', 'idadmin');

  t.test('I1: passwordRequirements anonymously, Kura key order', async (t) => {
    const r = await d.request(`${I}/passwordRequirements`);
    t.equal(r.status, 200);
    t.equal(r.body, '{"passwordMinimumLength":8,"passwordRequireDigits":false,"passwordRequireSpecialChars":false,"passwordRequireBothCases":false}');
  });

  t.test('I2: definedPermissions lists the permissions in use', async (t) => {
    const r = await d.request(`${I}/definedPermissions`);
    t.equal(r.status, 200);
    for (const p of ['kura.admin', 'rest.assets', 'rest.deploy', 'rest.identity']) t.ok(r.json().permissions.includes(p), p);
  });

  t.test('role identity: anonymous 401, without permission 403', async (t) => {
    t.equal((await d.request(`${I}/identities`)).status, 401);
    t.equal((await basic(d, 'plain', 'plain').request(`${I}/identities`)).status, 403);
  });

  t.test('I3: identities lists every identity with Kura shape', async (t) => {
    const r = await admin.request(`${I}/identities`);
    t.equal(r.status, 200);
    t.equal(r.body, '{"userConfig":[{"userName":"idadmin","passwordAuthEnabled":true,"passwordChangeNeeded":false,"permissions":["rest.identity","rest.assets","rest.system"]},{"userName":"plain","passwordAuthEnabled":true,"passwordChangeNeeded":false,"permissions":["rest.assets"]}]}');
    t.notMatch(r.body, /scrypt|passwordHash/, 'no hashes');
  });

  t.test('I4/I9: byName', async (t) => {
    const r = await admin.request(`${I}/identities/byName`, { method: 'POST', body: { userName: 'plain' } });
    t.equal(r.body, '{"userName":"plain","passwordAuthEnabled":true,"passwordChangeNeeded":false,"permissions":["rest.assets"]}');
    const n = await admin.request(`${I}/identities/byName`, { method: 'POST', body: { userName: 'nobody' } });
    t.equal(n.status, 404);
    t.same(n.json(), { message: 'Identity does not exist' });
  });

  t.test('I5: create; duplicates and weak passwords refused', async (t) => {
    const body = { userName: 'newbie', password: 'password1', passwordChangeNeeded: true, passwordAuthEnabled: true, permissions: ['rest.assets'] };
    const r = await admin.request(`${I}/identities`, { method: 'POST', body });
    t.equal(r.status, 200);
    t.equal(r.body, '');
    const dup = await admin.request(`${I}/identities`, { method: 'POST', body });
    t.equal(dup.status, 400);
    t.same(dup.json(), { message: 'Bad request. Identity newbie already exists' });
    const weak = await admin.request(`${I}/identities`, { method: 'POST', body: { ...body, userName: 'weak', password: 'short' } });
    t.equal(weak.status, 400);
    t.same(weak.json(), { message: 'Bad request. password strenght requirements not satisfied' });
    const badName = await admin.request(`${I}/identities`, { method: 'POST', body: { ...body, userName: 'a b' } });
    t.equal(badName.status, 400);
    const badPerm = await admin.request(`${I}/identities`, { method: 'POST', body: { ...body, userName: 'x', permissions: 'rest.assets' } });
    t.equal(badPerm.status, 400);
    t.match(badPerm.json().message, /^Bad request\. permissions/);
    const b = new Browser(d);
    const l = await b.loginPassword('newbie', 'password1');
    t.equal(l.status, 200);
    t.equal(l.body, '{"passwordChangeNeeded":true}');
  });

  t.test('I6: update; unknown identity 404; password auth can be switched off', async (t) => {
    const r = await admin.request(`${I}/identities`, { method: 'PUT', body: { userName: 'newbie', passwordChangeNeeded: false, permissions: ['rest.system'] } });
    t.equal(r.status, 200);
    t.equal(r.body, '');
    const got = await admin.request(`${I}/identities/byName`, { method: 'POST', body: { userName: 'newbie' } });
    t.same(got.json(), { userName: 'newbie', passwordAuthEnabled: true, passwordChangeNeeded: false, permissions: ['rest.system'] });
    t.equal((await new Browser(d).loginPassword('newbie', 'password1')).status, 200, 'password kept');
    const off = await admin.request(`${I}/identities`, { method: 'PUT', body: { userName: 'newbie', passwordAuthEnabled: false } });
    t.equal(off.status, 200);
    t.equal((await new Browser(d).loginPassword('newbie', 'password1')).status, 401, 'certificate-only now');
    const unknown = await admin.request(`${I}/identities`, { method: 'PUT', body: { userName: 'nobody', permissions: [] } });
    t.equal(unknown.status, 404);
    t.same(unknown.json(), { message: 'Identity does not exist' });
  });

  t.test('I7/I8: delete ends the identity\'s sessions; unknown identity 404', async (t) => {
    await admin.request(`${I}/identities`, { method: 'POST', body: { userName: 'temp', password: 'password1', permissions: ['rest.assets'] } });
    const s = await login(d, 'temp', 'password1');
    t.equal((await s.request('/services/assets')).status, 200);
    const r = await admin.request(`${I}/identities`, { method: 'DELETE', body: { userName: 'temp' } });
    t.equal(r.status, 200);
    t.equal(r.body, '');
    t.equal((await s.request('/services/assets')).status, 401, 'session ended');
    const again = await admin.request(`${I}/identities`, { method: 'DELETE', body: { userName: 'temp' } });
    t.equal(again.status, 404);
    t.same(again.json(), { message: 'Identity does not exist' });
    // Re-created with the same name and password: the old session does not come back.
    await admin.request(`${I}/identities`, { method: 'POST', body: { userName: 'temp', password: 'password1', permissions: ['rest.assets'] } });
    t.equal((await s.request('/services/assets')).status, 401);
  });

  t.test('malformed bodies: 400', async (t) => {
    t.equal((await admin.request(`${I}/identities`, { method: 'POST', body: '[', headers: { 'content-type': 'application/json' } })).status, 400);
    t.equal((await admin.request(`${I}/identities`, { method: 'POST', body: [] })).status, 400);
    t.equal((await admin.request(`${I}/identities`, { method: 'DELETE', body: {} })).status, 400);
  });
});

t.test('identity/v1 keeps an administrator: no escalation, no last-admin removal, no self-deletion, no unknown permissions', async (t) => {
  const d = await startDaemon(t, {
    rest: { 'login.throttle.max.delay': 0, 'auth.basic.enabled': true },
    identities: {
      root: { password: 'rootpass1', permissions: ['kura.admin'] },
      root2: { password: 'root2pass', permissions: ['kura.admin'] },
      idmgr: { password: 'idmgrpass', permissions: ['rest.identity', 'rest.assets'] },
    },
  });
  const root = basic(d, 'root', 'rootpass1');
  const root2 = basic(d, 'root2', 'root2pass');
  const idmgr = basic(d, 'idmgr', 'idmgrpass');
  const put = (c: ReturnType<typeof basic>, body: object) => c.request(`${I}/identities`, { method: 'PUT', body });
  const post = (c: ReturnType<typeof basic>, body: object) => c.request(`${I}/identities`, { method: 'POST', body });
  const del = (c: ReturnType<typeof basic>, userName: string) => c.request(`${I}/identities`, { method: 'DELETE', body: { userName } });

  // rest.identity alone cannot reach kura.admin, neither for itself nor through a new identity or an administrator's password.
  let r = await put(idmgr, { userName: 'idmgr', permissions: ['rest.identity', 'kura.admin'] });
  t.equal(r.status, 403);
  t.same(r.json(), { message: 'granting kura.admin needs kura.admin' });
  r = await post(idmgr, { userName: 'mole', password: 'molepass1', permissions: ['kura.admin'] });
  t.equal(r.status, 403);
  t.equal((await put(idmgr, { userName: 'root', password: 'takeover1' })).status, 403, 'no password change of an administrator');
  t.equal((await del(idmgr, 'root')).status, 403, 'no deletion of an administrator');
  t.equal((await new Browser(d).loginPassword('root', 'rootpass1')).status, 200, 'root untouched');
  t.equal((await new Browser(d).loginPassword('mole', 'molepass1')).status, 401, 'mole not created');
  t.same((await idmgr.request(`${I}/identities/byName`, { method: 'POST', body: { userName: 'idmgr' } })).json().permissions, ['rest.identity', 'rest.assets']);
  t.equal((await post(idmgr, { userName: 'helper', password: 'helperpw1', permissions: ['rest.assets'] })).status, 200, 'a grant of a permission it holds still works');

  // Unknown permission names: refused with the valid ones.
  r = await post(idmgr, { userName: 'typo', password: 'typopass1', permissions: ['rest.asset'] });
  t.equal(r.status, 400);
  t.same(r.json(), { message: 'Bad request. unknown permission rest.asset; valid permissions: kura.admin, rest.assets, rest.cloudconnection, rest.configuration, rest.deploy, rest.identity, rest.inventory, rest.system' });
  t.equal((await put(root, { userName: 'helper', permissions: ['rest.assets', 'kura.adm'] })).status, 400);

  // An administrator can grant kura.admin, but not delete itself, nor remove the last administrator.
  r = await del(root, 'root');
  t.equal(r.status, 400);
  t.same(r.json(), { message: 'Bad request. an identity cannot delete itself' });
  t.equal((await del(root, 'root2')).status, 200);
  r = await put(root, { userName: 'root', permissions: ['rest.identity'] });
  t.equal(r.status, 400);
  t.same(r.json(), { message: 'Bad request. this would leave the device without an administrator (an identity with kura.admin)' });
  t.equal((await post(root, { userName: 'root2', password: 'root2pass', permissions: ['kura.admin'] })).status, 200, 'an admin grants kura.admin');

  // Two administrators each dropping their own kura.admin at the same moment: exactly one succeeds.
  const both = await Promise.all([put(root, { userName: 'root', permissions: ['rest.identity'] }), put(root2, { userName: 'root2', permissions: ['rest.identity'] })]);
  t.same(both.map((x) => x.status).sort(), [200, 400]);
  const list = (await idmgr.request(`${I}/identities`)).json().userConfig as { permissions: string[] }[];
  t.equal(list.filter((i) => i.permissions.includes('kura.admin')).length, 1, 'one administrator left');
  const stored = JSON.parse(fs.readFileSync(path.join(d.dataDir, 'identities.json'), 'utf8'));
  t.equal(stored.identities.filter((i: { permissions: string[] }) => i.permissions.includes('kura.admin')).length, 1, 'and on disk');
});

t.test('identity store: seeded once, persistent, Kura hashes upgraded, passwd', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-idstore-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = {
    rest: { 'login.throttle.max.delay': 0 },
    identities: {
      admin: { password: 'admin', permissions: ['kura.admin'], passwordChangeNeeded: true },
      legacy: { passwordHash: kuraHash('legacypw'), permissions: ['rest.assets'] },
    },
  };
  const d = await startDaemon(t, config, { dir });
  const file = path.join(d.dataDir, 'identities.json');
  const stored = JSON.parse(fs.readFileSync(file, 'utf8'));
  t.equal(stored.formatVersion, 1);
  t.match(stored.identities[0].passwordHash, /^\$scrypt\$ln=14,r=8,p=1\$/, 'plain seed password stored as scrypt');
  t.notMatch(fs.readFileSync(file, "utf8"), /"password"\s*:/, "no plain password in the file");
  t.equal((fs.statSync(file).mode & 0o777).toString(8), '600');
  t.equal(stored.identities[1].passwordHash, kuraHash('legacypw'));

  t.equal((await new Browser(d).loginPassword('legacy', 'wrong')).status, 401);
  t.equal(JSON.parse(fs.readFileSync(file, 'utf8')).identities[1].passwordHash, kuraHash('legacypw'), 'not upgraded by a failure');
  t.equal((await new Browser(d).loginPassword('legacy', 'legacypw')).status, 200, 'Kura SHA-256 hash accepted');
  await d.waitForLog(/password hash upgraded to scrypt.*identity=legacy/);
  t.match(JSON.parse(fs.readFileSync(file, 'utf8')).identities[1].passwordHash, /^\$scrypt\$/, 're-hashed on success');
  t.equal((await new Browser(d).loginPassword('legacy', 'legacypw')).status, 200, 'and still works');

  // Field recovery on the running daemon.
  const p1 = runCli(['passwd', '--config', d.configFile, 'admin'], { input: 'recovered1\n' });
  t.equal(p1.status, 0, p1.stderr);
  t.match(p1.stdout, /password of admin set/);
  const r1 = await new Browser(d).loginPassword('admin', 'recovered1');
  t.equal(r1.status, 200, 'the running daemon picks the new password up');
  t.equal(r1.body, '{"passwordChangeNeeded":true}', 'flag kept without --clear-change-flag');
  t.equal((await new Browser(d).loginPassword('admin', 'admin')).status, 401);
  const p2 = runCli(['passwd', '--config', d.configFile, '--clear-change-flag', 'admin'], { input: 'recovered2' });
  t.equal(p2.status, 0, p2.stderr);
  t.equal((await new Browser(d).loginPassword('admin', 'recovered2')).body, '{"passwordChangeNeeded":false}');
  const p3 = runCli(['passwd', '--config', d.configFile, 'nobody'], { input: 'whatever123\n' });
  t.equal(p3.status, 1);
  t.match(p3.stderr, /no identity named nobody/);
  const p4 = runCli(['passwd', '--config', d.configFile, 'admin'], { input: 'short\n' });
  t.equal(p4.status, 1);
  t.match(p4.stderr, /Password length must be at least 8 characters/);
  const p5 = runCli(['passwd', '--config', d.configFile, 'admin'], { input: '' });
  t.equal(p5.status, 1);
  t.equal(runCli(['passwd', '--config', d.configFile]).status, 64, 'usage');

  // Restart on the same dataDir with different seeds: the store is the truth.
  const admin = basic(d, 'admin', 'recovered2');
  t.equal((await admin.request(`/services/identity/v1/identities`, { method: 'POST', body: { userName: 'made', password: 'madepass1', permissions: [] } })).status, 200);
  t.equal(await d.stop(), 0);
  const cfg2 = { ...config, identities: { admin: { password: 'factory', permissions: ['kura.admin'] } } };
  const d2 = await startDaemon(t, cfg2, { dir });
  t.equal((await new Browser(d2).loginPassword('made', 'madepass1')).status, 200, 'REST-created identity survived the restart');
  t.equal((await new Browser(d2).loginPassword('admin', 'recovered2')).status, 200, 'seeds are not re-applied');
  t.equal((await new Browser(d2).loginPassword('admin', 'factory')).status, 401);
  t.ok(d.logs.concat(d2.logs).every((l) => !/recovered|legacypw|madepass1|JSESSIONID=/.test(l)), 'no password or cookie logged');
  await d2.stop();
});

t.test('passwd on a device that never started seeds the store first', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-passwd-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const f = path.join(dir, 'c.json');
  fs.writeFileSync(f, JSON.stringify({ dataDir: path.join(dir, 'data'), identities: { admin: { password: 'admin', permissions: ['kura.admin'], passwordChangeNeeded: true }, op: { password: 'oppass' } } }));
  const r = runCli(['passwd', '--config', f, '--clear-change-flag', 'admin'], { input: 'brandnew1\n' });
  t.equal(r.status, 0, r.stderr);
  const stored = JSON.parse(fs.readFileSync(path.join(dir, 'data', 'identities.json'), 'utf8'));
  t.same(stored.identities.map((i: { name: string }) => i.name), ['admin', 'op']);
  t.equal(stored.identities[0].passwordChangeNeeded, false);
});

t.test('an unreadable or newer identity store stops the daemon instead of re-seeding factory passwords', async (t) => {
  for (const [name, content, why] of [
    ['garbage', '{"formatVersion": 1, "identities": [', /identity store .* is unreadable/],
    ['newer format', '{"formatVersion": 2, "identities": []}', /unknown format \(expected formatVersion 1\)/],
  ] as const) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-badstore-'));
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    fs.mkdirSync(path.join(dir, 'data'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'data', 'identities.json'), content);
    const d = await startDaemon(t, {}, { dir, noWait: true });
    t.equal(await d.exited, 1, name);
    t.ok(d.logs.some((l) => why.test(l)), `${name}: says why`);
    t.equal(fs.readFileSync(path.join(dir, 'data', 'identities.json'), 'utf8'), content, `${name}: file left alone`);
  }
});

t.test('an identity without kura.admin grants only what it holds, nothing that reaches code or identities, and never its own permissions', async (t) => {
  const d = await startDaemon(t, {
    rest: { 'login.throttle.max.delay': 0 },
    identities: {
      root: { password: 'rootpass1', permissions: ['kura.admin'] },
      mgr: { password: 'mgrpass12', permissions: ['rest.identity', 'rest.assets'] },
      deployer: { password: 'deploypw1', permissions: ['rest.deploy'] },
      op: { password: 'operpass1', permissions: ['rest.assets'] },
    },
  });
  const mgr = basic(d, 'mgr', 'mgrpass12');
  const root = basic(d, 'root', 'rootpass1');
  const send = (c: ReturnType<typeof basic>, method: string, body: object) => c.request(`${I}/identities`, { method, body });
  const refused = async (label: string, r: Promise<{ status: number; body: string }>, message: string) => {
    const a = await r;
    t.equal(a.status, 403, `${label}: 403`);
    t.equal(a.body, JSON.stringify({ message }), `${label}: says which permission`);
  };
  const permissionsOf = async (name: string) => (await root.request(`${I}/identities/byName`, { method: 'POST', body: { userName: name } })).json().permissions;

  // The escalation seen: rest.identity grants itself rest.deploy, then installs a plug-in.
  await refused('granting itself rest.deploy', send(mgr, 'PUT', { userName: 'mgr', permissions: ['rest.identity', 'rest.assets', 'rest.deploy'] }), 'granting rest.deploy needs kura.admin');
  t.equal((await mgr.request('/services/deploy/v2/')).status, 403, 'and deploy/v2 stays closed to it');
  for (const p of ['rest.deploy', 'rest.configuration', 'rest.identity', 'kura.admin']) {
    await refused(`a new identity with ${p}`, send(mgr, 'POST', { userName: `new-${p}`, password: 'newpass12', permissions: ['rest.assets', p] }), `granting ${p} needs kura.admin`);
    await refused(`${p} for another identity`, send(mgr, 'PUT', { userName: 'op', permissions: ['rest.assets', p] }), `granting ${p} needs kura.admin`);
  }
  await refused('a permission it does not hold', send(mgr, 'POST', { userName: 'viewer', password: 'viewpass1', permissions: ['rest.system'] }), 'granting rest.system needs rest.system');
  await refused('the same, for an existing identity', send(mgr, 'PUT', { userName: 'op', permissions: ['rest.assets', 'rest.system'] }), 'granting rest.system needs rest.system');
  await refused('dropping one of its own', send(mgr, 'PUT', { userName: 'mgr', permissions: ['rest.identity'] }), 'changing its own permissions needs kura.admin');
  // Taking over an identity that holds more (its password, then logging in as it) is granting too.
  await refused('the password of an identity holding rest.deploy', send(mgr, 'PUT', { userName: 'deployer', password: 'takeover1' }), 'changing an identity with rest.deploy needs rest.deploy');
  await refused('its change flag', send(mgr, 'PUT', { userName: 'deployer', passwordChangeNeeded: true }), 'changing an identity with rest.deploy needs rest.deploy');
  await refused('deleting it', send(mgr, 'DELETE', { userName: 'deployer' }), 'deleting an identity with rest.deploy needs rest.deploy');
  t.equal((await new Browser(d).loginPassword('deployer', 'deploypw1')).status, 200, 'the deployer is untouched');
  t.equal((await new Browser(d).loginPassword('viewer', 'viewpass1')).status, 401, 'nothing refused was created');
  t.same(await permissionsOf('mgr'), ['rest.identity', 'rest.assets'], 'its own permissions unchanged');
  t.same(await permissionsOf('op'), ['rest.assets'], 'the operator unchanged');

  // What it may do: grant what it holds, manage identities holding no more than it does.
  t.equal((await send(mgr, 'POST', { userName: 'tech', password: 'techpass1', permissions: ['rest.assets'] })).status, 200, 'a new identity with a permission it holds');
  t.equal((await send(mgr, 'PUT', { userName: 'mgr', permissions: ['rest.assets', 'rest.identity'], passwordChangeNeeded: false })).status, 200, 'its own identity sent back with the same permissions');
  t.equal((await send(mgr, 'PUT', { userName: 'op', password: 'operpass2' })).status, 200, 'the password of an identity holding no more than it does');
  t.equal((await send(mgr, 'PUT', { userName: 'op', permissions: [] })).status, 200, 'revoking');
  t.equal((await send(mgr, 'DELETE', { userName: 'tech' })).status, 200, 'deleting');

  // kura.admin grants anything; a permission reserved to it stays so when a non-administrator holds it.
  t.equal((await send(root, 'PUT', { userName: 'mgr', permissions: ['rest.identity', 'rest.assets', 'rest.deploy'] })).status, 200, 'kura.admin grants rest.deploy');
  await refused('passing on rest.deploy it now holds', send(mgr, 'PUT', { userName: 'op', permissions: ['rest.deploy'] }), 'granting rest.deploy needs kura.admin');
  t.equal((await send(mgr, 'PUT', { userName: 'deployer', passwordChangeNeeded: true })).status, 200, 'but it may now manage the deployer, who holds nothing it lacks');
  t.equal((await send(root, 'PUT', { userName: 'root', permissions: ['kura.admin', 'rest.assets'] })).status, 200, 'kura.admin changes its own permissions');
});
