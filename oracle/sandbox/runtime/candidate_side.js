'use strict';
// The candidate process for JavaScript: load the candidate's code, announce its top-level names,
// answer the test process's requests. Nothing here decides a verdict (see candidate_side.py).
const fs = require('fs');
const vm = require('vm');
const wire = require('./wire.js');
const rpc = require('./rpc.js');

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
try { fs.unlinkSync(process.argv[2]); } catch (_) { /* already gone */ }
globalThis.require = require;
globalThis.module = { exports: {} };
globalThis.exports = globalThis.module.exports;
globalThis.assert = require('assert');

const FOREIGN = [Promise, Date, RegExp, Error, WeakMap, WeakSet, ArrayBuffer, DataView];

function exportable(obj) {
  if (obj instanceof rpc.IterBox) return 'iterator';
  if (typeof obj === 'function') return /^class[\s{]/.test(Function.prototype.toString.call(obj)) ? 'class' : 'callable';
  if (typeof obj !== 'object' || obj === null) return null;
  if (FOREIGN.some((C) => obj instanceof C) || ArrayBuffer.isView(obj)) return null;
  return 'object';
}

function topLevelNames(source) {
  const names = new Set();
  const patterns = [/(?:^|[\s;(])(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)/g, /(?:^|[\s;])class\s+([A-Za-z_$][\w$]*)/g,
    /(?:^|[\s;])(?:const|let|var)\s+([A-Za-z_$][\w$]*)/g, /^([A-Za-z_$][\w$]*)\s*=[^=]/gm];
  for (const re of patterns) for (const m of source.matchAll(re)) names.add(m[1]);
  for (const key of Object.keys(globalThis.module.exports || {})) names.add(key);
  for (const skip of ['require', 'module', 'exports', 'assert']) names.delete(skip);
  return [...names];
}

function lookup(name) {
  if (globalThis.module.exports && Object.prototype.hasOwnProperty.call(globalThis.module.exports, name)) {
    return globalThis.module.exports[name];
  }
  try { return vm.runInThisContext('typeof ' + name + " === 'undefined' ? undefined : " + name); } catch (_) { return undefined; }
}

function serve() {
  const channel = new wire.Channel(spec.channel_fd);
  try {
    vm.runInThisContext(spec.code, { filename: 'candidate.js' });
  } catch (e) {
    const name = e && e.name ? e.name : 'Error';
    channel.send({ op: 'load_error', type: name, msg: (name + ': ' + (e && e.message) + ' while loading the candidate').slice(0, 2000) });
    return;
  }
  const peer = new rpc.Peer(channel, 'c', exportable);
  const exports = [];
  for (const name of topLevelNames(spec.code)) {
    const value = lookup(name);
    if (value === undefined) continue;
    try { exports.push([name, peer.encode(value)]); } catch (_) { /* a foreign object is not offered */ }
  }
  channel.send({ op: 'ready', exports });
  try { peer.serve(); } catch (_) { /* the test side is gone or sent garbage: nothing left to answer */ }
}

if (spec.mode === 'script') {
  vm.runInThisContext(spec.code, { filename: 'candidate.js' });
} else {
  serve();
  process.exit(0);
}
