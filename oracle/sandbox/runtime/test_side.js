'use strict';
// The test process for JavaScript: run one test with the candidate reachable only through the
// channel (see test_side.py). The verdict goes to the host on its own descriptor.
const fs = require('fs');
const vm = require('vm');
const wire = require('./wire.js');
const rpc = require('./rpc.js');

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
try { fs.unlinkSync(process.argv[2]); } catch (_) { /* already gone */ }
const report = new wire.Channel(spec.report_fd);
globalThis.require = require;
globalThis.assert = require('assert');

function verdict(outcome, message, extra) {
  return Object.assign({ op: 'verdict', outcome, message: String(message || '').slice(0, 2000) }, extra || {});
}

// Errors from before the test's code ran: this run says nothing about the test itself.
const LOAD = { stage: 'load' };

function testLine(e) {
  const m = e && typeof e.stack === 'string' ? e.stack.match(/test\.js:(\d+)/) : null;
  return m ? ' (test line ' + m[1] + ')' : '';
}

function runIsolated() {
  // Compiled before the candidate sends anything: a test that does not compile is the test's own fault.
  let script;
  try { script = new vm.Script(spec.kind === 'call' ? spec.call : spec.code, { filename: 'test.js' }); } catch (e) {
    if (e instanceof SyntaxError) return verdict('broken', 'the test does not compile: SyntaxError: ' + e.message);
    throw e;
  }
  const channel = new wire.Channel(spec.channel_fd);
  let first;
  try { first = channel.recv(); } catch (e) {
    if (e.eof) return verdict('error', 'the candidate process ended before it finished loading', LOAD);
    return verdict('error', 'the candidate sent garbage instead of loading: ' + e.message, LOAD);
  }
  if (first.op === 'load_error') return verdict('error', first.msg || 'the candidate failed to load', LOAD);
  if (first.op !== 'ready' || !Array.isArray(first.exports)) return verdict('error', 'the candidate sent ' + JSON.stringify(first.op) + ' instead of loading', LOAD);
  const peer = new rpc.Peer(channel, 't');
  const exported = new Map();
  try {
    for (const pair of first.exports) {
      if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || !/^[A-Za-z_$][\w$]*$/.test(pair[0])) throw new wire.ChannelError('malformed export list');
      exported.set(pair[0], peer.decode(pair[1]));
    }
  } catch (e) { return verdict('error', 'the candidate sent garbage while loading: ' + e.message, LOAD); }
  const entry = spec.entry_point;
  for (const [name, value] of exported) {
    if (name === entry || !(name in globalThis)) globalThis[name] = value;
  }
  let result;
  try {
    if (spec.kind === 'call') {
      const value = script.runInThisContext();
      if (peer.toHandle.isRemote(value)) result = verdict('error', spec.call + ' returned a candidate object (a handle), not plain data');
      else {
        try { result = verdict('value', '', { value: wire.encode(value) }); } catch (e) { result = verdict('error', spec.call + ': ' + e.message); }
      }
    } else {
      script.runInThisContext();
      if (spec.kind === 'check') {
        const check = vm.runInThisContext("typeof check === 'function' ? check : undefined");
        if (!exported.has(entry)) result = verdict('fail', 'entry point ' + entry + ' is not defined');
        else if (check === undefined || peer.toHandle.isRemote(check)) result = verdict('error', 'the test defines no check function');
        else { check(exported.get(entry)); result = verdict('pass', 'all assertions held'); }
      } else result = verdict('pass', 'all assertions held');
    }
  } catch (e) {
    if (e instanceof rpc.BoundaryError) result = verdict('error', e.message + ' while running the test');
    else if (e && (e.code === 'ERR_ASSERTION' || e.name === 'AssertionError')) result = verdict('fail', (e.message || 'assertion failed') + testLine(e));
    else result = verdict('error', (e && e.name ? e.name : 'Error') + ' while running the test: ' + (e && e.message));
  }
  if (peer.broken || peer.violations.length) {
    result = verdict('error', (peer.broken || peer.violations[0]) + ' while running the test');
  } else if (peer.testFailures.length && (result.outcome === 'pass' || result.outcome === 'value')) {
    result = verdict('fail', peer.testFailures[0]);
  }
  try { channel.send({ op: 'close' }); } catch (_) { /* the candidate is gone */ }
  return result;
}

let outcome;
try { outcome = runIsolated(); } catch (e) { outcome = verdict('error', 'the test runtime failed: ' + (e && e.message)); }
report.send(outcome);
process.exit(0);
