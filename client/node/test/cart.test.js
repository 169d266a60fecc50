// SPDX-License-Identifier: Apache-2.0
// Carts: all or nothing, one hold per distinct item, and the failing line
// named; a cart that fails gives back what it took.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { EscrowError } = require('..');
const { TENANT, sql1, createItem, client } = require('./cluster');

function held(item) {
  return sql1(`SELECT sum(held) FROM segments WHERE tenant_id = '${TENANT}' AND item_id = '${item}'`);
}

test('a cart holds every line, summing lines of the same item', async () => {
  await Promise.all([createItem('cart-a', { total: 10 }), createItem('cart-b', { total: 10 })]);
  const c = client();
  const holds = await c.reserveCart({ buyer: 'b1', key: 'cart-1',
    lines: [{ item: 'cart-a', qty: 2 }, { item: 'cart-b' }, { item: 'cart-a', qty: 1 }] });
  assert.deepEqual(holds.map((h) => [h.item, h.qty, h.state]),
    [['cart-a', 3, 'held'], ['cart-b', 1, 'held']]);
  // The same cart key again: the same holds.
  const again = await c.reserveCart({ buyer: 'b1', key: 'cart-1',
    lines: [{ item: 'cart-a', qty: 2 }, { item: 'cart-b' }, { item: 'cart-a', qty: 1 }] });
  assert.deepEqual(again.map((h) => h.holdId), holds.map((h) => h.holdId));
  assert.equal(held('cart-a'), '3');
  assert.equal(held('cart-b'), '1');
  for (const h of holds) {
    assert.equal((await c.confirm(h)).state, 'converted');
  }
  // Sold: the cart key is spent; the same key again is CART_ENDED, and the
  // sale stands.
  const ended = await c.reserveCart({ buyer: 'b1', key: 'cart-1',
    lines: [{ item: 'cart-a', qty: 2 }, { item: 'cart-b' }, { item: 'cart-a', qty: 1 }] })
    .catch((e) => e);
  assert.ok(ended instanceof EscrowError, String(ended));
  assert.equal(ended.code, 'CART_ENDED');
  assert.equal(ended.errno, -30);
  for (const h of holds) {
    assert.equal((await c.get(h)).state, 'converted');
  }
  await c.close();
});

test('a line that cannot be had fails the cart, names the line, and releases the rest', async () => {
  await Promise.all([createItem('cart-c', { total: 10 }), createItem('cart-d', { total: 1 })]);
  const c = client();
  const err = await c.reserveCart({ buyer: 'b2', key: 'cart-2',
    lines: [{ item: 'cart-c', qty: 4 }, { item: 'cart-d', qty: 2 }] }).catch((e) => e);
  assert.ok(err instanceof EscrowError, String(err));
  assert.equal(err.failedLine, 1);
  assert.ok(['SOLD_OUT', 'TRY_LATER'].includes(err.code), err.code);
  assert.equal(held('cart-c'), '0', 'the hold on cart-c was released');
  assert.equal(sql1(`SELECT state FROM holds WHERE tenant_id = '${TENANT}'
    AND idempotency_key = 'cart-2/cart-c'`), 'cancelled');
  await c.close();
});
