#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// bench.js - the Node side of the bindings benchmark
// (tests/support/bench_node.sh): escrow-load's sale from one Node process.
// Buyers 0..N-1 run `concurrency` at a time; each reserves one unit (key
// and buyer "<prefix>-<i>") and confirms it, as escrow-load --confirm 1
// --release 0 does. TRY_LATER is retried with the same key after 20-50 ms.
// Prints one line:
//   RESULT holds_ok=.. holds_per_s=.. p50_ms=.. p99_ms=.. run_s=.. sold_out=.. errors=..
// where holds_per_s is holds_ok over the whole run (reserves and
// confirms), escrow-load's definition.
//
// usage: bench.js --coordinator URL [--routes URL] --tenant T --item I
//                 [--buyers N] [--concurrency C] [--key-prefix P] [--deadline-ms MS]
'use strict';

const { parseArgs } = require('node:util');
const { setTimeout: sleep } = require('node:timers/promises');
const { Client } = require('..');

const { values: o } = parseArgs({ options: {
  coordinator: { type: 'string' }, routes: { type: 'string' }, tenant: { type: 'string' },
  item: { type: 'string' }, buyers: { type: 'string', default: '50000' },
  concurrency: { type: 'string', default: '512' }, 'key-prefix': { type: 'string', default: 'nb' },
  'deadline-ms': { type: 'string', default: '30000' },
} });
if (!o.coordinator || !o.tenant || !o.item) {
  console.error('usage: bench.js --coordinator URL [--routes URL] --tenant T --item I ' +
    '[--buyers N] [--concurrency C] [--key-prefix P] [--deadline-ms MS]');
  process.exit(2);
}
const buyers = Number(o.buyers);
const concurrency = Number(o.concurrency);
const prefix = o['key-prefix'];

const client = new Client({ coordinator: o.coordinator, routes: o.routes, tenant: o.tenant,
  deadlineMs: Number(o['deadline-ms']) });
const st = { ok: 0, soldOut: 0, errors: 0, lat: [] };
let next = 0;

async function one(i) {
  const key = `${prefix}-${i}`;
  for (;;) {
    const t0 = process.hrtime.bigint();
    try {
      const hold = await client.reserve({ item: o.item, buyer: key, key });
      st.lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
      st.ok++;
      await client.confirm(hold.holdId);
      return;
    } catch (err) {
      if (err.code === 'TRY_LATER') {
        await sleep(20 + (i % 31));
        continue;
      }
      if (err.code === 'SOLD_OUT') {
        st.soldOut++;
      } else {
        st.errors++;
      }
      return;
    }
  }
}

async function worker() {
  while (next < buyers) {
    await one(next++);
  }
}

(async () => {
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.min(concurrency, buyers) }, worker));
  const runS = Number(process.hrtime.bigint() - t0) / 1e9;
  await client.close();
  st.lat.sort((a, b) => a - b);
  const q = (p) => (st.lat.length ? st.lat[Math.min(st.lat.length - 1,
    Math.floor(p * st.lat.length))] : 0).toFixed(1);
  console.log(`RESULT holds_ok=${st.ok} holds_per_s=${(st.ok / runS).toFixed(0)} ` +
    `p50_ms=${q(0.5)} p99_ms=${q(0.99)} run_s=${runS.toFixed(2)} sold_out=${st.soldOut} ` +
    `errors=${st.errors}`);
})();
