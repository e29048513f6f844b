// Marketplace descriptor rules as tables: URL checks (Kura's order and messages), the version
// transformation, the compatibility rule, the XML reader's edges, and the deploy config section.

import t from 'tap';
import { DescriptorRequestError, compatibilityVersion, descriptorApiUrl, descriptorFromXml, isCompatible, nodeIdOf } from '../../src/deploy/descriptor.js';
import { parseXml, textContent } from '../../src/core/xml.js';
import { validateDeploySection } from '../../src/deploy/config.js';

const MP = 'https://marketplace.eclipse.org/marketplace-client-intro?mpc_install=';

t.test('node ids', async (t) => {
  const ok: [unknown, string][] = [
    [`${MP}55535`, '55535'],
    [`${MP.replace('https', 'http')}69`, '69'],
    [`${MP}69=`, '69'],
    [`${MP}69==`, '69'],
    ['https://marketplaceXeclipse.org/marketplace-client-intro?mpc_install=7', '7'],
  ];
  for (const [url, id] of ok) t.equal(nodeIdOf(url), id, String(url));
  const bad: [unknown, string][] = [
    [undefined, 'Bad request'],
    [null, 'Bad request'],
    ['', 'Missing URL parameter'],
    [`${MP.replace('eclipse', 'ellipse')}69`, 'The URL passed as argument does not belong to the Eclipse Marketplace'],
    [` ${MP}69`, 'The URL passed as argument does not belong to the Eclipse Marketplace'],
    [`${MP}69\n`, 'The URL passed as argument does not belong to the Eclipse Marketplace'],
    [MP, 'The URL passed as argument does not contain a valid node id'],
    [`${MP}1&a=b`, 'The URL passed as argument does not contain a valid node id'],
    [`${MP}=1`, 'The URL passed as argument does not contain a valid node id'],
  ];
  for (const [url, msg] of bad) t.throws(() => nodeIdOf(url), new DescriptorRequestError(msg), String(url));
  t.equal(descriptorApiUrl('http://h:1/base/', '../x?y'), 'http://h:1/base/node/..%2Fx%3Fy/api/p');
});

t.test('gateway versions as Kura transforms them', async (t) => {
  const cases: [string, string][] = [
    ['5.4.0', '5.4.0'],
    ['5.4', '5.4.0'],
    ['KURA_5.4.0', '5.4.0'],
    ['KURA-5.4.0', '5.4.0'],
    ['5.5.0-SNAPSHOT', '5.5.0.SNAPSHOT'],
    ['not-a-version', 'not.a.version'],
  ];
  for (const [raw, want] of cases) t.equal(compatibilityVersion(raw), want, raw);
});

t.test('compatibility: inclusive bounds, none means false, unparseable means false', async (t) => {
  const cases: [string, string | undefined, string | undefined, boolean][] = [
    ['5.4.0', '5.1.0', '', true],
    ['5.0.0', '5.1.0', '', false],
    ['5.1.0', '5.1.0', '5.1.0', true],
    ['5.4.0', '1.1.0', '5.3.0', false],
    ['5.3.0.beta', '1.1.0', '5.3.0', false],
    ['5.4.0', undefined, undefined, false],
    ['5.4.0', '', '', false],
    ['5.4.0', undefined, '6', true],
    ['x', '1.0.0', undefined, false],
    ['5.4.0', 'garbage', undefined, false],
  ];
  for (const [cur, min, max, want] of cases) t.equal(isCompatible(cur, min, max), want, `${cur} in [${min}, ${max}]`);
});

t.test('descriptor from XML', async (t) => {
  const xml = (compat: string) => `<marketplace><node id="1" url="u"><updateurl>d</updateurl>${compat}</node></marketplace>`;
  t.match(descriptorFromXml(xml('<versioncompatibility><from>5.1.0</from><to></to></versioncompatibility>'), '5.0.0'), { minGatewayVersion: '5.1.0', maxGatewayVersion: '', isCompatible: false });
  t.match(descriptorFromXml(xml('<versioncompatibility><From>5.1.0</From></versioncompatibility>'), '5.4'), { minGatewayVersion: '5.1.0', currentGatewayVersion: '5.4.0', isCompatible: true });
  t.same(Object.keys(descriptorFromXml(xml(''), '5.4.0')), ['nodeId', 'url', 'dpUrl', 'minGatewayVersion', 'maxGatewayVersion', 'currentGatewayVersion', 'isCompatible']);
  t.equal(JSON.stringify(descriptorFromXml(xml(''), '5.4.0')), '{"nodeId":"1","url":"u","dpUrl":"d","currentGatewayVersion":"5.4.0","isCompatible":false}');
  t.throws(() => descriptorFromXml('<marketplace/>', '5.4.0'), /no <updateurl>/);
});

t.test('XML reader', async (t) => {
  const root = parseXml(`<?xml version="1.0"?>\n<!-- c --><a k='v &quot;q&quot;' j="&#65;&#x42;"><b>x<![CDATA[<y>]]>z</b><c/></a>\n`);
  t.same(root.attrs, { k: 'v "q"', j: 'AB' });
  t.equal(textContent(root), 'x<y>z');
  const bad: [string, RegExp][] = [
    ['<!DOCTYPE a><a/>', /DOCTYPE is not allowed/],
    ['<a><b></a>', /unexpected <\/a>/],
    ['<a>', /unclosed <a>/],
    ['<a/><b/>', /more than one root element/],
    ['text', /text outside the root element/],
    ['<a>&bogus;</a>', /undefined entity &bogus;/],
    ['<a x=1/>', /bad attribute/],
    ['', /no root element/],
  ];
  for (const [x, re] of bad) t.throws(() => parseXml(x), re, x);
});

t.test('the deploy config section', async (t) => {
  const d = validateDeploySection(undefined);
  t.same(d.problems, []);
  t.same(d.value, {
    'marketplace.url': 'https://marketplace.eclipse.org', 'gateway.version': '5.4.0', 'upload.max.bytes': 67108864,
    'download.timeout': 60000, 'download.max.redirects': 5, 'file.allowed.dirs': ['/tmp'], 'trust.anchors': [], 'unsigned.allowed': true, 'download.deadline': 600000,
    'queue.max.jobs': 16, 'queue.max.bytes': 134217728, 'system.packages.database': 'auto',
  });
  const bad = validateDeploySection({
    'marketplace.url': 'ftp://x', 'upload.max.bytes': 0, 'download.timeout': 1.5, 'download.max.redirects': 99,
    'file.allowed.dirs': '/tmp', 'trust.anchors': ['relative.pem', '/nonexistent/key.pem'], typo: 1,
    'queue.max.jobs': 1001, 'queue.max.bytes': 0,
  }, 'deploy');
  t.same(bad.problems.map((p) => [p.path, p.severity]), [
    ['deploy.typo', 'error'],
    ['deploy.marketplace.url', 'error'],
    ['deploy.upload.max.bytes', 'error'],
    ['deploy.download.timeout', 'error'],
    ['deploy.download.max.redirects', 'error'],
    ['deploy.queue.max.jobs', 'error'],
    ['deploy.queue.max.bytes', 'error'],
    ['deploy.file.allowed.dirs', 'error'],
    ['deploy.trust.anchors[0]', 'error'],
    ['deploy.trust.anchors[1]', 'warning'],
  ]);
  t.equal(validateDeploySection({ 'marketplace.url': 'http://h:1/mp/' }).value['marketplace.url'], 'http://h:1/mp', 'trailing slash dropped');
  // The queue's bounds (docs/configuration.md "deploy"): each range's ends, and one past them.
  t.same(validateDeploySection({ 'queue.max.jobs': 1000, 'queue.max.bytes': 1 }).problems, [], 'queue.max.jobs 1000, queue.max.bytes 1');
  t.same(validateDeploySection({ 'queue.max.jobs': 1 }).problems, [], 'queue.max.jobs 1');
  t.match(validateDeploySection({ 'queue.max.jobs': 0, 'queue.max.bytes': 0.5 }).problems.map((p) => [p.path, p.message]), [['deploy.queue.max.jobs', /at least 1/], ['deploy.queue.max.bytes', /integer/]]);
});
