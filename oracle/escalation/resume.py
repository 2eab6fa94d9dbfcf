"""Applying a human answer: map it onto the task, re-route, re-evaluate, keep both in the trace.

How an answer is applied depends on what it is, not on who asked:

- a choice naming an evaluator sets ``task.evaluator`` (the route records the override);
- ``rerun`` re-evaluates unchanged (a sandbox that failed may work now);
- ``accept`` keeps the first verdict, now signed off by a person;
- a choice naming a candidate, or ``pass``/``fail`` for a single candidate, is the human verdict:
  the evaluator still runs again, and the final result carries both its own view and the person's;
- free text is kept in ``task.metadata["human_answers"]`` with the question it answers; the judges
  read it beside the prompt (``Task.clarifications``), so they see the missing fact the question
  asked for, while the prompt itself is left as it is (a code prompt that a candidate's function
  body is joined to must stay code).

The final ``OracleResult`` has status ``escalated`` when the verdict reflects the answer, and its
``history`` holds the first evaluation, the answer and a summary of the second evaluation.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from oracle._internal.log import get_logger

from oracle.errors import NotAnswered
from oracle.escalation.human import HumanAnswer, ask_human
from oracle.escalation.store import EscalationStore
from oracle.results.result import Escalation, OracleResult, Status
from oracle.tasks.task import EVALUATORS, TaskInput

log = get_logger("oracle.resume")

Reevaluate = Callable[[TaskInput], Awaitable[OracleResult]]
"""One route + evaluation + escalation check of a task, no human in the loop: the Oracle's
``evaluate_once`` (with the caller's connections bound). Resuming is handed this instead of the
Oracle, so escalation stays below the Oracle that uses it."""

_UNRESOLVED = (Status.failed, Status.unparsed)


@dataclass
class AppliedAnswer:
    """The task after the answer, the verdict it implies, and what changed (for the trace)."""

    item: TaskInput
    verdict: dict[str, Any] | None = None
    rerun: bool = True
    changes: list[str] = field(default_factory=list)


def apply_answer(item: TaskInput, request: Escalation, answer: HumanAnswer) -> AppliedAnswer:
    """Map an answer onto the task (pure)."""
    task = item.task
    ids = [t.id for t in item.trajectories]
    updates: dict[str, Any] = {}
    applied = AppliedAnswer(item=item)
    choice = answer.choice
    if choice in EVALUATORS:
        updates["evaluator"] = choice
        applied.changes.append(f"task.evaluator = {choice!r}")
    elif choice == "accept":
        applied.rerun = False
        applied.verdict = {"accepted": True}
        applied.changes.append("first verdict accepted")
    elif choice == "rerun":
        applied.changes.append("re-run requested")
    elif choice in ids:
        applied.verdict = {"best": [choice]}
        applied.changes.append(f"human verdict: {choice!r} is best")
    elif choice in ("pass", "fail") and len(ids) == 1:
        applied.verdict = {"candidate": ids[0], "passed": choice == "pass"}
        applied.changes.append(f"human verdict: {ids[0]!r} {'passes' if choice == 'pass' else 'fails'}")
    elif choice is not None:
        applied.changes.append(f"choice {choice!r} recorded")
    text = answer.text.strip()
    if text:
        earlier = task.metadata.get("human_answers", [])
        if not isinstance(earlier, list):
            raise ValueError(f"task.metadata.human_answers: {type(earlier).__name__}, not a list (the answers "
                             "given so far are kept there)")
        answers = [*earlier, {"escalation_id": request.id, "text": text, "question": request.question}]
        updates["metadata"] = {**task.metadata, "human_answers": answers}
        applied.changes.append("answer text added to task.metadata.human_answers (the judges read it beside "
                               "the prompt; the prompt is unchanged)")
    if updates:
        # re-validate so a mapped value that breaks the task fails loudly, naming the field
        new_task = type(task).model_validate({**task.model_dump(), **updates})
        applied.item = TaskInput(task=new_task, trajectories=item.trajectories)
    return applied


def _with_verdict(res: OracleResult, verdict: dict[str, Any], answer: HumanAnswer) -> OracleResult:
    """Overlay the human verdict on the evaluator's result, keeping the evaluator's own view."""
    if res.result is None:
        return res
    result = res.result.model_copy(deep=True)
    result.details["evaluator_best"] = list(result.best)
    result.details["human_verdict"] = {**verdict, "text": answer.text or None,
                                       "answered_by": answer.answered_by}
    if "best" in verdict:
        best = verdict["best"]
        result.best = list(best)
        result.ranking = best + [c for c in result.ranking if c not in best]
    if "passed" in verdict:
        cand = result.candidate(verdict["candidate"])
        if cand is not None:
            cand.details["evaluator_passed"] = cand.passed
            cand.passed = verdict["passed"]
    return res.model_copy(update={"result": result})


async def aresume(reevaluate: Reevaluate, item: TaskInput, first: OracleResult, request: Escalation,
                  answer: HumanAnswer) -> OracleResult:
    """Apply ``answer`` to ``request`` and evaluate again with ``reevaluate``; never raises on
    evaluator faults."""
    applied = apply_answer(item, request, answer)
    history = list(first.history) + [
        {"kind": "evaluation", "attempt": len([h for h in first.history if h.get("kind") == "evaluation"]) + 1,
         "result": first.model_copy(update={"history": []}).model_dump(mode="json")},
        {"kind": "human_answer", "escalation_id": request.id, "reason": request.reason,
         "question": request.question, "options": request.options, "text": answer.text or None,
         "choice": answer.choice, "answered_by": answer.answered_by, "applied": applied.changes},
    ]
    answered = request.model_copy(update={"answer": answer.choice or answer.text})
    if not applied.rerun:
        final = first.model_copy(update={"escalation": answered})
    else:
        final = await reevaluate(applied.item)
        history.append({"kind": "evaluation", "attempt": history[-2]["attempt"] + 1,
                        "summary": {"evaluator": final.route.evaluator, "status": final.status.value,
                                    "best": final.result.best if final.result else [],
                                    "override": final.route.override,
                                    "escalation": final.escalation.reason if final.escalation else None}})
        # A follow-up request on the same question is settled by the answer; a new one is kept.
        if final.escalation is None or final.escalation.reason == request.reason or applied.verdict:
            final = final.model_copy(update={"escalation": answered})
    if applied.verdict:
        final = _with_verdict(final, applied.verdict, answer)
    status = final.status
    if applied.verdict or status not in _UNRESOLVED:
        status = Status.escalated
    if final.escalation is not None and final.escalation.id != request.id and final.escalation.blocking:
        status = Status.pending  # the answer led to a new blocking question
    return final.model_copy(update={"status": status, "history": history})


async def settle(reevaluate: Reevaluate, item: TaskInput, res: OracleResult, *, human: Any = None,
                 store: EscalationStore | None = None) -> OracleResult:
    """Ask the human now if there is one; otherwise file the request and mark a blocking one pending."""
    request = res.escalation
    if request is None:
        return res
    answer = await ask_human(human, request) if human is not None else None
    if answer is not None:
        final = await aresume(reevaluate, item, res, request, answer)
        if store is not None:
            await asyncio.to_thread(_record_answered, store, request, item, res, answer, final)
        return final
    if store is not None:
        await asyncio.to_thread(store.put, request, item, res)
        log.info("escalation_stored", escalation_id=request.id, task_id=item.task.id, reason=request.reason,
                 blocking=request.blocking)
    if request.blocking and store is not None:
        return res.model_copy(update={"status": Status.pending})
    return res


def _record_answered(store: EscalationStore, request: Escalation, item: TaskInput, first: OracleResult,
                     answer: HumanAnswer, final: OracleResult) -> None:
    store.put(request, item, first)
    # The human in this process just answered this evaluation: that answer is the one to keep,
    # even when an earlier evaluation of the same task filed (and answered) the same request.
    store.answer(request.id, answer, replace=True)
    store.resolve(request.id, final)


async def aresume_stored(reevaluate: Reevaluate, store: EscalationStore, esc_id: str) -> OracleResult:
    """Resume a stored request that has an answer (``reevaluate``: an Oracle's ``evaluate_once``);
    the final result is written back to the store.

    Raises ``NotAnswered`` when the request has no answer yet, ``EscalationNotFound`` for an
    unknown id, ``ValueError`` (naming the store) when the answer does not apply to the stored task."""
    entry = await asyncio.to_thread(store.get, esc_id)
    if entry.answer is None:
        raise NotAnswered(f"escalation {entry.id} in {store.path}: no answer yet")
    try:  # the stored task and answer must fit together before anything runs; if not, name the store
        apply_answer(entry.item, entry.request, entry.answer)
    except ValueError as exc:
        raise ValueError(f"escalation {entry.id} in {store.path}: the stored answer does not apply to the "
                         f"stored task: {exc}") from None
    final = await aresume(reevaluate, entry.item, entry.first_result, entry.request, entry.answer)
    if final.status == Status.pending and final.escalation is not None:
        applied = apply_answer(entry.item, entry.request, entry.answer).item
        await asyncio.to_thread(store.put, final.escalation, applied, final)
    await asyncio.to_thread(store.resolve, entry.id, final)
    return final
