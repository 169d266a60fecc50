// SPDX-License-Identifier: Apache-2.0
// The error mapping: each answer arrives as an EscrowError with its code
// name and number, made by the situation that gives that answer in a real
// cluster; a NOT_HELD answer carries the hold's final state.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { Client, EscrowError, codes } = require('..');
const { TENANT, ctl, createItem, client, waitFor } = require('./cluster');

// The promise's rejection, which must be an EscrowError with this code.
async function rejectsWith(promise, code) {
  const err = await promise.then(
    (v) => assert.fail(`expected ${code}, got ${JSON.stringify(v, (k, x) =>
      typeof x === 'bigint' ? String(x) : x)}`),
    (e) => e);
  assert.ok(err instanceof EscrowError, `an EscrowError, not ${err}`);
  assert.equal(err.code, code);
  assert.equal(err.errno, codes[code]);
  assert.ok(err.errno < 0);
  assert.match(err.message, /\w/);
  return err;
}

let c;
test.before(async () => {
  c = client();
  await Promise.all([
    createItem('err-one', { total: 1 }),
    createItem('err-held', { total: 1 }),
    createItem('err-limits', { total: 100, maxPerOrder: 2, maxPerBuyer: 3 }),
    createItem('err-holds', { total: 100 }),
    createItem('err-paused', { total: 10 }),
  ]);
});
test.after(() => c.close());

test('codes mirrors libescrow: SOLD_OUT is -1, TIMEDOUT -20, CART_ENDED -30', () => {
  assert.equal(codes.SOLD_OUT, -1);
  assert.equal(codes.TRY_LATER, -2);
  assert.equal(codes.TIMEDOUT, -20);
  assert.equal(codes.AUTH, -28);
  assert.equal(codes.CART_ENDED, -30);
});

test('SOLD_OUT: the last unit was sold', async () => {
  const h = await c.reserve({ item: 'err-one', buyer: 'b1', key: 'one-1' });
  await c.confirm(h);
  // Until the cluster has heard that the item is sold out (the node tells
  // the coordinator, which tells the client's route), the answer can be
  // TRY_LATER; it is never a hold. Retried with the same key, as a shop would.
  await waitFor('SOLD_OUT', () => c.reserve({ item: 'err-one', buyer: 'b2', key: 'one-2' })
    .then((x) => assert.fail(`a second unit was sold: ${x.holdId}`), (e) => {
      if (e.code === 'SOLD_OUT') {
        return true;
      }
      assert.equal(e.code, 'TRY_LATER');
      return false;
    }));
  await rejectsWith(c.reserve({ item: 'err-one', buyer: 'b3', key: 'one-3' }), 'SOLD_OUT');
});

test('TRY_LATER: the last unit is held by someone else', async () => {
  await c.reserve({ item: 'err-held', buyer: 'b1', key: 'held-1' });
  await rejectsWith(c.reserve({ item: 'err-held', buyer: 'b2', key: 'held-2' }), 'TRY_LATER');
});

test('ORDER_LIMIT and BUYER_LIMIT: the item\'s maximums', async () => {
  await rejectsWith(c.reserve({ item: 'err-limits', buyer: 'b1', qty: 3, key: 'lim-1' }),
    'ORDER_LIMIT');
  await c.reserve({ item: 'err-limits', buyer: 'b2', qty: 2, key: 'lim-2' });
  await rejectsWith(c.reserve({ item: 'err-limits', buyer: 'b2', qty: 2, key: 'lim-3' }),
    'BUYER_LIMIT');
});

test('IDEMPOTENCY_MISMATCH: a key used again with another quantity', async () => {
  await c.reserve({ item: 'err-holds', buyer: 'b1', qty: 1, key: 'mm-1' });
  await rejectsWith(c.reserve({ item: 'err-holds', buyer: 'b1', qty: 2, key: 'mm-1' }),
    'IDEMPOTENCY_MISMATCH');
});

test('NOT_HELD with the final state; ALREADY_EXTENDED; NOT_FOUND', async () => {
  const h = await c.reserve({ item: 'err-holds', buyer: 'b3', key: 'nh-1' });
  const released = await c.release(h);
  assert.equal(released.state, 'cancelled');
  const err = await rejectsWith(c.confirm(h), 'NOT_HELD');
  assert.equal(err.hold.holdId, h.holdId);
  assert.equal(err.hold.state, 'cancelled');

  const h2 = await c.reserve({ item: 'err-holds', buyer: 'b4', key: 'ext-1' });
  const extended = await c.extend(h2, { ttlMs: 60000 });
  assert.equal(extended.extended, true);
  await rejectsWith(c.extend(h2), 'ALREADY_EXTENDED');

  // The same segment (the high bits), a sequence number never handed out.
  const nobody = (h2.holdId >> 40n << 40n) | ((1n << 40n) - 2n);
  await rejectsWith(c.get(nobody), 'NOT_FOUND');
});

test('EXPIRED: confirm after the hold\'s ttl', async () => {
  const h = await c.reserve({ item: 'err-holds', buyer: 'b5', key: 'exp-1', ttlMs: 100 });
  await waitFor('the hold\'s expiry time', () => Date.now() > h.expiresAtMs + 200);
  await rejectsWith(c.confirm(h), 'EXPIRED');
});

test('PAUSED: the operator paused the item', async () => {
  ctl('item', 'pause', TENANT, 'err-paused');
  // The client learns it from the route push or its next route fetch.
  let n = 0;
  await waitFor('PAUSED', () => c.reserve({ item: 'err-paused', buyer: 'b1', key: `p-${n++}` })
    .then(() => false, (e) => {
      if (e.code === 'PAUSED') {
        return true;
      }
      throw e;
    }));
  await rejectsWith(c.reserve({ item: 'err-paused', buyer: 'b1', key: 'p-last' }), 'PAUSED');
  ctl('item', 'resume', TENANT, 'err-paused');
});

test('UNKNOWN_ITEM', async () => {
  await rejectsWith(c.reserve({ item: 'no-such-item', buyer: 'b1', key: 'u-1' }), 'UNKNOWN_ITEM');
});

test('TIMEDOUT: nobody answers within the deadline', async () => {
  // A coordinator address where nothing listens (a port we hold closed).
  const net = require('node:net');
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const port = srv.address().port;
  await new Promise((r) => srv.close(r));
  const lonely = new Client({ coordinator: `tcp://127.0.0.1:${port}`, tenant: TENANT });
  await rejectsWith(lonely.reserve({ item: 'x', buyer: 'b', key: 'k', deadlineMs: 300 }),
    'TIMEDOUT');
  await lonely.close();
});

test('INVAL: what libescrow refuses, before anything is sent', async () => {
  await rejectsWith(c.reserve({ item: 'x'.repeat(129), buyer: 'b', key: 'k' }), 'INVAL');
  await rejectsWith(c.reserve({ item: 'err-holds', buyer: 'b', key: 'bad key\n' }), 'INVAL');
  await rejectsWith(c.reserve({ item: 'err-holds', buyer: 'b', key: 'k', qty: 0 }), 'INVAL');
  await rejectsWith(c.get(1n << 64n), 'INVAL');
  assert.throws(() => new Client({ tenant: TENANT }), (e) => e.code === 'INVAL');
  assert.throws(() => new Client({ coordinator: 'tcp://127.0.0.1:1', endpoint: 'tcp://127.0.0.1:2',
    tenant: TENANT }), (e) => e.code === 'INVAL');
});

test('TypeError for values of the wrong type, as a rejection', async () => {
  await assert.rejects(c.reserve({ item: 1, buyer: 'b', key: 'k' }), TypeError);
  await assert.rejects(c.reserve({ item: 'i', buyer: 'b', key: 'k', qty: 1.5 }), TypeError);
  await assert.rejects(c.confirm(123), TypeError); // a number cannot hold a hold id
  await assert.rejects(c.confirm('12x'), TypeError);
  await assert.rejects(c.reserveCart({ buyer: 'b', key: 'k' }), TypeError);
  assert.throws(() => new Client({ coordinator: 'tcp://127.0.0.1:1' }), TypeError);
});

test('CLOSED: calls pending at close() and calls after it', async () => {
  const d = client();
  const pending = d.reserve({ item: 'err-holds', buyer: 'b6', key: 'cl-1' });
  const closing = d.close();
  assert.equal(d.close(), closing, 'close() is idempotent');
  // close() stops the sockets at once: no answer can reach the pending call.
  await rejectsWith(pending, 'CLOSED');
  await closing;
  await rejectsWith(d.reserve({ item: 'err-holds', buyer: 'b6', key: 'cl-2' }), 'CLOSED');
  await rejectsWith(d.get(1n), 'CLOSED');
});
