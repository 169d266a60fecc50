// SPDX-License-Identifier: Apache-2.0
// cluster.js - what the tests share: the running cluster they are pointed
// at, escrowctl, PostgreSQL (psql; SQL and bulk data go on stdin), and a
// wait on a condition with a generous deadline (never on the machine's
// speed).
//
// Environment (tests/integration/node.sh sets it from the cluster it
// starts with tests/support/cluster.sh): ESC_BIN (escrowctl),
// ESCROW_COORDINATOR, ESC_CLUSTER_PUBLISH, ESCROW_DSN, ESC_PG_BINDIR (psql).
'use strict';

const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');
const { Client } = require('..');

const env = process.env;
for (const name of ['ESC_BIN', 'ESCROW_COORDINATOR', 'ESC_CLUSTER_PUBLISH', 'ESCROW_DSN']) {
  if (!env[name]) {
    throw new Error(`${name} is not set: run the tests through tests/integration/node.sh`);
  }
}
const TENANT = 'shop-node';
// psql and escrowctl are not instrumented: they run without the sanitizer
// runtime that node.sh preloads into node (psql hangs with it).
const toolEnv = { ...env };
delete toolEnv.LD_PRELOAD;
const psql = path.join(env.ESC_PG_BINDIR || '/usr/lib/postgresql/15/bin', 'psql');

// Rows of a query as arrays of strings; the query travels on stdin.
function sql(query) {
  const out = execFileSync(psql, [env.ESCROW_DSN, '-At', '-X', '-q', '-v', 'ON_ERROR_STOP=1',
    '-F', '\t', '-f', '-'], { input: query, encoding: 'utf8', env: toolEnv });
  return out.split('\n').filter((l) => l !== '').map((l) => l.split('\t'));
}

// One value.
function sql1(query) {
  const rows = sql(query);
  return rows.length === 0 ? null : rows[0][0];
}

// values (one per line) COPYed into the temporary table v(v text), then
// query in the same session: for lists of any length.
function sqlWithRows(values, query) {
  const input = 'CREATE TEMP TABLE v (v text);\nCOPY v (v) FROM STDIN;\n' +
    values.map((x) => `${x}\n`).join('') + '\\.\n' + query + '\n';
  return sql(input);
}

function ctl(...args) {
  return execFileSync(path.join(env.ESC_BIN, 'escrowctl'), args, { encoding: 'utf8',
    env: toolEnv });
}

// Polls cond (sync or async) every 100 ms until it is truthy; throws after
// timeoutMs (a bound on a hang, not a speed target).
async function waitFor(what, cond, timeoutMs = 60000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v) {
      return v;
    }
    if (Date.now() > end) {
      throw new Error(`waited ${timeoutMs} ms for ${what}`);
    }
    await sleep(100);
  }
}

// Creates item for TENANT and waits until every segment is owned by a node
// that is up (the coordinator placed it).
async function createItem(item, { total, segments = 1, maxPerOrder, maxPerBuyer,
  holdTtlMs = 600000 } = {}) {
  const args = ['item', 'create', TENANT, item, '--total', String(total),
    '--segments', String(segments), '--hold-ttl-ms', String(holdTtlMs)];
  if (maxPerOrder) {
    args.push('--max-per-order', String(maxPerOrder));
  }
  if (maxPerBuyer) {
    args.push('--max-per-buyer', String(maxPerBuyer));
  }
  ctl(...args);
  await waitFor(`item ${item} placed`, () => sql1(`SELECT count(*) FROM segments s
    JOIN nodes n USING (node_id) WHERE s.tenant_id = '${TENANT}' AND s.item_id = '${item}'
    AND n.state = 'up' AND s.epoch > 0`) === String(segments));
}

function client(options = {}) {
  return new Client({ coordinator: env.ESCROW_COORDINATOR, routes: env.ESC_CLUSTER_PUBLISH,
    tenant: TENANT, deadlineMs: 30000, ...options });
}

module.exports = { TENANT, sql, sql1, sqlWithRows, ctl, waitFor, createItem, client, sleep };
