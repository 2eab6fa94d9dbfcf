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
- a candidate's exception is re-raised on the test side as the same built-in type; an exit
  (SystemExit and friends), a dead or garbled channel, or a value that may not cross raise
  ``BoundaryError``, a BaseException that a test's ``except Exception`` cannot swallow.
"""

from __future__ import annotations

import itertools
import types

import wire

_PROBED = frozenset({"__length_hint__", "__array__", "__array_interface__", "__array_struct__", "__deepcopy__",
                     "__copy__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__fspath__",
                     "__index__", "__int__", "__float__", "__complex__", "__round__", "__trunc__", "__floor__",
                     "__ceil__", "__bytes__", "__format__", "__class_getitem__", "__origin__", "__args__"})
REQUEST_OPS = ("call", "getattr", "setattr", "dunder", "iter", "next", "setglobal")
TEST_DUNDERS = ("__len__", "__getitem__", "__contains__")
CANDIDATE_DUNDERS = ("__len__", "__getitem__", "__setitem__", "__delitem__", "__contains__")
BATCH = 256


class BoundaryError(BaseException):
    """The candidate left the protocol: it exited, broke the channel or sent what may not cross."""


class NeedsInProcess(BoundaryError):
    """The test reached for something a handle does not carry (a function's ``__code__``, a class's
    internals): it needs the labelled ``execution: in_process`` mode, never a silent fallback."""


class _Refused(Exception):
    """A request the serving side's rules do not allow (sent back as an AttributeError/TypeError)."""


class Remote:
    """A proxy for an object on the other side (see module docstring for what it forwards)."""

    __slots__ = ("_peer", "_handle", "__weakref__")

    def __init__(self, peer: "Peer", handle: wire.Handle) -> None:
        object.__setattr__(self, "_peer", peer)
        object.__setattr__(self, "_handle", handle)

    def __call__(self, *args, **kwargs):
        return self._peer.request({"op": "call", "target": self._handle.id, "args": self._peer.enc_args(args),
                                   "kwargs": self._peer.enc_kwargs(kwargs)})

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            if name in _PROBED:  # looked up by copy, pickle, numpy... on any object: a plain miss
                raise AttributeError(name)
            raise NeedsInProcess(f"the test reads {name} of a {self._handle.kind} that lives in the "
                                 "candidate's process; that needs in-process access (task.execution: "
                                 "in_process with verifier.allow_in_process)")
        return self._peer.request({"op": "getattr", "target": self._handle.id, "name": name})

    def __setattr__(self, name: str, value) -> None:
        self._peer.request({"op": "setattr", "target": self._handle.id, "name": name,
                            "value": self._peer.encode(value)})

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
        self.broken: str | None = None
        self.violations: list[str] = []
        """Exits and values that could not cross: the verdict is an error even if a test caught them."""

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
                                    "and what the test defines itself may cross (wrap it in a class of the "
                                    "test's own: its public methods become the candidate's view)")
            if kind is None:
                raise wire.NotPlain(f"a value of type {_type_name(obj)} cannot cross the boundary "
                                    "(plain data only: None, bool, int, float, complex, str, bytes, "
                                    "tuple, list, dict, set, frozenset)")
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

    def enc_args(self, args) -> list:
        return [self.encode(a) for a in args]

    def enc_kwargs(self, kwargs) -> list:
        return [[str(k), self.encode(v)] for k, v in kwargs.items()]

    # -- requests ----------------------------------------------------------------------------
    def _fail(self, why: str) -> BoundaryError:
        self.broken = self.broken or why
        return BoundaryError(self.broken)

    def request(self, message: dict):
        """Send a request and wait for its reply, serving the peer's requests meanwhile."""
        if self.broken:
            raise BoundaryError(self.broken)
        if self.before_request is not None:
            self.before_request()
        rid = next(self._requests)
        message["id"] = rid
        try:
            self.channel.send(message)
        except wire.ChannelError as exc:
            raise self._fail(f"the candidate side is gone ({exc})") from None
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
        if op == "ret":
            try:
                return self.decode(reply.get("value"))
            except wire.ChannelError as exc:
                raise self._fail(f"the channel broke: {exc}") from None
        raise self._reraise(reply)

    def _reraise(self, reply: dict) -> BaseException:
        name, msg = str(reply.get("type", "Exception")), str(reply.get("msg", ""))[:2000]
        if name == "__boundary__":
            self.violations.append(msg)
            return BoundaryError(msg)
        if name in wire.EXIT_EXCEPTIONS:
            self.violations.append(f"the candidate raised {name}({msg}) during a call (an exit is not an answer)")
            return BoundaryError(self.violations[-1])
        cls = wire.BUILTIN_EXCEPTIONS.get(name, RuntimeError)
        for klass in cls.__mro__:
            try:
                exc = klass(msg)
            except TypeError:
                continue
            if isinstance(exc, Exception):
                return exc
        return RuntimeError(f"{name}: {msg}")

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
        try:
            value = self._perform(message)
            reply = {"op": "ret", "id": rid, "value": self.encode(value)}
        except wire.NotPlain as exc:
            reply = {"op": "err", "id": rid, "type": "__boundary__", "msg": str(exc)}
        except BoundaryError as exc:
            reply = {"op": "err", "id": rid, "type": "__boundary__", "msg": str(exc)}
        except BaseException as exc:  # noqa: BLE001 - any exception is an answer, sent back by type
            reply = {"op": "err", "id": rid, "type": wire.builtin_exception_name(exc), "msg": _message(exc)}
        try:
            self.channel.send(reply)
        except wire.NotPlain as exc:
            self.channel.send({"op": "err", "id": rid, "type": "__boundary__", "msg": str(exc)})

    def _target(self, message: dict):
        hid = message.get("target")
        if not isinstance(hid, int) or hid not in self.objects:
            raise _Refused(f"unknown handle {hid!r}")
        return self.objects[hid]

    def _perform(self, message: dict):
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
