"""Both ends of the candidate/test channel: requests, replies, nested callbacks and each side's rules.

Why symmetric: a test may pass the candidate a test-side object (a database connection, a key
function); while the test waits for the candidate's answer, the candidate may call back into that
object. So each side, while it waits for the reply to its own request, serves the peer's requests.

Rules that keep the verdict on the test side:
- only plain data crosses by value (see wire.py); other objects cross as handles;
- a handle proxy (``Remote``) never forwards ``__eq__``, ``__hash__`` or ``__bool__``: equality is
  identity, truth is True, so a candidate object can never compare equal to an expected value;
- the candidate may touch test-side objects only through public attributes (no leading underscore),
  calls, iteration, ``len``, indexing and ``in``; it can never set an attribute on them;
- an exception raised on the other side is re-raised as a fresh object of its nearest built-in
  type, built from plain data only (its ``args`` when they are plain, else its message), so
  ``pytest.raises(ValueError)`` and ``except KeyError`` keep working and no live candidate object
  (a custom ``__eq__`` or ``__str__``) crosses;
- an exception that has control-flow meaning in the receiver's own code arrives instead as a
  ``CrossedRaise`` (a RuntimeError) named after the original, e.g. ``CandidateRaisedStopIteration``:
  ``StopIteration``/``StopAsyncIteration`` (would end a test's ``map``/``for`` early), every
  non-``Exception`` BaseException (exits, test-framework outcomes such as pytest's Skipped/Failed)
  and ``AssertionError`` (would look like the test's own assertion). Exits are also recorded as
  violations, so the verdict is an error even if the test caught them;
- a test-side ``assert`` (or a test-framework outcome) that fails inside a callback the candidate
  called is recorded on the test's peer: the candidate cannot swallow the test's failure;
- arguments cross by value, so after a call the callee sends back the new state of every list,
  dict, set, bytearray (or tuple holding those) argument it changed, and the caller updates its own
  objects in place; a numpy array passed directly as an argument too (``a.sort()``, ``a[0] = 1``:
  the same dtype and shape only, a change of either is a violation; an array inside a container is
  not written back); the written-back data may hold only plain values and the handles that argument
  already held (never a new handle); top-level aliasing (``f(xs, xs)``) is kept;
- a dead or garbled channel, or a value that may not cross raise ``BoundaryError``, a
  BaseException that a test's ``except Exception`` cannot swallow. A value the test side tries to
  hand the candidate that may not cross is ``Unsendable`` and recorded on the peer: the run is the
  test's ``broken``, never the candidate's failure (see ``Peer.outgoing``).
"""

from __future__ import annotations

import itertools
import json
import operator
import sys
import types

from . import wire

TYPE_CHECKING = False  # type checkers read the block below; at run time nothing more is imported
if TYPE_CHECKING:
    from typing import Any

_PROBED = frozenset({
    "__wrapped__", "__length_hint__", "__array__", "__array_interface__", "__array_struct__", "__deepcopy__",
    "__copy__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__fspath__", "__index__",
    "__int__", "__float__", "__complex__", "__round__", "__trunc__", "__floor__", "__ceil__", "__bytes__",
    "__format__", "__class_getitem__", "__origin__", "__args__", "_mock_name"})
"""Names copy, pickle, numpy, ``inspect.unwrap`` and test frameworks look up on any object (pytest
9.2 reads ``__wrapped__`` and ``_mock_name`` of every object in a test module): a plain miss on a
handle, never NeedsInProcess, and never sent to the candidate, where the read would count as one of
its answers, as if it could have led the test on."""
REQUEST_OPS = ("call", "getattr", "setattr", "dunder", "iter", "next", "setglobal")
TEST_DUNDERS = ("__len__", "__getitem__", "__contains__")
CANDIDATE_DUNDERS = ("__len__", "__getitem__", "__setitem__", "__delitem__", "__contains__")
BATCH = 256


class BoundaryError(BaseException):
    """The candidate left the protocol: it exited, broke the channel or sent what may not cross."""


class Unsendable(BoundaryError):
    """The test tried to hand the candidate a value that may not cross (its type, or the codec's
    limits): the test's doing, so the run is ``broken`` (the message names the type)."""

    requests_made = 0
    """How many requests the test side had made by then (answers that may have led it there)."""


class NeedsInProcess(BoundaryError):
    """The test reached for something a handle does not carry (a function's ``__code__``, a class's
    internals): it needs the labelled ``execution: in_process`` mode, never a silent fallback."""


class CrossedRaise(RuntimeError):
    """An exception from the other side whose own type would mean control flow here (ending a loop,
    an exit, a skip, a failed assertion). ``original`` names the type that was raised."""

    original = "Exception"


_CROSSED: dict[str, type[CrossedRaise]] = {}
# Built-in Exception subclasses that still steer the receiver's own code (a map/for loop ends on
# StopIteration; an AssertionError reads as the test's own failed assert).
CONTROL_FLOW = frozenset({"StopIteration", "StopAsyncIteration", "AssertionError"})
MUTABLE = (list, dict, set, bytearray)
_CONTAINER_TAGS = ("d", "s", "t", "ba")
MAX_ARGS_JSON = 8192


def crossed(prefix: str, name: str) -> type[CrossedRaise]:
    """The ``CrossedRaise`` subclass for ``name`` raised by the other side, e.g.
    ``CandidateRaisedStopIteration``. An exit's class is a ``BoundaryError`` too: the protocol code
    treats it as the candidate leaving (the verdict is an error even if the test caught it)."""
    key = prefix + name
    cls = _CROSSED.get(key)
    if cls is None:
        bases = (CrossedRaise, BoundaryError) if name in wire.EXIT_EXCEPTIONS else (CrossedRaise,)
        cls = _CROSSED[key] = type(key, bases, {"original": name, "__module__": __name__})
    return cls


def has_control_flow(name: str) -> bool:
    """Whether an exception of built-in type ``name`` must not reach the receiver as itself."""
    cls = wire.BUILTIN_EXCEPTIONS.get(name)
    return cls is None or name in CONTROL_FLOW or not issubclass(cls, Exception)


class _Refused(Exception):
    """A request the serving side's rules do not allow (sent back as an AttributeError/TypeError)."""


class Remote:
    """A proxy for an object on the other side (see module docstring for what it forwards)."""

    __slots__ = ("_peer", "_handle", "__weakref__")

    def __init__(self, peer: "Peer", handle: wire.Handle) -> None:
        object.__setattr__(self, "_peer", peer)
        object.__setattr__(self, "_handle", handle)

    def __call__(self, *args, **kwargs):
        peer = self._peer
        message = {"op": "call", "target": self._handle.id, "args": peer.enc_args(args),
                   "kwargs": peer.enc_kwargs(kwargs)}
        slots = list(enumerate(args)) + list(kwargs.items())
        alias, first = [], {}
        for slot, value in slots:
            if isinstance(value, MUTABLE):
                seen = first.setdefault(id(value), slot)
                if seen != slot:
                    alias.append([slot, seen])
        if alias:
            message["alias"] = alias
        return peer.request(message, slots=dict(slots))

    def __getattr__(self, name: str):
        if name in _PROBED:
            raise AttributeError(name)
        if name.startswith("__") and name.endswith("__"):
            why = (f"the test reads {name} of a {self._handle.kind} that lives in the candidate's process; "
                   "that needs in-process access (task.execution: in_process with verifier.allow_in_process)")
            self._peer.needs_in_process.append((why, self._peer.requests_made))
            raise NeedsInProcess(why)
        return self._peer.request({"op": "getattr", "target": self._handle.id, "name": name})

    def __setattr__(self, name: str, value) -> None:
        self._peer.request({"op": "setattr", "target": self._handle.id, "name": name,
                            "value": self._peer.outgoing(value)})

    def __iter__(self):
        it = self._peer.request({"op": "iter", "target": self._handle.id})
        return _RemoteIterator(self._peer, it)

    def _dunder(self, name: str, *args):
        return self._peer.request({"op": "dunder", "target": self._handle.id, "name": name,
                                   "args": self._peer.enc_args(args)})

    def __len__(self):
        n = self._dunder("__len__")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise BoundaryError(f"len() of a remote object gave {type(n).__name__}, not a size")
        return n

    def __getitem__(self, key):
        return self._dunder("__getitem__", key)

    def __setitem__(self, key, value) -> None:
        self._dunder("__setitem__", key, value)

    def __delitem__(self, key) -> None:
        self._dunder("__delitem__", key)

    def __contains__(self, item) -> bool:
        return bool(self._dunder("__contains__", item) is True)

    def __bool__(self) -> bool:
        return True

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        owner = "candidate" if self._handle.owner == "c" else "test"
        return f"<{owner} {self._handle.kind} #{self._handle.id}>"


class _RemoteIterator:
    __slots__ = ("_peer", "_remote", "_buf", "_done")

    def __init__(self, peer: "Peer", remote) -> None:
        self._peer, self._remote, self._done = peer, remote, False
        self._buf: list[object] = []

    def __iter__(self):
        return self

    def __next__(self):
        if not self._buf:
            if self._done:
                raise StopIteration
            reply = self._peer.request({"op": "next", "target": self._remote._handle.id, "n": BATCH})
            if not (isinstance(reply, tuple) and len(reply) == 2 and isinstance(reply[0], list)):
                raise BoundaryError("a malformed iteration reply")
            self._buf, self._done = list(reversed(reply[0])), reply[1] is True
            if not self._buf:
                raise StopIteration
        return self._buf.pop()


def _type_name(obj) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ in ("builtins", "__main__") else f"{t.__module__}.{t.__qualname__}"


class Peer:
    """One side of the channel. ``side`` is "c" (candidate) or "t" (test)."""

    def __init__(self, channel: wire.Channel, side: str, *, exportable=None, before_request=None,
                 namespace: dict | None = None) -> None:
        self.channel, self.side = channel, side
        self.exportable = exportable
        """``obj -> kind | None``: which of our objects may cross as handles (None: any)."""
        self.before_request = before_request
        self.namespace = namespace
        self.objects: dict[int, object] = {}
        self._ids: dict[int, int] = {}
        self._remotes: dict[int, Remote] = {}
        self._counter = itertools.count(1)
        self._requests = itertools.count(1)
        self.requests_made = 0
        """How many requests this side has sent (for the test side: whether any candidate code has been
        asked to run yet, which decides whether an error is the test's own or the candidate's)."""
        self.broken: str | None = None
        self.violations: list[str] = []
        """Exits and values that could not cross: the verdict is an error even if a test caught them."""
        self.unsendable: list[str] = []
        """Values the test side tried to hand the peer that may not cross (see ``outgoing``): the
        test's own doing, so the run's verdict is ``broken``."""
        self.exports: dict = {}
        """The candidate's exported names as this side decoded them (test side): blame reads them."""
        self.unsendable_at: list[int] = []
        """``requests_made`` when each of ``unsendable`` was recorded: after an answer of the
        candidate, its answers may have led the test there (``after_answers``, broken.py)."""
        self.needs_in_process: list[tuple[str, int]] = []
        """Each read of the peer's internals a handle cannot carry (``NeedsInProcess``), with
        ``requests_made`` then: where pytest's collection met one, no exception object is left."""
        self.test_failures: list[str] = []
        """The test's own assertions (or test-framework outcomes) that failed inside a callback the
        peer called: the verdict is a failure even if the peer swallowed the exception."""

    # -- encoding ----------------------------------------------------------------------------
    def to_handle(self, obj) -> wire.Handle:
        if isinstance(obj, Remote):
            if obj._peer is self:
                return obj._handle
            raise wire.NotPlain("a proxy from another channel")
        if isinstance(obj, _RemoteIterator):
            raise wire.NotPlain("a remote iterator cannot cross back")
        kind = "callable" if callable(obj) else "object"
        if self.exportable is not None:
            kind = self.exportable(obj)
            if kind is None and self.side == "t":
                raise wire.NotPlain(f"the test tried to hand the candidate a {_type_name(obj)}; only plain data "
                                    "and the test's own objects cross (wrap it in a class of the test's own)")
            if kind is None:
                raise wire.NotPlain(f"a value of type {_type_name(obj)} cannot cross the boundary "
                                    "(plain data only: None, bool, int, float, complex, str, bytes, "
                                    "tuple, list, dict, set, frozenset, numpy arrays, dates, Decimal)")
        key = id(obj)
        hid = self._ids.get(key)
        if hid is None or self.objects.get(hid) is not obj:
            hid = next(self._counter)
            self.objects[hid], self._ids[key] = obj, hid
        return wire.Handle(hid, self.side, kind)

    def from_handle(self, handle: wire.Handle):
        if handle.owner == self.side:
            if handle.id not in self.objects:
                raise wire.ChannelError(f"unknown handle {handle.id}")
            return self.objects[handle.id]
        remote = self._remotes.get(handle.id)
        if remote is None:
            remote = self._remotes[handle.id] = Remote(self, handle)
        return remote

    def encode(self, value):
        return wire.encode(value, self.to_handle)

    def decode(self, data):
        return wire.decode(data, self.from_handle)

    def outgoing(self, value):
        """``value`` encoded to be handed to the peer. On the test side, a value that may not cross
        is the test's doing (or the codec's limit), never the candidate's: it is recorded in
        ``unsendable`` and raised as ``Unsendable``, which a test's ``except Exception`` cannot swallow."""
        try:
            return self.encode(value)
        except (wire.NotPlain, RecursionError) as exc:
            if self.side != "t":
                raise
            raise self._unsendable(exc) from None

    def _unsendable(self, exc: BaseException) -> "Unsendable":
        why = str(exc) if isinstance(exc, wire.NotPlain) else f"{type(exc).__name__}: {_message(exc)}"
        self.unsendable.append(why)
        self.unsendable_at.append(self.requests_made)
        exc = Unsendable(why)
        exc.requests_made = self.requests_made
        return exc

    def enc_args(self, args) -> list:
        return [self.outgoing(a) for a in args]

    def enc_kwargs(self, kwargs) -> list:
        return [[str(k), self.outgoing(v)] for k, v in kwargs.items()]

    # -- requests ----------------------------------------------------------------------------
    def _fail(self, why: str) -> BoundaryError:
        self.broken = self.broken or why
        return BoundaryError(self.broken)

    def request(self, message: dict, slots: dict | None = None):
        """Send a request and wait for its reply, serving the peer's requests meanwhile. ``slots``:
        a call's arguments (position or keyword -> our object), updated from the reply's write-back."""
        if self.broken:
            raise BoundaryError(self.broken)
        if self.before_request is not None:
            self.before_request()
        rid = next(self._requests)
        self.requests_made += 1
        message["id"] = rid
        try:
            self.channel.send(message)
        except wire.ChannelError as exc:
            raise self._fail(f"the candidate side is gone ({exc})") from None
        except wire.NotPlain as exc:  # the frame is too large
            if self.side != "t":
                raise
            raise self._unsendable(exc) from None
        while True:
            try:
                reply = self.channel.recv()
            except EOFError:
                raise self._fail("the other process ended during a call (it exited or was killed)") from None
            except wire.ChannelError as exc:
                raise self._fail(f"the channel broke: {exc}") from None
            op = reply.get("op")
            if op in REQUEST_OPS:
                self.dispatch(reply)
                continue
            if op in ("ret", "err") and reply.get("id") == rid:
                break
            raise self._fail(f"an unexpected message {op!r} on the channel")
        if slots and (reply.get("out") or reply.get("out_refused")):
            self._write_back(message, slots, reply)
        if op == "ret":
            try:
                return self.decode(reply.get("value"))
            except wire.ChannelError as exc:
                raise self._fail(f"the channel broke: {exc}") from None
        raise self._reraise(reply)

    def _reraise(self, reply: dict) -> BaseException:
        """The peer's exception as a fresh object of ours (see the module docstring for the rules)."""
        name, msg = str(reply.get("type", "Exception"))[:100], str(reply.get("msg", ""))[:2000]
        if name == "__boundary__":
            self.violations.append(msg)
            return BoundaryError(msg)
        other = "candidate" if self.side == "t" else "test"
        if name in wire.EXIT_EXCEPTIONS:
            self.violations.append(f"the {other} raised {name}({msg}) during a call (an exit is not an answer)")
        if has_control_flow(name):
            label = name if name in wire.BUILTIN_EXCEPTIONS else "an exception"
            return crossed(other.capitalize() + "Raised", name if name in wire.BUILTIN_EXCEPTIONS else "Exception")(
                f"{label}: {msg}" if msg else label)
        cls = wire.BUILTIN_EXCEPTIONS[name]
        args = _plain_args(reply.get("args"))
        if args is not None:
            try:
                exc = cls(*args)
                if isinstance(exc, Exception) and _message(exc) == msg:
                    return exc
            except Exception:  # noqa: BLE001 - args that this type does not take: use the message
                pass
        for klass in cls.__mro__:
            try:
                exc = klass(msg)
            except TypeError:
                continue
            if isinstance(exc, Exception):
                return exc
        return RuntimeError(f"{name}: {msg}")

    # -- write-back of mutated arguments -------------------------------------------------------
    def _write_back(self, message: dict, slots: dict, reply: dict) -> None:
        """Update our call arguments in place from the callee's ``out`` (see module docstring)."""
        if reply.get("out_refused"):
            raise self._violation(f"the {self._other()} changed an argument into something that may not "
                                  f"cross back: {str(reply['out_refused'])[:500]}")
        out = reply.get("out")
        if not isinstance(out, list):
            raise self._fail("a malformed argument write-back")
        current = {}
        for pair in out:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], (int, str))
                    and not isinstance(pair[0], bool) and pair[0] in slots):
                raise self._fail("a malformed argument write-back")
            target = slots[pair[0]]
            if (isinstance(target, MUTABLE + (tuple,)) or _is_array(target)) and pair[0] not in current:
                current[pair[0]] = self.encode(target)
        allowed: set[tuple[str, int]] = set()
        for enc in current.values():
            _collect_handles(enc, allowed)
        for slot, new in out:
            if slot in current:
                try:
                    self._merge(slots[slot], self.encode(slots[slot]), new, allowed, 0)
                except wire.ChannelError as exc:
                    raise self._fail(f"the channel broke: {exc}") from None

    def _other(self) -> str:
        return "candidate" if self.side == "t" else "test"

    def _violation(self, why: str) -> BoundaryError:
        self.violations.append(why)
        return BoundaryError(why)

    def _plain(self, data, allowed: set):
        """Decode written-back data: plain values, and only handles the argument already held."""

        def from_handle(handle: wire.Handle):
            if (handle.owner, handle.id) not in allowed:
                raise self._violation(f"the {self._other()} put a handle ({handle.kind}) into an argument; "
                                      "an argument written back carries plain data only")
            return self.from_handle(handle)

        return wire.decode(data, from_handle)

    def _merge(self, target, cur, new, allowed: set, depth: int) -> None:
        """Make ``target`` (our object, encoded now as ``cur``) hold ``new``, in place where it is
        mutable; nested containers of the same type are updated in place too."""
        if cur == new or depth > wire.MAX_DEPTH:
            return
        base = wire.plain_base(target)
        if base is list and isinstance(new, list) and isinstance(cur, list):
            keep = min(len(cur), len(new))
            for i in range(keep):
                if cur[i] != new[i]:
                    item = list.__getitem__(target, i)
                    if _mergeable(item, new[i]):
                        self._merge(item, cur[i], new[i], allowed, depth + 1)
                    else:
                        list.__setitem__(target, i, self._plain(new[i], allowed))
            if len(new) < len(cur):
                list.__delitem__(target, slice(len(new), None))
            else:
                list.extend(target, [self._plain(x, allowed) for x in new[keep:]])
        elif base is dict and _tag(new) == "d" and _tag(cur) == "d":
            known = {}
            for key, pair in zip(dict.keys(target), cur["d"]):
                known[_key(pair[0])] = (key, pair[1])
            items = []
            for pair in new["d"]:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise wire.ChannelError("dict tag must hold [key, value] pairs")
                old = known.get(_key(pair[0]))
                if old is None:
                    items.append((self._plain(pair[0], allowed), self._plain(pair[1], allowed)))
                    continue
                value = dict.__getitem__(target, old[0])
                if old[1] != pair[1]:
                    if _mergeable(value, pair[1]):
                        self._merge(value, old[1], pair[1], allowed, depth + 1)
                    else:
                        value = self._plain(pair[1], allowed)
                items.append((old[0], value))
            dict.clear(target)
            dict.update(target, items)
        elif base is set and _tag(new) == "s" and _tag(cur) == "s":
            known = {_key(enc): item for item, enc in zip(set.__iter__(target), cur["s"])}
            fresh = [known[k] if k in known else self._plain(enc, allowed) for k, enc in
                     ((_key(e), e) for e in new["s"])]
            set.clear(target)
            set.update(target, fresh)
        elif base is bytearray and _tag(new) == "ba":
            value = self._plain(new, allowed)
            if isinstance(value, bytearray):
                bytearray.__setitem__(target, slice(None), value)
        elif _is_array(target) and _tag(new) == "nd":
            self._merge_array(target, new)
        elif base is tuple and _tag(new) == "t" and _tag(cur) == "t" and len(new["t"]) == len(cur["t"]):
            for item, old, now in zip(tuple.__iter__(target), cur["t"], new["t"]):
                if old != now and _mergeable(item, now):  # a tuple's own items cannot change
                    self._merge(item, old, now, allowed, depth + 1)

    def _merge_array(self, target, new) -> None:
        """Copy the callee's new contents of an ndarray argument into ours (same dtype and shape)."""
        value: Any = wire.decode(new)
        if not _is_array(value) or value.shape != target.shape or \
                value.dtype.newbyteorder("=") != target.dtype.newbyteorder("="):  # byte order aside
            raise self._violation(f"the {self._other()} changed an array argument's dtype or shape in place "
                                  f"({target.dtype}{list(target.shape)}); an array written back keeps both")
        if not target.flags.writeable:
            raise self._violation(f"the {self._other()} changed a read-only array argument")
        target[...] = value

    # -- serving -----------------------------------------------------------------------------
    def serve(self) -> None:
        """Answer the peer's requests until it closes the channel."""
        while True:
            try:
                message = self.channel.recv()
            except EOFError:
                return
            if message.get("op") == "close":
                return
            if message.get("op") not in REQUEST_OPS:
                raise wire.ChannelError(f"unexpected message {message.get('op')!r}")
            self.dispatch(message)

    def dispatch(self, message: dict) -> None:
        rid = message.get("id")
        called: dict = {}
        try:
            value = self._perform(message, called)
            reply = {"op": "ret", "id": rid, "value": self.outgoing(value)}
        except Unsendable as exc:  # a test callback's answer may not cross: recorded, the candidate told
            reply = {"op": "err", "id": rid, "type": "__boundary__", "msg": f"the test's answer cannot cross: {exc}"}
        except wire.NotPlain as exc:
            reply = {"op": "err", "id": rid, "type": "__boundary__", "msg": str(exc)}
        except BoundaryError as exc:
            reply = {"op": "err", "id": rid, "type": "__boundary__", "msg": str(exc)}
        except BaseException as exc:  # noqa: BLE001 - any exception is an answer, sent back by type
            name = wire.builtin_exception_name(exc)
            reply = {"op": "err", "id": rid, "type": name, "msg": _message(exc)}
            args = _args_of(exc)
            if args is not None:
                reply["args"] = args
            if self.side == "t" and (isinstance(exc, AssertionError) or not isinstance(exc, Exception)):
                self.test_failures.append(f"{_message(exc) or type(exc).__name__} (in a test callback "
                                          "the candidate called)" if isinstance(exc, AssertionError) else
                                          f"{type(exc).__name__} in a test callback the candidate called: "
                                          f"{_message(exc)}")
        if called:
            self._add_write_back(message, called, reply)
        try:
            self.channel.send(reply)
        except wire.NotPlain as exc:
            if self.side == "t":
                self._unsendable(exc)
            self.channel.send({"op": "err", "id": rid, "type": "__boundary__", "msg": str(exc)})

    def _add_write_back(self, message: dict, called: dict, reply: dict) -> None:
        """Tell the caller the new state of each container argument the call changed."""
        out = []
        sent = dict(enumerate(message.get("args") or []))
        sent.update((pair[0], pair[1]) for pair in message.get("kwargs") or [])
        for slot, (value, snapshot) in called.items():
            before = sent[slot]
            if isinstance(value, tuple) and not _holds_container(before):
                continue
            if snapshot is not None and _unchanged(value, snapshot):
                continue
            try:
                now = self.encode(value)
            except (wire.NotPlain, RecursionError, ValueError) as exc:
                reply["out_refused"] = f"argument {slot!r}: {exc}"[:1000]
                reply.pop("out", None)
                return
            if now != before:
                out.append([slot, now])
        if out:
            reply["out"] = out

    def _target(self, message: dict):
        hid = message.get("target")
        if not isinstance(hid, int) or hid not in self.objects:
            raise _Refused(f"unknown handle {hid!r}")
        return self.objects[hid]

    def _perform(self, message: dict, called: dict | None = None):
        op = message["op"]
        candidate_side = self.side == "c"
        if op == "setglobal":
            if not candidate_side or self.namespace is None or not isinstance(message.get("name"), str):
                raise _Refused("setglobal is not allowed here")
            self.namespace[message["name"]] = self.decode(message.get("value"))
            return None
        obj = self._target(message)
        if op == "call":
            args = [self.decode(a) for a in message.get("args") or []]
            kwargs = {}
            for pair in message.get("kwargs") or []:
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                    raise wire.ChannelError("malformed keyword arguments")
                kwargs[pair[0]] = self.decode(pair[1])
            slots: dict = dict(enumerate(args))
            slots.update(kwargs)
            for pair in message.get("alias") or []:
                if isinstance(pair, list) and len(pair) == 2 and pair[0] in slots and pair[1] in slots:
                    slots[pair[0]] = slots[pair[1]]
            args = [slots[i] for i in range(len(args))]
            kwargs = {k: slots[k] for k in kwargs}
            if called is not None:
                sent = dict(enumerate(message.get("args") or []))
                sent.update((pair[0], pair[1]) for pair in message.get("kwargs") or [])
                for slot, value in slots.items():
                    if (type(value) in MUTABLE + (tuple,) or _is_array(value, exact=True)) and slot in sent:
                        called[slot] = (value, _snapshot(value, sent[slot]))
            return obj(*args, **kwargs)
        name = message.get("name")
        if op == "getattr":
            if not isinstance(name, str) or (not candidate_side and name.startswith("_")):
                raise AttributeError(f"attribute {name!r} of a test-side object is not available to the candidate")
            return getattr(obj, name)
        if op == "setattr":
            if not candidate_side or not isinstance(name, str):
                raise AttributeError("the candidate cannot set attributes of test-side objects")
            setattr(obj, name, self.decode(message.get("value")))
            return None
        if op == "dunder":
            allowed = CANDIDATE_DUNDERS if candidate_side else TEST_DUNDERS
            if name not in allowed:
                raise TypeError(f"operation {name!r} is not forwarded")
            args = [self.decode(a) for a in message.get("args") or []]
            if name == "__len__":
                return len(obj)
            if name == "__contains__":
                return args[0] in obj
            if name == "__getitem__":
                return obj[args[0]]
            if name == "__setitem__":
                obj[args[0]] = args[1]
                return None
            del obj[args[0]]
            return None
        if op == "iter":
            return _IterBox(iter(obj))
        if op == "next":
            box = obj
            if not isinstance(box, _IterBox):
                raise TypeError("not an iterator handle")
            n = message.get("n")
            n = n if isinstance(n, int) and 0 < n <= 4096 else BATCH
            items = []
            for item in box.it:
                items.append(item)
                if len(items) >= n:
                    return (items, False)
            return (items, True)
        raise _Refused(f"unknown op {op!r}")


class _IterBox:
    """An iterator kept on its owner's side, so iteration can be forwarded in batches."""

    __slots__ = ("it",)

    def __init__(self, it) -> None:
        self.it = it


def _is_array(value, exact: bool = False) -> bool:
    """Whether ``value`` is a numpy ndarray (exactly one, with ``exact``: an argument decoded here)."""
    np = sys.modules.get("numpy")
    if np is None:
        return False
    return type(value) is np.ndarray if exact else isinstance(value, np.ndarray)


def _tag(data) -> str | None:
    return next(iter(data)) if isinstance(data, dict) and len(data) == 1 else None


def _key(data) -> str:
    """A hashable stand-in for an encoded value (to match dict keys and set items)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _mergeable(obj, data) -> bool:
    base = wire.plain_base(obj)
    if base is list:
        return isinstance(data, list)
    if base is tuple:
        return _tag(data) == "t" and len(data["t"]) == len(obj)
    return (base, _tag(data)) in ((dict, "d"), (set, "s"), (bytearray, "ba"))


def _flat(items) -> bool:
    kinds = set(map(type, items))
    return list not in kinds and dict not in kinds


def _snapshot(value, data):
    """A shallow copy of a container argument whose encoding ``data`` holds no nested container or
    handle (so identity of its items tells whether it changed), else None (compare encodings)."""
    if type(value) is bytearray:
        return bytes(value)
    if type(value) is list and isinstance(data, list) and _flat(data):
        return list.copy(value)
    if type(value) is set and _tag(data) == "s" and _flat(data["s"]):
        return set.copy(value)
    if type(value) is dict and _tag(data) == "d" and _flat(itertools.chain.from_iterable(data["d"])):
        return list(dict.keys(value)), list(dict.values(value))
    return None


def _unchanged(value, snapshot) -> bool:
    if type(value) is bytearray:
        return bytes(value) == snapshot
    if type(value) is dict:
        keys, values = snapshot
        return len(value) == len(keys) and all(map(operator.is_, dict.keys(value), keys)) and \
            all(map(operator.is_, dict.values(value), values))
    if type(value) is set:
        ids = {id(x) for x in snapshot}  # the snapshot keeps its items alive: ids stay theirs
        return len(value) == len(snapshot) and all(id(x) in ids for x in value)
    return len(value) == len(snapshot) and all(map(operator.is_, value, snapshot))


def _holds_container(data) -> bool:
    """Whether an encoded value holds a list, dict, set or bytearray somewhere (may change in place)."""
    if isinstance(data, list):
        return True
    tag = _tag(data)
    if tag in ("d", "s", "ba"):
        return True
    return tag == "t" and any(_holds_container(x) for x in data["t"])


def _collect_handles(data, into: set) -> None:
    if isinstance(data, list):
        for x in data:
            _collect_handles(x, into)
    elif isinstance(data, dict):
        if "h" in data:
            into.add((data.get("o"), data.get("h")))
            return
        for body in data.values():
            if isinstance(body, list):
                _collect_handles(body, into)


def _args_of(exc: BaseException) -> object | None:
    """An exception's ``args`` as plain data, when they are plain and small (else None)."""
    try:
        args = wire.encode(tuple(BaseException.args.__get__(exc)))  # type: ignore[attr-defined]
        if len(json.dumps(args)) <= MAX_ARGS_JSON:
            return args
    except Exception:  # noqa: BLE001 - args that cannot cross: the message alone goes back
        pass
    return None


def _plain_args(data) -> tuple | None:
    if data is None:
        return None
    try:
        value = wire.decode(data)
    except (wire.ChannelError, RecursionError):
        return None
    return value if isinstance(value, tuple) else None


def _message(exc: BaseException) -> str:
    try:
        return str(exc)[:2000]
    except BaseException:  # noqa: BLE001 - a candidate's __str__ may raise anything
        return f"<{type(exc).__name__} whose message could not be read>"


def candidate_exportable(module_name: str):
    """Which candidate objects may cross as handles: its own functions, classes, their instances,
    bound methods of those, and iterator boxes; anything else fails naming its type."""

    def kind(obj):
        if isinstance(obj, _IterBox):
            return "iterator"
        if isinstance(obj, type):
            return "class" if obj.__module__ == module_name else None
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) and \
                getattr(obj, "__module__", None) == module_name:
            return "callable"
        if isinstance(obj, types.MethodType):
            return "callable" if kind(obj.__self__) in ("object", "class") else None
        if type(obj).__module__ == module_name:
            return "object"
        return None

    return kind
