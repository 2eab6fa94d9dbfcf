"""Running one judgment on every member of a judge panel, with a member's failure kept to that member.

Why: a panel is several graders judging the same thing independently; the verdict is their
aggregate. A member whose endpoint is down (a timeout, a 401, a refused connection) must not sink
the panel: it is retired for the rest of the evaluation, the others go on, and the result names it
(``retired``), never a silent drop. A call that fails on a candidate's input (strategies/_judging/
faults.py) leaves out only that member's answer to that judgment. When no member answered a
judgment, the first error is raised: a candidate's fault fails that candidate (``contain``), any
other fault fails the evaluation, as with a single judge. A panel of one (the single ``judge``
endpoint, label None) runs the work exactly as a lone judge always did.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Generic, TypeVar

from oracle.strategies._judging.faults import caused_by_candidate, error_info
from oracle.strategies._judging.gather import gather_or_cancel

M = TypeVar("M")
T = TypeVar("T")

_MISSING: Any = object()


class Panel(Generic[M]):
    """The members of one evaluation's panel, by label, and the ones retired after a fault."""

    def __init__(self, members: list[tuple[str | None, M]]) -> None:
        if not members:
            raise ValueError("panel: no member")
        self.members = members
        self.retired: dict[str, dict[str, Any]] = {}
        """Label -> the error that retired the member (type, message, status)."""
        self._retired_errors: list[BaseException] = []

    @property
    def single(self) -> bool:
        return len(self.members) == 1

    @property
    def labels(self) -> list[str]:
        return [str(label) for label, _ in self.members]

    async def each(self, work: Callable[[M], Awaitable[T]]) -> dict[str | None, T]:
        """``work(member)`` for every member still in, at once; label -> its answer (members whose
        call failed on this judgment's input, or who were retired meanwhile, are left out)."""
        if self.single:
            label, member = self.members[0]
            return {label: await work(member)}
        live = [(label, m) for label, m in self.members if str(label) not in self.retired]
        if not live:
            raise self._retired_errors[0]
        candidate_faults: list[BaseException] = []

        async def one(label: str | None, member: M) -> Any:
            try:
                answer = await work(member)
            except Exception as exc:  # noqa: BLE001 - a member's fault is kept to it (module docstring)
                if caused_by_candidate(exc):
                    candidate_faults.append(exc)
                elif str(label) not in self.retired:
                    self.retired[str(label)] = error_info(exc)
                    self._retired_errors.append(exc)
                return _MISSING
            return _MISSING if str(label) in self.retired else answer

        answers = await gather_or_cancel(*(one(label, m) for label, m in live))
        out = {label: a for (label, _), a in zip(live, answers) if a is not _MISSING}
        if not out:
            raise (candidate_faults or self._retired_errors)[0]
        return out


__all__ = ["Panel"]
