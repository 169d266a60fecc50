// SPDX-License-Identifier: Apache-2.0
// A client's life: close() and collection leave no native client and no
// call behind; an idle client does not keep the process alive; a worker
// thread torn down with calls in flight, and a process that exits with
// calls in flight, end cleanly. (live() counts native clients not yet
// closed and calls not yet settled, per thread.)
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const native = require('../lib/native');
const { createItem, client, waitFor } = require('./cluster');

const pkg = path.resolve(__dirname, '..');

// Runs script in a fresh node (with args), inside the package; returns
// what it printed. It must exit 0 by itself (timeout: a bound on a hang).
function child(script, args = []) {
  const r = spawnSync(process.execPath, [...args, '-e', script], { cwd: pkg, encoding: 'utf8',
    timeout: 120000, env: process.env });
  assert.equal(r.signal, null, `killed by ${r.signal}: ${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

test('close() settles everything and frees the native client', async () => {
  await createItem('life', { total: 100000, segments: 2 });
  const before = native.live();
  const c = client();
  assert.equal(native.live().clients, before.clients + 1);
  const calls = Array.from({ length: 500 }, (_, i) =>
    c.reserve({ item: 'life', buyer: `b${i}`, key: `life-${i}` }).then((h) => c.release(h)));
  await Promise.all(calls);
  assert.equal(native.live().calls, before.calls, 'no call left once all settled');
  await c.close();
  assert.deepEqual(native.live(), before);
});

test('a client dropped without close() is collected and closed', () => {
  const out = child(`
    const { Client } = require('.');
    const native = require('./lib/native');
    // One answered call, then the client is dropped (a function of its
    // own: no variable of the loop below keeps the last one alive).
    async function use() {
      const c = new Client({ coordinator: process.env.ESCROW_COORDINATOR,
        tenant: 'shop-node', deadlineMs: 30000 });
      await c.get((5000000n << 40n) | 1n).catch(() => {});
    }
    (async () => {
      for (let i = 0; i < 20; i++) {
        await use();
      }
      for (let n = 0; n < 600 && native.live().clients > 0; n++) {
        global.gc();
        await new Promise((r) => setTimeout(r, 100));
      }
      console.log(JSON.stringify(native.live()));
    })();`, ['--expose-gc']);
  assert.equal(out, '{"clients":0,"calls":0}', 'every one of 20 dropped clients closed');
});

test('an idle, unclosed client does not keep the process alive', () => {
  const out = child(`
    const { Client } = require('.');
    const c = new Client({ coordinator: process.env.ESCROW_COORDINATOR,
      routes: process.env.ESC_CLUSTER_PUBLISH, tenant: 'shop-node', deadlineMs: 30000 });
    c.reserve({ item: 'life', buyer: 'idle', key: 'idle-1' })
      .then((h) => console.log(h.state));`);
  assert.equal(out, 'held');
});

test('a worker torn down, and a process exiting, with calls in flight', () => {
  // Nothing answers at this coordinator: the calls stay in flight until
  // their 60 s deadline, far beyond the end of the worker and the process.
  const out = child(`
    const { Worker } = require('node:worker_threads');
    const body = \`
      const { parentPort } = require('node:worker_threads');
      const { Client } = require(${JSON.stringify(pkg)});
      const c = new Client({ coordinator: 'tcp://127.0.0.1:9', tenant: 't', deadlineMs: 60000 });
      for (let i = 0; i < 100; i++) c.reserve({ item: 'i', buyer: 'b', key: 'k' + i }).catch(() => {});
      parentPort.postMessage('in flight');\`;
    const w = new Worker(body, { eval: true });
    w.once('message', async () => {
      await w.terminate();
      const { Client } = require('.');
      const c = new Client({ coordinator: 'tcp://127.0.0.1:9', tenant: 't', deadlineMs: 60000 });
      c.reserve({ item: 'i', buyer: 'b', key: 'k' }).catch(() => {});
      console.log('exiting');
      process.exit(0);
    });`);
  assert.equal(out, 'exiting');
});

test('many clients opened and closed leave nothing behind', async () => {
  const before = native.live();
  for (let i = 0; i < 50; i++) {
    const c = client();
    const p = c.get((5000000n << 40n) | 1n).catch((e) => e.code);
    await c.close();
    assert.equal(await p, 'CLOSED');
  }
  await waitFor('every client closed', () => native.live().clients === before.clients);
  assert.deepEqual(native.live(), before);
});
