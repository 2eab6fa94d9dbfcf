"""The ``baseline`` arm: no model, no code run; what agreement costs nothing.

Defined exactly, so kappa and agreement can be read against it:

- where the task has a reference answer, each candidate's token F1 with it (SQuAD-style: lower-
  cased word tokens, multiset overlap); a candidate passes at F1 >= 0.5, and the best is the
  highest F1 (the first shown on ties);
- otherwise the first candidate shown is best and passes, every other candidate fails;
- a question (``answers`` labels) gets its first option shown.

It is pure: the same item in the same order gives the same verdict, so it never changes between
repeats, and under order reversal it flips exactly as far as position decides it.
"""

from __future__ import annotations

import re
from collections import Counter

from oracle.tasks.task import Task, Trajectory

PASS_F1 = 0.5
_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def token_f1(candidate: str, reference: str) -> float:
    """Harmonic mean of token precision and recall (0.0 when either side has no tokens)."""
    cand, ref = tokens(candidate), tokens(reference)
    if not cand or not ref:
        return 0.0
    common = sum((Counter(cand) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(cand), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def candidate_text(t: Trajectory) -> str:
    return t.answer or t.code or ""


def baseline_verdict(task: Task, trajectories: list[Trajectory]
                     ) -> tuple[list[str], dict[str, bool], dict[str, float] | None, dict[str, str]]:
    """(ranking, passed per candidate, F1 per candidate or None, first option per question)."""
    answers = {q.id: q.labels()[0] for q in task.questions}
    if task.reference is not None:
        f1 = {t.id: round(token_f1(candidate_text(t), task.reference), 6) for t in trajectories}
        position = {t.id: i for i, t in enumerate(trajectories)}
        ranking = sorted(f1, key=lambda cid: (-f1[cid], position[cid]))
        return ranking, {cid: v >= PASS_F1 for cid, v in f1.items()}, f1, answers
    ids = [t.id for t in trajectories]
    return ids, {cid: i == 0 for i, cid in enumerate(ids)}, None, answers
