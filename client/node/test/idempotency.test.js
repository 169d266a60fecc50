// SPDX-License-Identifier: Apache-2.0
// Idempotency: a key names one checkout. The same key again, one after the
// other or many times at once, gets the same hold and takes the units once;
// a cart retried with its key gets the same holds.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { TENANT, sql1, createItem, client } = require('./cluster');

test('the same key gives the same hold, sequentially and 200 times at once', async () => {
  await createItem('idem', { total: 50, segments: 2 });
  const c = client();
  const first = await c.reserve({ item: 'idem', buyer: 'b1', qty: 2, key: 'order-1' });
  const again = await c.reserve({ item: 'idem', buyer: 'b1', qty: 2, key: 'order-1' });
  assert.equal(again.holdId, first.holdId);
  assert.equal(again.qty, 2);

  const many = await Promise.all(Array.from({ length: 200 }, () =>
    c.reserve({ item: 'idem', buyer: 'b2', qty: 1, key: 'order-2' })));
  const ids = new Set(many.map((h) => h.holdId));
  assert.equal(ids.size, 1, 'one hold for 200 concurrent calls with one key');

  // A second client (another process would do the same) gets it too.
  const d = client();
  const fromD = await d.reserve({ item: 'idem', buyer: 'b2', qty: 1, key: 'order-2' });
  assert.equal(fromD.holdId, many[0].holdId);
  await Promise.all([c.close(), d.close()]);

  assert.equal(sql1(`SELECT count(*) FROM holds WHERE tenant_id = '${TENANT}'
    AND idempotency_key IN ('order-1', 'order-2')`), '2', 'holds in the database');
  assert.equal(sql1(`SELECT sum(held) FROM segments WHERE tenant_id = '${TENANT}'
    AND item_id = 'idem'`), '3', 'units held: 2 + 1');
});

test('confirm retried returns the same converted hold', async () => {
  await createItem('idem-confirm', { total: 5 });
  const c = client();
  const h = await c.reserve({ item: 'idem-confirm', buyer: 'b1', key: 'c-1' });
  const sold = await c.confirm(h);
  const again = await c.confirm(h); // a confirm whose answer was lost, retried
  const got = await c.get(h.holdId);
  for (const x of [sold, again, got]) {
    assert.equal(x.holdId, h.holdId);
    assert.equal(x.state, 'converted');
    assert.equal(x.qtySold, 1);
  }
  await c.close();
  assert.equal(sql1(`SELECT sum(sold) FROM segments WHERE tenant_id = '${TENANT}'
    AND item_id = 'idem-confirm'`), '1', 'sold once');
});
