"""What a result reports about its graders: a panel's members and their agreement, the spread over repeats.

Why apart from the verdict: the verdict is computed on the combined judgments
(strategies/llm_judge/combine.py); whether the graders agreed, and how much one grader varied
between repeats, is evidence about the judging, not about the candidates. It goes under
``details.panel`` and ``details.repeat_spread``, and ``panel_disagreement`` (a typed concern,
strategies/llm_judge/concerns.py) is raised from ``details.panel``'s ``split_criteria`` and
``split_pairs``.
"""

from __future__ import annotations

from typing import Any, Sequence

from oracle.config.model import LLMJudgeConfig
from oracle.results.result import EvaluationResult

from oracle.strategies._judging.panel import Panel
from oracle.strategies.llm_judge.pointwise import spread
from oracle.strategies.llm_judge.ranking import PairVerdict


def panel_report(panel: Panel[Any], result: EvaluationResult, cfg: LLMJudgeConfig) -> dict[str, Any] | None:
    """``details.panel`` of a panel's result (None for the single judge): each member's scores per
    candidate and criterion, the spread per criterion (max - min of the members' normalized
    scores) and whether it is within ``panel_disagreement``, each member's verdict per pair with its
    order consistency, and which criteria and pairs the members split on."""
    if panel.single:
        return None
    scores: dict[str, Any] = {}
    agreement: dict[str, Any] = {}
    split_criteria: dict[str, list[str]] = {}
    for c in result.candidates:
        block = c.details.get("panel")
        if not isinstance(block, dict):
            continue
        scores[c.id] = block.get("members", {})
        agreement[c.id] = block.get("agreement", {})
        split = [crit for crit, a in agreement[c.id].items() if not a["within"]]
        if split:
            split_criteria[c.id] = split
    pairs: list[dict[str, Any]] = []
    split_pairs: list[list[str]] = []
    for p in result.details.get("pairs") or []:
        members = p.get("members")
        if not isinstance(members, dict):
            continue
        picks = {label: {"winner": m.get("winner"), "order_consistent": m.get("order_consistent")}
                 for label, m in members.items()}
        read = [m["winner"] for m in members.values() if m.get("order_consistent") is not None]
        agree = len(set(read)) <= 1
        pairs.append({"a": p["a"], "b": p["b"], "winner": p["winner"], "members": picks, "agree": agree})
        if not agree:
            split_pairs.append([p["a"], p["b"]])
    return {"members": panel.labels, "aggregate": cfg.panel_aggregate, "threshold": cfg.panel_disagreement,
            "retired": dict(panel.retired), "scores": scores, "agreement": agreement, "pairs": pairs,
            "split_criteria": split_criteria, "split_pairs": split_pairs}


def _repeat_winners(v: PairVerdict) -> list[tuple[str, int, str | None]]:
    """(grader, repeat index, winner) for each read repeat of a pair's verdict."""
    out: list[tuple[str, int, str | None]] = []

    def of(source: str, evidence: dict[str, Any]) -> None:
        for i, r in enumerate(evidence.get("repeats") or []):
            if r.get("order_consistent") is not None:
                out.append((source, i, r.get("winner")))

    of("", v.evidence)
    members = v.evidence.get("members")
    if isinstance(members, dict):
        for label, m in members.items():
            of(str(label), m)
    return out


def pairwise_repeat_spread(verdicts: Sequence[PairVerdict], ids: Sequence[str]) -> dict[str, Any]:
    """Per candidate, its win rate in each repeat (a tie counts half; per panel member when there is
    a panel), and their spread: grader variance, reported apart from the verdict."""
    rates: dict[str, dict[tuple[str, int], list[float]]] = {cid: {} for cid in ids}
    for v in verdicts:
        if v.failed:
            continue
        for source, i, winner in _repeat_winners(v):
            for cid in (v.a, v.b):
                point = 1.0 if winner == cid else 0.5 if winner is None else 0.0
                rates[cid].setdefault((source, i), []).append(point)
    out: dict[str, Any] = {}
    for cid, by_repeat in rates.items():
        values = [sum(p) / len(p) for _, p in sorted(by_repeat.items())]
        out[cid] = dict(spread(values), win_rates=values) if values else None
    return out
