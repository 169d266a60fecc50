// SPDX-License-Identifier: Apache-2.0
// Type declarations of the `escrow` package (index.js). docs/node.md has
// the checkout flow and what to do with each answer.

/** A hold's state: 'held' until it ends exactly once. */
export type HoldState = 'held' | 'converted' | 'cancelled' | 'expired' | 'unknown';

/** A hold: qty units of an item reserved for one checkout. */
export interface Hold {
  /** Names the hold (and its segment): exceeds 2^53, hence a BigInt. */
  holdId: bigint;
  segmentId: bigint;
  item: string;
  buyer: string;
  qty: number;
  /** Units sold by a confirm (all of qty, or fewer for a partial one). */
  qtySold: number;
  state: HoldState;
  /** Unix time in milliseconds. */
  expiresAtMs: number;
  /** extend() was used (it works once per hold). */
  extended: boolean;
}

/** A hold id: the BigInt, its decimal string, or the Hold itself. */
export type HoldRef = bigint | string | Hold;

/** The names of libescrow's answers other than a hold. */
export type ErrorCode =
  | 'SOLD_OUT' | 'TRY_LATER' | 'SEGMENT_EMPTY' | 'EXPIRED' | 'NOT_HELD'
  | 'IDEMPOTENCY_MISMATCH' | 'BUYER_LIMIT' | 'ORDER_LIMIT' | 'ALREADY_EXTENDED'
  | 'NOT_FOUND' | 'UNKNOWN_TENANT' | 'UNKNOWN_ITEM' | 'NOT_OWNER' | 'FENCED'
  | 'PAUSED' | 'INVAL' | 'TOOBIG' | 'PROTO' | 'UNAVAILABLE' | 'TIMEDOUT'
  | 'NOMEM' | 'IO' | 'INTERNAL' | 'BUSY' | 'CLOSED' | 'DB' | 'CONFIG' | 'AUTH'
  | 'CONFLICT' | 'CART_ENDED';

/** How a call was answered when the answer is not a hold. */
export class EscrowError extends Error {
  name: 'EscrowError';
  /** 'SOLD_OUT', 'TRY_LATER', 'TIMEDOUT', ... */
  code: ErrorCode;
  /** The same code as libescrow's number (-1 for SOLD_OUT ...). */
  errno: number;
  /** The hold's final state, when the answer carries one (NOT_HELD ...). */
  hold?: Hold;
  /** reserveCart: the index in `lines` of the line that failed. */
  failedLine?: number;
  constructor(code: ErrorCode, errno: number, message: string);
}

/** { SOLD_OUT: -1, TRY_LATER: -2, ... } */
export const codes: Readonly<Record<ErrorCode, number>>;

export interface ClientOptions {
  /** Routing mode: the coordinator's request endpoint, e.g. 'tcp://10.0.0.5:7000'. */
  coordinator?: string;
  /** Routing mode, optional: the coordinator's route PUB endpoint. */
  routes?: string;
  /** Single-node mode instead of coordinator: one segment node. */
  endpoint?: string;
  tenant: string;
  /** The tenant's key ('esk_<key id>_<secret>') when the daemons run with --auth on. */
  credential?: string;
  /** Default deadline of every call (0: 5000). */
  deadlineMs?: number;
  /** Resend an unanswered request after this long (0: 500). */
  resendMs?: number;
}

export interface CallOptions {
  /** This call's deadline (0 or absent: the client's). */
  deadlineMs?: number;
}

export interface ReserveRequest extends CallOptions {
  item: string;
  buyer: string;
  /** 1 to 10,000; default 1. */
  qty?: number;
  /** Names this checkout: a retry with the same key gets the same hold. */
  key: string;
  /** 0 or absent: the item's hold ttl. */
  ttlMs?: number;
}

export interface CartLine {
  item: string;
  qty?: number;
}

export interface CartRequest extends CallOptions {
  buyer: string;
  lines: CartLine[];
  /** Each line's key is '<key>/<item>': retry a cart with the same key. */
  key: string;
  ttlMs?: number;
}

export interface ClientStats {
  framesSent: number;
  soldOutCached: number;
  routeFetches: number;
  routePushes: number;
  retargets: number;
  resolves: number;
}

export class Client {
  /** Throws EscrowError 'INVAL' for options libescrow refuses. */
  constructor(options: ClientOptions);
  reserve(req: ReserveRequest): Promise<Hold>;
  /** Sells the whole hold, or qty units of it (the rest goes back). */
  confirm(hold: HoldRef, opts?: CallOptions & { qty?: number }): Promise<Hold>;
  release(hold: HoldRef, opts?: CallOptions): Promise<Hold>;
  /** Once per hold: ttlMs more (0: the item's hold ttl). */
  extend(hold: HoldRef, opts?: CallOptions & { ttlMs?: number }): Promise<Hold>;
  get(hold: HoldRef, opts?: CallOptions): Promise<Hold>;
  /** All or nothing: one hold per distinct item. */
  reserveCart(cart: CartRequest): Promise<Hold[]>;
  stats(): ClientStats;
  /** Fails the pending calls with CLOSED, then resolves. */
  close(): Promise<void>;
}
