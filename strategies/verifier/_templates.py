"""The in-sandbox harness programs (Python and JavaScript), kept as source text.

Protocol: the first stdin line is a per-run nonce; the harness reads it byte by byte (so the rest of
stdin is left for the candidate), then reports on a duplicate of stderr with lines
``@@ORACLE <nonce> <json>``: ``started`` first, then one verdict (pass, fail, error, value, done).
A candidate that prints a fake verdict does not know the nonce; one that exits early never produces
a verdict. The test spec comes from ``/src/spec.json``, the candidate from ``/src/candidate.*``.
"""

PYTHON_HARNESS = r'''
import os, sys, json
def _oracle_line():
    buf = b""
    while not buf.endswith(b"\n"):
        c = os.read(0, 1)
        if not c:
            break
        buf += c
    return buf.decode().strip()
_oracle = {"nonce": _oracle_line(), "fd": os.dup(2)}
def _oracle_report(kind, message="", **extra):
    rec = dict(extra, kind=kind, message=str(message)[:2000])
    try:
        text = json.dumps(rec, default=repr)
    except Exception as exc:  # an unserializable value is the candidate's, say so
        text = json.dumps({"kind": "error", "message": "cannot serialize value: %r" % (exc,)})
    os.write(_oracle["fd"], ("\n@@ORACLE " + _oracle["nonce"] + " " + text + "\n").encode())
def _oracle_plain(value):
    if isinstance(value, (tuple, list)):
        return [_oracle_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [_oracle_plain(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, dict):
        return {str(k): _oracle_plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return {"__repr__": repr(value)}
def _oracle_where(exc):
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<test>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
def _oracle_main():
    _oracle_report("started")
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "spec.json")) as fh:
        spec = json.load(fh)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "candidate.py")) as fh:
        source = fh.read()
    try:
        code = compile(source, "<candidate>", "exec")
    except (SyntaxError, ValueError) as exc:
        _oracle_report("error", "%s: %s (line %s)" % (type(exc).__name__, exc.msg if hasattr(exc, "msg") else exc, getattr(exc, "lineno", "?")))
        return
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    phase = "loading the candidate"
    try:
        exec(code, ns)
        if spec["kind"] == "io":
            sys.stdout.flush()
            _oracle_report("done")
            return
        phase = "running the test"
        if spec["kind"] == "assert":
            exec(compile(spec["code"], "<test>", "exec"), ns)
        elif spec["kind"] == "check":
            exec(compile(spec["code"], "<test>", "exec"), ns)
            if spec.get("entry_point") not in ns:
                _oracle_report("fail", "entry point %r is not defined" % spec.get("entry_point"))
                return
            ns["check"](ns[spec["entry_point"]])
        elif spec["kind"] == "call":
            value = eval(compile(spec["call"], "<test>", "eval"), ns)
            sys.stdout.flush()
            _oracle_report("value", value=_oracle_plain(value))
            return
    except AssertionError as exc:
        where = _oracle_where(exc)
        detail = str(exc) or "assertion failed"
        _oracle_report("fail" if phase == "running the test" else "error",
                       detail + (" (test line %s)" % where if where else ""))
        return
    except SystemExit as exc:
        if spec["kind"] == "io" and exc.code in (None, 0):
            sys.stdout.flush()
            _oracle_report("done")
            return
        _oracle_report("error", "exited (SystemExit %r) while %s" % (exc.code, phase))
        return
    except BaseException as exc:
        _oracle_report("error", "%s while %s: %s" % (type(exc).__name__, phase, exc))
        return
    sys.stdout.flush()
    _oracle_report("pass")
try:
    _oracle_main()
finally:
    try:
        sys.stdout.flush()
    except Exception:
        pass
    os._exit(0)
'''

JAVASCRIPT_HARNESS = r'''
const fs = require('fs'); const vm = require('vm'); const path = require('path');
function oracleLine() {
  let s = ''; const b = Buffer.alloc(1);
  for (;;) {
    let n = 0;
    try { n = fs.readSync(0, b, 0, 1, null); } catch (e) { if (e.code === 'EAGAIN') continue; throw e; }
    if (n === 0 || b[0] === 10) break;
    s += String.fromCharCode(b[0]);
  }
  return s;
}
const oracleNonce = oracleLine();
let oracleReported = false;
function oracleReport(kind, message, extra) {
  const rec = Object.assign({}, extra || {}, { kind: kind, message: String(message || '').slice(0, 2000) });
  let text;
  try { text = JSON.stringify(rec); } catch (e) { text = JSON.stringify({ kind: 'error', message: 'cannot serialize value' }); }
  fs.writeSync(2, '\n@@ORACLE ' + oracleNonce + ' ' + text + '\n');
  if (kind !== 'started') oracleReported = true;
}
oracleReport('started');
const dir = path.dirname(__filename);
const spec = JSON.parse(fs.readFileSync(path.join(dir, 'spec.json'), 'utf8'));
const source = fs.readFileSync(path.join(dir, 'candidate.js'), 'utf8');
globalThis.require = require; globalThis.module = { exports: {} }; globalThis.exports = globalThis.module.exports;
globalThis.assert = require('assert');
let phase = 'loading the candidate';
process.on('uncaughtException', (e) => {
  if (!oracleReported) oracleReport((e && e.code === 'ERR_ASSERTION' && phase === 'running the test') ? 'fail' : 'error',
    (e && e.name ? e.name + ': ' : '') + (e && e.message ? e.message : String(e)) + ' while ' + phase);
  process.exit(1);
});
process.on('exit', (code) => {
  if (!oracleReported) {
    if (spec.kind === 'io' && code === 0) oracleReport('done');
    else oracleReport('error', 'exited with code ' + code + ' while ' + phase);
  }
});
vm.runInThisContext(source, { filename: 'candidate.js' });
if (spec.kind !== 'io') {
  phase = 'running the test';
  if (spec.kind === 'assert') {
    vm.runInThisContext(spec.code, { filename: 'test.js' });
    oracleReport('pass');
  } else if (spec.kind === 'check') {
    vm.runInThisContext(spec.code, { filename: 'test.js' });
    const fn = vm.runInThisContext('typeof ' + spec.entry_point + " === 'undefined' ? undefined : " + spec.entry_point);
    if (fn === undefined) oracleReport('fail', 'entry point ' + spec.entry_point + ' is not defined');
    else { vm.runInThisContext('check')(fn); oracleReport('pass'); }
  } else if (spec.kind === 'call') {
    const value = vm.runInThisContext(spec.call, { filename: 'test.js' });
    oracleReport('value', '', { value: value === undefined ? null : value });
  }
  process.exit(0);
}
'''
