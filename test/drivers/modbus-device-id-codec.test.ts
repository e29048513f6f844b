// Read Device Identification in the PDU codec (Modbus Application Protocol §6.21, function 43 /
// MEI type 14): request and response as (object, bytes) fixtures, the implied length an RTU
// receiver needs (undefined until the last object is in), and garbage refused without a throw.
import t from 'tap';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, pduLength } from '../../src/drivers/modbus/pdu.js';

const response = {
  fc: 43 as const, readCode: 1, conformity: 0x83, moreFollows: true, nextObjectId: 2,
  objects: [{ id: 0, value: Buffer.from('Acme') }, { id: 1, value: Buffer.from('P7') }],
};
const responseBytes = Buffer.from([43, 14, 1, 0x83, 0xff, 2, 2, 0, 4, ...Buffer.from('Acme'), 1, 2, ...Buffer.from('P7')]);

t.test('request: encode, decode, length', async (t) => {
  const bytes = encodeRequest({ fc: 43, readCode: 2, objectId: 3 });
  t.same([...bytes], [43, 14, 2, 3]);
  t.same(decodeRequest(bytes), { fc: 43, readCode: 2, objectId: 3 });
  t.equal(pduLength(bytes, 'request'), 4);
  t.equal(pduLength(Buffer.from([43, 13, 0, 0]), 'request'), -1, 'another MEI type is not spoken');
});

t.test('response: encode, decode, implied length', async (t) => {
  t.same(encodeResponse(response), responseBytes);
  t.same(decodeResponse(responseBytes), response);
  t.equal(pduLength(responseBytes, 'response'), responseBytes.length);
  // The length is known once the last object's length byte is in (byte 15 of 17).
  for (let n = 1; n < responseBytes.length; n++) t.equal(pduLength(responseBytes.subarray(0, n), 'response'), n < 15 ? undefined : responseBytes.length, `${n} bytes`);
  t.match(decodeResponse(Buffer.concat([responseBytes, Buffer.from([0])])), { error: /expected/ }, 'a byte too many');
  t.same(decodeResponse(Buffer.from([0xab, 1])), { fc: 43, exception: 1 }, 'exception 1: no function 43');
  for (let i = 0; i < 2000; i++) {
    const junk = Buffer.from([43, 14, ...Array.from({ length: Math.floor(Math.random() * 40) }, () => Math.floor(Math.random() * 256))]);
    const r = decodeResponse(junk);
    if (!('error' in r) && !('objects' in r)) t.fail('garbage decoded as something else');
  }
  t.pass('garbage never throws');
});
