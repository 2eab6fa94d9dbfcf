'use strict';
// Both ends of the channel for JavaScript (the same rules as rpc.py: see its docstring).
// A proxy for a remote object never converts to a primitive the peer chooses (no remote valueOf,
// toString, toJSON or Symbol.toPrimitive), so loose equality cannot be forged; its own keys are
// none, so deep equality with an expected value fails. A broken channel, an exit or a value that may
// not cross is recorded on the peer: the test side turns it into an error even if a test caught it.
const wire = require('./wire.js');

const REQUEST_OPS = new Set(['call', 'new', 'getattr', 'iter', 'next', 'len']);
const BATCH = 256;

class BoundaryError extends Error {}
class IterBox { constructor(it) { this.it = it; } }

class Peer {
  constructor(channel, side, exportable) {
    this.channel = channel; this.side = side; this.exportable = exportable || null;
    this.objects = new Map(); this.ids = new Map(); this.counter = 1; this.requests = 1;
    this.remotes = new Map(); this.remoteHandles = new WeakMap();
    this.broken = null; this.violations = [];
    // The test's own failed assertions inside a callback the candidate called: the verdict fails
    // even if the candidate swallowed the error.
    this.testFailures = [];
    const self = this;
    this.toHandle = function (obj) { return self._toHandle(obj); };
    this.toHandle.isRemote = (v) => (typeof v === 'object' || typeof v === 'function') && v !== null && self.remoteHandles.has(v);
  }

  _toHandle(obj) {
    const remote = this.remoteHandles.get(obj);
    if (remote) return remote;
    let kind = typeof obj === 'function' ? 'callable' : 'object';
    if (this.exportable) {
      kind = this.exportable(obj);
      if (!kind) throw new wire.NotPlain('a value of type ' + wire.describe(obj) + ' cannot cross the boundary (plain data only)');
    }
    let id = this.ids.get(obj);
    if (id === undefined) { id = this.counter++; this.ids.set(obj, id); this.objects.set(id, obj); }
    return new wire.Handle(id, this.side, kind);
  }

  fromHandle(h) {
    if (h.owner === this.side) {
      if (!this.objects.has(h.id)) throw new wire.ChannelError('unknown handle ' + h.id);
      return this.objects.get(h.id);
    }
    let proxy = this.remotes.get(h.id);
    if (!proxy) { proxy = this._makeRemote(h); this.remotes.set(h.id, proxy); this.remoteHandles.set(proxy, h); }
    return proxy;
  }

  _makeRemote(h) {
    const peer = this;
    const label = '[' + (h.owner === 'c' ? 'candidate' : 'test') + ' ' + h.kind + ' #' + h.id + ']';
    const target = function () {};
    return new Proxy(target, {
      apply(_t, _this, args) { return peer.request({ op: 'call', target: h.id, args: args.map((a) => peer.encode(a)) }); },
      construct(_t, args) { return peer.request({ op: 'new', target: h.id, args: args.map((a) => peer.encode(a)) }); },
      get(_t, prop) {
        if (prop === Symbol.toPrimitive) return () => label;
        if (prop === Symbol.iterator) return function* () {
          const it = peer.request({ op: 'iter', target: h.id });
          for (;;) {
            const reply = peer.request({ op: 'next', target: peer.remoteHandles.get(it).id, n: BATCH });
            if (!Array.isArray(reply) || reply.length !== 2 || !Array.isArray(reply[0])) throw peer.fail('a malformed iteration reply');
            yield* reply[0];
            if (reply[1] === true) return;
          }
        };
        if (typeof prop === 'symbol') return undefined;
        if (prop === 'valueOf') return () => label;
        if (prop === 'toString' || prop === 'toJSON' || prop === 'inspect') return () => label;
        if (prop === 'then' || prop === 'constructor' || prop === '__proto__' || prop === 'prototype') return undefined;
        if (prop === 'length' && h.kind !== 'callable' && h.kind !== 'class') {
          const n = peer.request({ op: 'len', target: h.id });
          return n;
        }
        return peer.request({ op: 'getattr', target: h.id, name: String(prop) });
      },
      set() { throw new TypeError('attributes of a remote object cannot be set'); },
      has() { return false; },
      ownKeys() { return ['prototype'].filter((k) => Object.prototype.hasOwnProperty.call(target, k)); },
      getOwnPropertyDescriptor(t, prop) { return Object.getOwnPropertyDescriptor(t, prop); },
      getPrototypeOf() { return Object.prototype; },
      setPrototypeOf() { return false; },
      defineProperty() { return false; },
      deleteProperty() { return false; },
    });
  }

  encode(v) { return wire.encode(v, this.toHandle); }
  decode(d) { return wire.decode(d, (h) => this.fromHandle(h)); }

  fail(why) { if (!this.broken) this.broken = why; return new BoundaryError(this.broken); }

  request(message) {
    if (this.broken) throw new BoundaryError(this.broken);
    const id = this.requests++;
    message.id = id;
    try { this.channel.send(message); } catch (e) { throw this.fail('the candidate side is gone (' + e.message + ')'); }
    let reply;
    for (;;) {
      try { reply = this.channel.recv(); } catch (e) {
        if (e.eof) throw this.fail('the other process ended during a call (it exited or was killed)');
        throw this.fail('the channel broke: ' + e.message);
      }
      if (REQUEST_OPS.has(reply.op)) { this.dispatch(reply); continue; }
      if ((reply.op === 'ret' || reply.op === 'err') && reply.id === id) break;
      throw this.fail('an unexpected message ' + JSON.stringify(reply.op) + ' on the channel');
    }
    if (reply.op === 'ret') {
      try { return this.decode(reply.value); } catch (e) { throw this.fail('the channel broke: ' + e.message); }
    }
    const type = String(reply.type || 'Error');
    const msg = String(reply.msg || '').slice(0, 2000);
    if (type === '__boundary__' || type === '__exit__') { this.violations.push(msg); throw new BoundaryError(msg); }
    if (type === 'AssertionError') {
      // Never the receiver's own assertion: a candidate's AssertionError would read as the test failing
      // (or, caught by the test, as its own expected failure). It arrives named after the original.
      const err = new Error('AssertionError: ' + msg);
      err.name = (this.side === 't' ? 'Candidate' : 'Test') + 'RaisedAssertionError';
      throw err;
    }
    const Ctor = wire.BUILTIN_ERRORS.includes(type) ? globalThis[type] : Error;
    throw new Ctor(msg);
  }

  serve() {
    for (;;) {
      let message;
      try { message = this.channel.recv(); } catch (e) { if (e.eof) return; throw e; }
      if (message.op === 'close') return;
      if (!REQUEST_OPS.has(message.op)) throw new wire.ChannelError('unexpected message ' + message.op);
      this.dispatch(message);
    }
  }

  dispatch(message) {
    const id = message.id;
    let reply;
    try {
      const value = this._perform(message);
      reply = { op: 'ret', id, value: this.encode(value) };
    } catch (e) {
      if (e instanceof wire.NotPlain || e instanceof BoundaryError) reply = { op: 'err', id, type: '__boundary__', msg: String(e.message) };
      else {
        const name = e && typeof e.name === 'string' ? e.name : 'Error';
        let msg;
        try { msg = e && e.message !== undefined ? String(e.message) : String(e); } catch (_) { msg = '<unreadable message>'; }
        const failed = name === 'AssertionError' || (e && e.code === 'ERR_ASSERTION');
        if (failed && this.side === 't') this.testFailures.push(msg.slice(0, 2000) + ' (in a test callback the candidate called)');
        reply = { op: 'err', id, type: failed || wire.BUILTIN_ERRORS.includes(name) ? (failed ? 'AssertionError' : name) : 'Error', msg: msg.slice(0, 2000) };
      }
    }
    this.channel.send(reply);
  }

  _perform(message) {
    const candidateSide = this.side === 'c';
    if (!this.objects.has(message.target)) throw new TypeError('unknown handle ' + message.target);
    const obj = this.objects.get(message.target);
    const args = (message.args || []).map((a) => this.decode(a));
    switch (message.op) {
      case 'call': return obj(...args);
      case 'new': return new obj(...args);
      case 'getattr': {
        const name = String(message.name);
        if (!candidateSide && (name.startsWith('_') || name === 'constructor' || name === 'prototype')) {
          throw new TypeError('attribute ' + name + ' of a test-side object is not available to the candidate');
        }
        const v = obj[name];
        return typeof v === 'function' ? v.bind(obj) : v;
      }
      case 'len': return obj.length;
      case 'iter': return new IterBox(obj[Symbol.iterator]());
      case 'next': {
        if (!(obj instanceof IterBox)) throw new TypeError('not an iterator handle');
        const n = Number.isInteger(message.n) && message.n > 0 && message.n <= 4096 ? message.n : BATCH;
        const items = [];
        for (;;) {
          const step = obj.it.next();
          if (step.done) return [items, true];
          items.push(step.value);
          if (items.length >= n) return [items, false];
        }
      }
      default: throw new TypeError('unknown op ' + message.op);
    }
  }
}

module.exports = { Peer, BoundaryError, IterBox };
