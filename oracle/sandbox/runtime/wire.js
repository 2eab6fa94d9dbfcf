'use strict';
// The channel codec and framing for JavaScript (same wire format as wire.py: see its docstring and
// its table of how each value travels). Only plain data crosses by value; other values cross as
// handles or not at all. Exact both ways: -0, NaN, the infinities, BigInts (never narrowed to a
// Number), undefined (never null), Maps (a Map stays a Map). Refused with the reason: a Symbol, a
// function where only plain data may cross, a sparse array's hole, a Symbol-keyed object, a complex
// number, a numpy array or scalar, a date or time, a Decimal or a Fraction from Python. A Uint8Array
// arrives as a Buffer; a Python tuple as an array.
const fs = require('fs');

const MAX_FRAME = 32 * 1024 * 1024;
const MAX_DEPTH = 200;
const IMPLICIT_KEYS = new Set(['valueOf', 'toString', 'toLocaleString', 'toJSON', 'then', 'constructor', 'inspect', '__proto__']);

class ChannelError extends Error {}
class NotPlain extends Error {}
class Handle {
  constructor(id, owner, kind) { this.id = id; this.owner = owner; this.kind = kind || 'object'; }
}

function isPlainObject(v) {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

const FLOAT_LITERAL = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
const DIGITS = /^-?[0-9]+$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MAX_INT_DIGITS = 100000;
// Python values with no JavaScript counterpart (wire_values.py): a clear refusal, never "unknown tag".
const PYTHON_ONLY = Object.freeze({
  nd: 'numpy array', ns: 'numpy scalar', date: 'Python datetime.date', dt: 'Python datetime.datetime',
  tm: 'Python datetime.time', td: 'Python datetime.timedelta', dec: 'Python decimal.Decimal',
  fr: 'Python fractions.Fraction',
});

// A Number crosses as a JSON number only where JSON (and Python) read it back exactly: a safe
// integer, or a non-integral finite value. -0, NaN, the infinities and integral values past 2**53
// are float tags, so they stay Numbers; a BigInt is always a BigInt tag, never narrowed.
function encodeNumber(value) {
  if (Number.isNaN(value)) return { f: 'nan' };
  if (value === Infinity) return { f: 'inf' };
  if (value === -Infinity) return { f: '-inf' };
  if (Object.is(value, -0)) return { f: '-0' };
  if (Number.isSafeInteger(value) || !Number.isInteger(value)) return value;
  return { f: String(value) };
}

function encode(value, toHandle, depth) {
  depth = depth || 0;
  if (depth > MAX_DEPTH) throw new NotPlain('nesting deeper than ' + MAX_DEPTH);
  if (value === null) return null;
  if (value === undefined) return { u: 1 };
  const t = typeof value;
  if (t === 'boolean' || t === 'string') return value;
  if (t === 'number') return encodeNumber(value);
  if (t === 'bigint') {
    const text = value.toString();
    if (text.length > MAX_INT_DIGITS + 1) throw new NotPlain('a BigInt of more than ' + MAX_INT_DIGITS + ' digits cannot cross the boundary');
    return { bi: text };
  }
  if (t === 'symbol') throw new NotPlain('a Symbol cannot cross the boundary (it has no counterpart in Python)');
  const d = depth + 1;
  if (value instanceof Handle) return { h: value.id, o: value.owner, k: value.kind };
  if (toHandle && toHandle.isRemote && toHandle.isRemote(value)) {
    const h = toHandle(value);
    return { h: h.id, o: h.owner, k: h.kind };
  }
  if (t === 'object') {
    if (Array.isArray(value)) {
      const out = new Array(value.length);
      for (let i = 0; i < value.length; i++) {
        if (!(i in value)) throw new NotPlain('a sparse array (a hole at index ' + i + ') cannot cross the boundary; fill it (e.g. with undefined)');
        out[i] = encode(value[i], toHandle, d);
      }
      return out;
    }
    if (value instanceof Uint8Array) return { b: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
    if (value instanceof Set) return { s: Array.from(value, (v) => encode(v, toHandle, d)) };
    if (value instanceof Map) return { m: Array.from(value, ([k, v]) => [encode(k, toHandle, d), encode(v, toHandle, d)]) };
    if (isPlainObject(value)) {
      const symbols = Object.getOwnPropertySymbols(value).filter((s) => Object.prototype.propertyIsEnumerable.call(value, s));
      if (symbols.length) throw new NotPlain('an object with a Symbol key (' + String(symbols[0]) + ') cannot cross the boundary');
      return { d: Object.keys(value).map((k) => [k, encode(value[k], toHandle, d)]) };
    }
  }
  if (toHandle) {
    const h = toHandle(value);
    return { h: h.id, o: h.owner, k: h.kind };
  }
  const what = t === 'function' ? 'a function' : 'a value of type ' + describe(value);
  throw new NotPlain(what + ' cannot cross the boundary (plain data only)');
}

function describe(value) {
  if (value === null) return 'null';
  if (typeof value === 'function') return 'function';
  if (typeof value !== 'object') return typeof value;
  const c = value.constructor;
  return (c && typeof c.name === 'string' && c.name) || 'object';
}

function decode(data, fromHandle, depth) {
  depth = depth || 0;
  if (depth > MAX_DEPTH) throw new ChannelError('nesting deeper than ' + MAX_DEPTH);
  if (data === null || typeof data === 'boolean' || typeof data === 'string' || typeof data === 'number') return data;
  const d = depth + 1;
  if (Array.isArray(data)) return data.map((v) => decode(v, fromHandle, d));
  if (typeof data !== 'object') throw new ChannelError('unexpected value in a message');
  const keys = Object.keys(data);
  if ('h' in data) {
    if (!Number.isInteger(data.h) || (data.o !== 'c' && data.o !== 't') || keys.length > 3) throw new ChannelError('malformed handle');
    if (!fromHandle) throw new ChannelError('a handle where only plain data may cross');
    return fromHandle(new Handle(data.h, data.o, String(data.k || 'object')));
  }
  if (keys.length !== 1) throw new ChannelError('unknown tag');
  const tag = keys[0];
  const body = data[tag];
  if (Object.prototype.hasOwnProperty.call(PYTHON_ONLY, tag)) {
    throw new ChannelError('a ' + PYTHON_ONLY[tag] + ' cannot cross into JavaScript (JavaScript has no such value)');
  }
  if (tag === 'f') {
    if (body === 'nan') return NaN;
    if (body === 'inf') return Infinity;
    if (body === '-inf') return -Infinity;
    if (body === '-0') return -0;
    if (typeof body === 'string' && body.length <= 400 && FLOAT_LITERAL.test(body)) {
      const n = Number(body);
      if (Number.isFinite(n)) return n;
    }
    throw new ChannelError('bad float tag');
  }
  if (tag === 'u') {
    if (body !== 1) throw new ChannelError('bad undefined tag');
    return undefined;
  }
  if (tag === 'bi') {
    if (typeof body !== 'string' || body.length > MAX_INT_DIGITS + 1 || !DIGITS.test(body)) throw new ChannelError('bad bigint tag');
    return BigInt(body);
  }
  if (tag === 'b') {
    if (typeof body !== 'string' || !BASE64.test(body)) throw new ChannelError('bytes tag is not valid base64');
    return Buffer.from(body, 'base64');
  }
  if (!Array.isArray(body)) throw new ChannelError('tag must hold a list');
  if (tag === 't') return body.map((v) => decode(v, fromHandle, d));
  if (tag === 's' || tag === 'fs') return new Set(body.map((v) => decode(v, fromHandle, d)));
  if (tag === 'c') throw new ChannelError('a complex number cannot cross into JavaScript (it has no counterpart there)');
  if (tag === 'm') {
    return new Map(body.map((p) => {
      if (!Array.isArray(p) || p.length !== 2) throw new ChannelError('map tag must hold [key, value] pairs');
      return [decode(p[0], fromHandle, d), decode(p[1], fromHandle, d)];
    }));
  }
  if (tag === 'd') {
    const pairs = body.map((p) => {
      if (!Array.isArray(p) || p.length !== 2) throw new ChannelError('dict tag must hold [key, value] pairs');
      // JavaScript calls these implicitly (==, String(), JSON, await): a handle there would let the
      // sender run code inside a comparison. Only plain data may sit under them.
      if (IMPLICIT_KEYS.has(p[0]) && p[1] !== null && typeof p[1] === 'object' && 'h' in p[1]) {
        throw new ChannelError('a handle under the key ' + JSON.stringify(p[0]) + ', which JavaScript calls implicitly');
      }
      return [decode(p[0], fromHandle, d), decode(p[1], fromHandle, d)];
    });
    if (pairs.every(([k]) => typeof k === 'string')) {
      const obj = {};
      for (const [k, v] of pairs) Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
      return obj;
    }
    return new Map(pairs);
  }
  throw new ChannelError('unknown tag ' + tag);
}

function sleepMs(ms) { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms); }

class Channel {
  constructor(rfd, wfd) { this.rfd = rfd; this.wfd = wfd === undefined ? rfd : wfd; this.buf = Buffer.alloc(0); }

  send(message) {
    const body = Buffer.from(JSON.stringify(message), 'utf8');
    if (body.length > MAX_FRAME) throw new NotPlain('message exceeds the frame limit');
    const frame = Buffer.alloc(4 + body.length);
    frame.writeUInt32BE(body.length, 0);
    body.copy(frame, 4);
    let off = 0;
    while (off < frame.length) {
      try { off += fs.writeSync(this.wfd, frame, off, frame.length - off); } catch (e) {
        if (e.code === 'EAGAIN') { sleepMs(1); continue; }
        throw new ChannelError('cannot write to the channel: ' + e.code);
      }
    }
  }

  fill(want) {
    while (this.buf.length < want) {
      const chunk = Buffer.alloc(Math.max(65536, want - this.buf.length));
      let n;
      try { n = fs.readSync(this.rfd, chunk, 0, chunk.length, null); } catch (e) {
        if (e.code === 'EAGAIN') { sleepMs(1); continue; }
        if (e.code === 'ECONNRESET' || e.code === 'EOF') n = 0; else throw new ChannelError('cannot read from the channel: ' + e.code);
      }
      if (n === 0) { const err = new Error('EOF'); err.eof = true; throw err; }
      this.buf = Buffer.concat([this.buf, chunk.subarray(0, n)]);
    }
  }

  recv() {
    this.fill(4);
    const size = this.buf.readUInt32BE(0);
    if (size > MAX_FRAME) throw new ChannelError('a message exceeds the frame limit');
    try { this.fill(4 + size); } catch (e) { if (e.eof) throw new ChannelError('the channel closed in the middle of a message'); throw e; }
    const body = this.buf.subarray(4, 4 + size);
    this.buf = this.buf.subarray(4 + size);
    let text;
    try { text = new TextDecoder('utf-8', { fatal: true }).decode(body); } catch (e) { throw new ChannelError('a message that is not valid UTF-8'); }
    let message;
    try { message = JSON.parse(text); } catch (e) { throw new ChannelError('a message that is not valid JSON'); }
    if (message === null || typeof message !== 'object' || typeof message.op !== 'string') throw new ChannelError('a message without an op');
    return message;
  }
}

const BUILTIN_ERRORS = ['Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'EvalError', 'URIError'];

module.exports = { MAX_FRAME, ChannelError, NotPlain, Handle, encode, decode, describe, Channel, BUILTIN_ERRORS, isPlainObject };
