// SPDX-License-Identifier: Apache-2.0
// escrow - checkout code's client for escrow, over libescrow.
//
// Every call returns a Promise; nothing blocks and no thread is added: the
// addon runs libescrow's asynchronous engine on Node's own event loop.
// A call resolves with a Hold (or, for a cart, an array of holds) and
// rejects with an EscrowError whose `code` names the answer ('SOLD_OUT',
// 'TRY_LATER', 'TIMEDOUT', ...): the answers and what to do with each are
// in docs/node.md. Hold ids are BigInt (they exceed 2^53); every call that
// takes a hold also takes its id as a decimal string, or the Hold itself.
'use strict';

const native = require('./lib/native');

// The answer a call got, when it is not a hold. `code` is the name
// ('SOLD_OUT'), `errno` the number (-1): libescrow's table. `hold` is the
// hold's final state when the answer has one (NOT_HELD, EXPIRED after a
// confirm...); `failedLine` the index of the cart line that failed.
class EscrowError extends Error {
  constructor(code, errno, message) {
    super(message);
    this.name = 'EscrowError';
    this.code = code;
    this.errno = errno;
  }
}
native.setup(EscrowError);

// { SOLD_OUT: -1, TRY_LATER: -2, ... }
const codes = Object.freeze(native.codes());

const U32_MAX = 0xffffffff;
const DECIMAL_ID = /^[0-9]{1,20}$/;

function u32(value, name) {
  if (value === undefined || value === null) {
    return 0;
  }
  if (!Number.isInteger(value) || value < 0 || value > U32_MAX) {
    throw new TypeError(`${name} must be an integer from 0 to ${U32_MAX}`);
  }
  return value;
}

function int(value, name, dflt) {
  if (value === undefined || value === null) {
    return dflt;
  }
  if (!Number.isSafeInteger(value)) {
    throw new TypeError(`${name} must be an integer`);
  }
  return value;
}

function str(value, name) {
  if (typeof value !== 'string') {
    throw new TypeError(`${name} must be a string`);
  }
  return value;
}

function optStr(value, name) {
  return value === undefined || value === null ? null : str(value, name);
}

// A hold id from a BigInt, a decimal string or a Hold. Never a number: a
// hold id does not fit in one.
function holdId(hold) {
  if (typeof hold === 'bigint') {
    return hold;
  }
  if (typeof hold === 'string' && DECIMAL_ID.test(hold)) {
    return BigInt(hold);
  }
  if (hold !== null && typeof hold === 'object' && typeof hold.holdId === 'bigint') {
    return hold.holdId;
  }
  throw new TypeError('a hold id must be a BigInt, a decimal string or a Hold');
}

// Runs fn; a synchronous throw becomes a rejected promise, so every call
// reports bad arguments the same way it reports answers.
function promised(fn) {
  try {
    return fn();
  } catch (err) {
    return Promise.reject(err);
  }
}

class Client {
  #h;
  #closed = null;

  // { coordinator, routes?, tenant, credential?, deadlineMs?, resendMs? }
  // (routing mode) or { endpoint, tenant, ... } (one segment node).
  // Throws EscrowError 'INVAL' for options libescrow refuses.
  constructor(options) {
    const o = options ?? {};
    if (typeof o !== 'object') {
      throw new TypeError('new Client(options): options must be an object');
    }
    this.#h = native.clientNew(
      optStr(o.endpoint, 'endpoint'),
      optStr(o.coordinator, 'coordinator'),
      optStr(o.routes, 'routes'),
      str(o.tenant, 'tenant'),
      optStr(o.credential, 'credential'),
      u32(o.deadlineMs, 'deadlineMs'),
      u32(o.resendMs, 'resendMs'),
    );
  }

  // { item, buyer, qty = 1, key, ttlMs?, deadlineMs? } -> Hold
  reserve(req) {
    return promised(() => {
      const r = req ?? {};
      return native.reserve(this.#h, str(r.item, 'item'), str(r.buyer, 'buyer'),
        int(r.qty, 'qty', 1), str(r.key, 'key'), u32(r.ttlMs, 'ttlMs'),
        u32(r.deadlineMs, 'deadlineMs'));
    });
  }

  // Sells the hold: all of it, or { qty } units (the rest goes back).
  confirm(hold, opts) {
    return promised(() => native.confirm(this.#h, holdId(hold), int(opts?.qty, 'qty', 0),
      u32(opts?.deadlineMs, 'deadlineMs')));
  }

  release(hold, opts) {
    return promised(() => native.release(this.#h, holdId(hold), u32(opts?.deadlineMs, 'deadlineMs')));
  }

  // Once per hold: { ttlMs } more (0: the item's hold ttl).
  extend(hold, opts) {
    return promised(() => native.extend(this.#h, holdId(hold), u32(opts?.ttlMs, 'ttlMs'),
      u32(opts?.deadlineMs, 'deadlineMs')));
  }

  get(hold, opts) {
    return promised(() => native.get(this.#h, holdId(hold), u32(opts?.deadlineMs, 'deadlineMs')));
  }

  // { buyer, lines: [{ item, qty }], key, ttlMs?, deadlineMs? } -> Hold[]
  // (one per distinct item); all or nothing.
  reserveCart(cart) {
    return promised(() => {
      const c = cart ?? {};
      if (!Array.isArray(c.lines)) {
        throw new TypeError('lines must be an array of { item, qty }');
      }
      const items = c.lines.map((l, i) => str(l?.item, `lines[${i}].item`));
      const qtys = c.lines.map((l, i) => int(l?.qty, `lines[${i}].qty`, 1));
      return native.reserveCart(this.#h, str(c.buyer, 'buyer'), items, qtys, str(c.key, 'key'),
        u32(c.ttlMs, 'ttlMs'), u32(c.deadlineMs, 'deadlineMs'));
    });
  }

  // What the client did so far: { framesSent, soldOutCached, routeFetches,
  // routePushes, retargets, resolves }.
  stats() {
    return native.stats(this.#h);
  }

  // Fails the calls still pending with CLOSED, then resolves. Idempotent.
  close() {
    this.#closed ??= native.close(this.#h);
    return this.#closed;
  }
}

module.exports = { Client, EscrowError, codes };
