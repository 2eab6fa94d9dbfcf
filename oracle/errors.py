"""The error tree of oracle-router.

    OracleError                     base of everything we raise on purpose
    ├── TaskValidationError         bad task input (names the field and the file line)
    ├── ConfigError                 bad or inconsistent configuration
    ├── ProviderError               a model endpoint failed (after retries)
    │   ├── ProviderTimeout         per-call timeout or overall deadline exceeded
    │   ├── RateLimited             429 that outlived the retry budget
    │   ├── ProviderHTTPError       any other non-2xx (carries status and a body excerpt)
    │   ├── ResponseParseError      a 2xx whose body we cannot read
    │   ├── ResponseTooLarge        a reply body past ``max_reply_bytes`` (never retried)
    │   └── EndpointUnreachable     nothing listens at a loopback endpoint (refused; never retried)
    ├── SandboxError                the sandbox itself failed (never the candidate's fault)
    │   └── IsolationUnavailable    the required isolation layer is missing on this machine
    ├── EnvironmentBuildError       a task's environment could not be built (the installer's message)
    ├── RepositoryError             a task's repository, commit or test patch cannot be used (names the field)
    ├── InterpreterUnusable         the interpreter named cannot run in the sandbox (the reason, the fix)
    ├── EscalationStoreError        the escalation store cannot be read or written
    │   ├── EscalationNotFound      no request with that id (or an ambiguous prefix)
    │   ├── AlreadyAnswered         the first answer stands (pass replace=True to change it)
    │   └── NotAnswered             resuming a request that has no answer yet
    └── OutputLocked                another process is writing the same batch output

By contract ``Oracle.evaluate`` never raises on model, network or sandbox faults: evaluators catch
``OracleError`` and return a result whose ``status`` and ``error`` say what happened. Bad input is
still rejected up front, before any model call or code execution.
"""

from __future__ import annotations


class OracleError(Exception):
    """Base class for every error oracle-router raises deliberately."""


class TaskValidationError(OracleError, ValueError):
    """A task file or task object failed validation; the message names the field and line."""

    def __init__(self, message: str, *, field: str | None = None, line: int | None = None,
                 source: str | None = None) -> None:
        self.field = field
        self.line = line
        self.source = source
        self.validation_error: object | None = None
        """pydantic's original error, when there was one (a loader uses it to add file lines)."""
        where = []
        if source:
            where.append(str(source))
        if line is not None:
            where.append(f"line {line}")
        prefix = (":".join(where) + ": ") if where else ""
        super().__init__(prefix + message)


class ConfigError(OracleError, ValueError):
    """The configuration is invalid or names something that does not exist."""


class PluginError(ConfigError):
    """A third-party plugin (package entry point) failed to load or clashes with another name."""

    def __init__(self, message: str, *, plugin: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin


class ProviderError(OracleError):
    """A model endpoint failed after the retry budget was spent."""

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None,
                 attempts: int = 1) -> None:
        self.status = status
        self.body = (body or "")[:300]
        self.attempts = attempts
        super().__init__(message)


class ProviderTimeout(ProviderError):
    """A call exceeded its timeout, or the overall deadline passed."""


class RateLimited(ProviderError):
    """The endpoint kept answering 429 until the retry budget ran out."""


class ProviderHTTPError(ProviderError):
    """A non-2xx reply that is not retryable or outlived the retries."""


class ResponseParseError(ProviderError):
    """A 2xx reply whose body is not what the wire format promises."""


class ResponseTooLarge(ProviderError):
    """The reply body grew past the configured cap; reading stopped there."""


class EndpointUnreachable(ProviderError):
    """A loopback endpoint refused the connection: nothing listens there, and waiting will not
    start it, so the call fails at once (no retries) with the hint that says how to start it.

    Runs over many items (batch, compare, calibrate) stop at the first one: every later call
    would fail the same way."""


class SandboxError(OracleError):
    """The sandbox failed to run a program (our fault, never the candidate's)."""


class IsolationUnavailable(SandboxError):
    """The isolation the caller requires is not available on this machine."""


class EnvironmentBuildError(OracleError):
    """The environment a task names could not be built (pip failed: its message is kept), or the
    environment cache cannot be used. The task's problem, never a candidate's: no one is scored."""


class RepositoryError(OracleError):
    """A task's repository cannot be used: the path is not a git repository, the bundle cannot be
    read, the commit or the subdirectory is not in it, the test patch does not apply to it. The
    message starts with the field (``task.repository.commit: ...``). The task's problem, never a
    candidate's: no one is scored."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        self.field = field if field is not None else (message.split(":", 1)[0] if ":" in message else None)
        super().__init__(message)


class InterpreterUnusable(OracleError):
    """The interpreter a task or the config names cannot run in the sandbox; the message says why
    (the first directory the sandbox user cannot read, and its mode) and what to do."""


class EscalationStoreError(OracleError):
    """The escalation store could not be opened, read or written."""


class EscalationNotFound(EscalationStoreError, KeyError):
    """No request with that id in the store, or a prefix too short or matching several."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class AlreadyAnswered(EscalationStoreError):
    """The request already has an answer (the first one wins); ``existing`` is that answer."""

    def __init__(self, message: str, *, existing: object = None) -> None:
        self.existing = existing
        super().__init__(message)


class NotAnswered(EscalationStoreError, ValueError):
    """A stored request was resumed before anyone answered it (a ``ValueError`` too, as the
    ``ValueError`` raised here before was)."""


class OutputLocked(OracleError):
    """Another process holds the lock on a batch output file; the message names the holder."""


def exception_text(exc: BaseException, limit: int = 300) -> str:
    """An exception's message, cut to ``limit`` characters and printable whatever it holds (a lone
    surrogate, a ``__str__`` that raises): what a result records about a contained fault."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose __str__ fails still has a type
        text = ""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text[:limit] + "..." if len(text) > limit else text
