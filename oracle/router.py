"""The policy chain: signals -> votes -> weighted totals -> gated, normalized winner -> Route.

Pure apart from timing the call. Feasibility gates are separate from votes: an evaluator that
cannot run on the task never wins, however many votes it gets. The task's ``evaluator`` override
wins when feasible and is recorded as such. Below the confidence threshold the configured default
is used and the route says so; nothing falls back silently.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Mapping, Sequence

from oracle.config import OracleConfig
from oracle.policy import Policy
from oracle._fastmodel import build
from oracle.route import SCHEMA_VERSION, Gate, Route, VoteRecord
from oracle.signals import Signals, extract_values
from oracle.task import EVALUATORS, Task, Trajectory


def build_policies(config: OracleConfig) -> list[Policy]:
    """Instantiate the enabled, positively weighted policies named in the config, in name order."""
    from policies import registered_policies

    registry = registered_policies()
    out: list[Policy] = []
    for name in sorted(config.routing.policies):
        settings = config.routing.policies[name]
        if settings.enabled and settings.weight > 0:
            out.append(registry[name](weight=settings.weight))
    return out


def feasibility(signals: Signals, enabled: Sequence[str]) -> list[Gate]:
    """Which evaluators can run on this task at all, and why not."""
    return list(_gates(tuple(enabled), signals.has_tests or signals.has_reference,
                       signals.has_closed_question or signals.n_criteria > 0))


@lru_cache(maxsize=64)
def _gates(enabled: tuple[str, ...], checkable: bool, closed: bool) -> tuple[Gate, ...]:
    gates = []
    for kind in EVALUATORS:
        if kind not in enabled:
            gates.append(Gate(evaluator=kind, feasible=False, reason="disabled in routing.enabled_evaluators"))
        elif kind == "verifier" and not checkable:
            gates.append(Gate(evaluator=kind, feasible=False, reason="no tests and no reference answer"))
        elif kind == "decision_judge" and not closed:
            gates.append(Gate(evaluator=kind, feasible=False, reason="no fixed-option question and no criteria"))
        else:
            gates.append(Gate(evaluator=kind, feasible=True, reason="ok"))
    return tuple(gates)


class PolicyChain:
    """Routes tasks with a fixed set of policies built once from the config."""

    def __init__(self, config: OracleConfig) -> None:
        self.config = config
        self.policies = build_policies(config)
        self.config_hash = config.hash()
        self._specs = {p.name: p.spec() for p in self.policies}

    def route(self, task: Task, trajectories: Sequence[Trajectory], *,
              history: Mapping[str, float] | None = None) -> Route:
        start = time.perf_counter()
        routing = self.config.routing
        signal_values = extract_values(task, trajectories, history=history,
                                       prefix_chars=routing.cue_prefix_chars)
        signals = build(Signals, signal_values)

        totals = {kind: 0.0 for kind in EVALUATORS}
        votes: list[VoteRecord] = []
        abstained: list[str] = []
        for policy in self.policies:
            vote = policy.vote(signals)
            if vote is None:
                abstained.append(policy.name)
                continue
            for kind, share in vote.scores.items():
                totals[kind] += policy.weight * share
            votes.append(build(VoteRecord, {
                "policy": policy.name, "weight": policy.weight, "scores": dict(vote.scores),
                "reason": vote.reason, "signals": {k: signal_values[k] for k in vote.reads},
                "spec": self._specs[policy.name]}))
        totals = {k: round(v, 9) for k, v in totals.items()}

        gates = feasibility(signals, routing.enabled_evaluators)
        feasible = [g.evaluator for g in gates if g.feasible]
        feasible_total = sum(totals[k] for k in feasible)
        shares = {k: (totals[k] / feasible_total if feasible_total > 0 else 0.0) for k in feasible}
        # Deterministic order: highest share first, then the fixed evaluator order.
        ranked = sorted(feasible, key=lambda k: (-shares[k], EVALUATORS.index(k)))

        evaluator: str | None
        fallback: str | None = None
        override = False
        low = False
        if task.evaluator is not None:
            if task.evaluator in feasible:
                evaluator, override = task.evaluator, True
            else:
                why = next(g.reason for g in gates if g.evaluator == task.evaluator)
                evaluator, override, low = None, True, True
                fallback = f"override {task.evaluator} is infeasible: {why}"
        elif not feasible:
            evaluator, low, fallback = None, True, "no feasible evaluator"
        elif feasible_total <= 0:
            evaluator, low = self._default_or(ranked), True
            fallback = f"no policy voted for a feasible evaluator; using default {evaluator}"
        else:
            evaluator = ranked[0]
            if shares[evaluator] < routing.threshold:
                low = True
                default = self._default_or(ranked)
                fallback = (f"confidence {shares[evaluator]:.3f} below threshold {routing.threshold}; "
                            + (f"using default {default}" if default != evaluator
                               else f"default {default} is the vote winner"))
                evaluator = default

        runner_up = next((k for k in ranked if k != evaluator), None) if evaluator else None
        confidence = shares.get(evaluator, 0.0) if evaluator else 0.0
        margin = (confidence - shares[runner_up]) if (evaluator and runner_up) else None
        return build(Route, {
            "evaluator": evaluator, "confidence": round(confidence, 6), "totals": totals, "votes": votes,
            "abstained": abstained, "gates": gates, "runner_up": runner_up,
            "margin": None if margin is None else round(margin, 6), "threshold": routing.threshold,
            "low_confidence": low, "fallback": fallback, "override": override, "signals": signal_values,
            "config_hash": self.config_hash, "schema_version": SCHEMA_VERSION,
            "elapsed_us": round((time.perf_counter() - start) * 1e6, 1)})

    def _default_or(self, ranked: list[str]) -> str:
        default = self.config.routing.default_evaluator
        return default if default in ranked else ranked[0]
