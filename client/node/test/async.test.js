// SPDX-License-Identifier: Apache-2.0
// Each call is an async resource of its own (async_hooks type
// 'escrow.reserve', ...): created when the call is made, entered once when
// its answer settles the promise (the callback scope that also runs what
// awaited it), destroyed after. AsyncLocalStorage follows a call.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { createHook, AsyncLocalStorage } = require('node:async_hooks');
const { createItem, client } = require('./cluster');

test('a call is an async resource: init, before, after, destroy, once each', async () => {
  await createItem('async', { total: 100 });
  const c = client();
  const events = new Map(); // asyncId -> [event...]
  const hook = createHook({
    init(id, type) {
      if (type.startsWith('escrow.')) {
        events.set(id, [type]);
      }
    },
    before(id) { events.get(id)?.push('before'); },
    after(id) { events.get(id)?.push('after'); },
    destroy(id) { events.get(id)?.push('destroy'); },
  }).enable();
  const h = await c.reserve({ item: 'async', buyer: 'b1', key: 'async-1' });
  await c.confirm(h);
  await c.close();
  await new Promise((r) => setImmediate(r)); // destroy hooks are emitted asynchronously
  hook.disable();
  assert.deepEqual([...events.values()], [
    ['escrow.reserve', 'before', 'after', 'destroy'],
    ['escrow.confirm', 'before', 'after', 'destroy'],
    ['escrow.close', 'before', 'after', 'destroy'],
  ]);
});

test('AsyncLocalStorage follows a call to its answer', async () => {
  const c = client();
  const als = new AsyncLocalStorage();
  const seen = await Promise.all([1, 2, 3].map((n) => als.run({ n }, () =>
    c.reserve({ item: 'async', buyer: `b${n}`, key: `als-${n}` }).then(() => als.getStore().n))));
  assert.deepEqual(seen, [1, 2, 3]);
  await c.close();
});
