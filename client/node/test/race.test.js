// SPDX-License-Identifier: Apache-2.0
// The flash sale from one Node process: 5,000 buyers as 5,000 promises in
// flight at once on one client, for 1,000 units in 8 segments on 2 nodes.
// Each buyer reserves (TRY_LATER: again with the same key after a short
// wait, since units held by others can come back; TIMEDOUT: again at
// once), then confirms. Exactly
// the stock is sold: counted from the answers and read back from
// PostgreSQL, hold by hold.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { EscrowError } = require('..');
const { TENANT, sql, sqlWithRows, createItem, client, sleep } = require('./cluster');

const STOCK = 1000;
const BUYERS = 5000;
const SEGMENTS = 8;

// fn() again after TIMEDOUT (outcome unknown: the same call, the same key,
// is the answer), as checkout code does; a loaded machine can take longer
// than a deadline.
async function again(fn, tally) {
  for (let n = 0; ; n++) {
    try {
      return await fn();
    } catch (err) {
      if (err.code !== 'TIMEDOUT' || n >= 20) {
        throw err;
      }
      tally.timedOut++;
    }
  }
}

async function buyer(c, i, tally) {
  const key = `race-${i}`;
  for (let attempt = 0; ; attempt++) {
    try {
      const hold = await again(() => c.reserve({ item: 'race', buyer: `buyer-${i}`, qty: 1, key }),
        tally);
      const sold = await again(() => c.confirm(hold.holdId), tally);
      assert.equal(sold.state, 'converted');
      tally.sold.push(sold.holdId);
      return;
    } catch (err) {
      if (!(err instanceof EscrowError)) {
        throw err;
      }
      if (err.code === 'SOLD_OUT') {
        tally.soldOut++;
        return;
      }
      if (err.code !== 'TRY_LATER' || attempt >= 1000) {
        throw err;
      }
      tally.tryLater++;
      await sleep(20 + (i % 30));
    }
  }
}

test('5,000 concurrent promises sell exactly the stock', async (t) => {
  await createItem('race', { total: STOCK, segments: SEGMENTS });
  const c = client();
  const tally = { sold: [], soldOut: 0, tryLater: 0, timedOut: 0 };
  const buyers = [];
  for (let i = 0; i < BUYERS; i++) {
    buyers.push(buyer(c, i, tally));
  }
  await Promise.all(buyers);
  await c.close();
  t.diagnostic(`retries: ${tally.tryLater} after TRY_LATER, ${tally.timedOut} after TIMEDOUT`);

  assert.equal(tally.sold.length, STOCK, 'holds confirmed');
  assert.equal(tally.soldOut, BUYERS - STOCK, 'buyers told SOLD_OUT');
  assert.equal(new Set(tally.sold.map(String)).size, STOCK, 'distinct hold ids');
  assert.ok(tally.sold.some((id) => id > BigInt(Number.MAX_SAFE_INTEGER)), 'hold ids above 2^53');

  const [[sold, held, available]] = sql(`SELECT sum(sold), sum(held), sum(available)
    FROM segments WHERE tenant_id = '${TENANT}' AND item_id = 'race'`);
  assert.deepEqual([sold, held, available], [String(STOCK), '0', '0'], 'sold held available');
  // Every acknowledged hold is a converted hold in the database, and no other.
  const [[matched, converted]] = sqlWithRows(tally.sold.map(String), `SELECT
    (SELECT count(*) FROM holds h JOIN v ON h.hold_id = v.v::numeric
      WHERE h.state = 'converted' AND h.item_id = 'race'),
    (SELECT count(*) FROM holds WHERE item_id = 'race' AND state = 'converted')`);
  assert.deepEqual([matched, converted], [String(STOCK), String(STOCK)]);
});
