"""Commit-first grading: the judge answers the question itself before it sees any candidate.

Why: a grader that reads a fluent wrong answer first tends to be talked into it. When a question
has a short answer and the task gives no reference, the judge first answers it alone (the task and
nothing else: no candidate, no reference), one call per judge (each panel member commits its own),
written into the ledger like any call; then it grades every candidate against its own answer,
which the prompt marks as the judge's own and fallible (templates/own_answer_section_v1.txt). The
result keeps each judge's answer (``details.commit_first``).

It applies only where it means something: ``llm_judge.commit_first`` is set, the task has no
reference, and every candidate's answer is at most ``commit_first_max_chars`` characters (a short
answer). Otherwise, or when the judge's own answer cannot be read even after a repair, the
candidates are graded as without it, and ``details.commit_first`` says why.
"""

from __future__ import annotations

from typing import Any, Sequence

from oracle.config.model import LLMJudgeConfig
from oracle.tasks.task import Task, Trajectory

from oracle.strategies._judging.panel import Panel
from oracle.strategies.llm_judge.calls import CallLedger, Grader, ask, judge_request
from oracle.strategies.llm_judge.parse import parse_own_answer
from oracle.strategies.llm_judge.prompts import COMMIT_SCHEMA, candidate_text, commit_messages


def not_applicable(task: Task, trajectories: Sequence[Trajectory], cfg: LLMJudgeConfig) -> str | None:
    """Why commit-first does not apply to this task (None: it does)."""
    if task.reference:
        return "the task has a reference"
    longest = max((len(candidate_text(t)) for t in trajectories), default=0)
    if longest > cfg.commit_first_max_chars:
        return f"not a short answer: a candidate has {longest} characters (commit_first_max_chars " \
               f"{cfg.commit_first_max_chars})"
    return None


async def _own_answer(grader: Grader, ledger: CallLedger, task: Task) -> tuple[str | None, dict[str, Any]]:
    req = judge_request(grader, commit_messages(task), COMMIT_SCHEMA)
    asked = await ask(grader, ledger, req, parse_own_answer, source="verbalized")
    return asked.value, asked.evidence()


async def commit(panel: Panel[Grader], ledger: CallLedger, task: Task, trajectories: Sequence[Trajectory],
                 cfg: LLMJudgeConfig) -> dict[str, Any]:
    """Ask each judge for its own answer and give it to that judge's grader; ``details.commit_first``."""
    reason = not_applicable(task, trajectories, cfg)
    if reason is not None:
        return {"applied": False, "reason": reason}
    answers = await panel.each(lambda g: _own_answer(g, ledger, task))
    own = {label: answer for label, (answer, _) in answers.items() if answer is not None}
    panel.members = [(label, g if label not in own else Grader(g.client, g.label, g.cfg, g.run_repeat, own[label]))
                     for label, g in panel.members]
    report: dict[str, Any] = {"applied": bool(own), "replies": {str(label): ev for label, (_, ev) in answers.items()}}
    if panel.single:
        report["answer"] = next(iter(own.values()), None)
    else:
        report["answers"] = {str(label): own.get(label) for label in answers}
    if not own:
        report["reason"] = "the judge's own answer could not be read"
    return report
