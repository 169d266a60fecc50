// SPDX-License-Identifier: Apache-2.0
// Hold ids are BigInt: here every segment id is above 5,000,000 (node.sh),
// so every hold id is above 2^53, where a JavaScript number would round it.
// A hold id goes back in as the BigInt, its decimal string or the Hold.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { TENANT, sql1, createItem, client } = require('./cluster');

test('hold ids above 2^53 survive the round trip, in every form', async () => {
  await createItem('ids', { total: 10 });
  const c = client();
  const h = await c.reserve({ item: 'ids', buyer: 'b1', qty: 2, key: 'ids-1' });
  assert.equal(typeof h.holdId, 'bigint');
  assert.ok(h.holdId > BigInt(Number.MAX_SAFE_INTEGER), String(h.holdId));
  assert.equal(h.segmentId, h.holdId >> 40n);
  assert.equal(String(h.holdId), sql1(`SELECT hold_id FROM holds WHERE tenant_id = '${TENANT}'
    AND idempotency_key = 'ids-1'`), 'the id PostgreSQL has, digit for digit');
  assert.deepEqual(Object.keys(h).sort(), ['buyer', 'expiresAtMs', 'extended', 'holdId', 'item',
    'qty', 'qtySold', 'segmentId', 'state'].sort());
  assert.equal(h.item, 'ids');
  assert.equal(h.buyer, 'b1');
  assert.equal(h.qty, 2);
  assert.equal(h.qtySold, 0);
  assert.ok(h.expiresAtMs > Date.now());

  assert.equal((await c.get(String(h.holdId))).holdId, h.holdId, 'decimal string');
  assert.equal((await c.get(h)).holdId, h.holdId, 'the Hold');
  const part = await c.confirm(h.holdId, { qty: 1 });
  assert.equal(part.state, 'converted');
  assert.equal(part.qtySold, 1, 'a partial confirm sells 1 of 2');
  assert.equal(sql1(`SELECT sum(sold) || ' ' || sum(held) || ' ' || sum(available)
    FROM segments WHERE tenant_id = '${TENANT}' AND item_id = 'ids'`), '1 0 9');
  await c.close();
});
