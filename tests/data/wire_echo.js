'use strict';
// The JavaScript end of the codec property tests (tests/test_codec_properties.py): reads frames on
// stdin and answers each on stdout, through the real wire.js (its path is argv[2]).
//   {op: "echo", value}  -> decode, then encode again: {op: "ret", value, js}
//   {op: "eval", src}    -> encode the value of a JavaScript expression: {op: "ret", value, js}
// ``js`` describes the JavaScript value that was decoded or built, so the test sees its types
// (a BigInt stays a bigint, -0 stays -0, undefined is not null). A refusal is
// {op: "err", kind: "NotPlain"|"ChannelError", message}.
const wire = require(process.argv[2]);

function describeJs(v) {
  if (v === undefined) return 'undefined';
  if (v === null) return 'null';
  const t = typeof v;
  if (t === 'number') {
    if (Object.is(v, -0)) return 'number:-0';
    if (!Number.isFinite(v)) return 'number:' + String(v);
    return Number.isInteger(v) ? 'number:integral' : 'number';
  }
  if (t === 'bigint' || t === 'string' || t === 'boolean') return t;
  if (Array.isArray(v)) return v.map(describeJs);
  if (Buffer.isBuffer(v)) return 'buffer';
  if (v instanceof Map) return { map: Array.from(v, ([k, x]) => [describeJs(k), describeJs(x)]) };
  if (v instanceof Set) return { set: Array.from(v, describeJs) };
  if (Object.getPrototypeOf(v) === Object.prototype) return { object: Object.keys(v).map((k) => [k, describeJs(v[k])]) };
  return 'other:' + wire.describe(v);
}

const channel = new wire.Channel(0, 1);
for (;;) {
  let message;
  try { message = channel.recv(); } catch (e) {
    if (e.eof) process.exit(0);
    channel.send({ op: 'err', kind: 'ChannelError', message: String(e.message) });
    continue;
  }
  let reply;
  try {
    // eslint-disable-next-line no-eval
    const value = message.op === 'eval' ? (0, eval)('(' + message.src + ')') : wire.decode(message.value);
    reply = { op: 'ret', value: wire.encode(value), js: describeJs(value) };
  } catch (e) {
    const kind = e instanceof wire.NotPlain ? 'NotPlain' : e instanceof wire.ChannelError ? 'ChannelError' : e.name;
    reply = { op: 'err', kind, message: String(e.message) };
  }
  channel.send(reply);
}
