"""The policy chain: signals -> votes -> weighted totals -> gated, normalized winner -> Route.

Pure apart from timing the call. Feasibility gates are separate from votes: an evaluator that
cannot run on the task never wins, however many votes it gets. The task's ``evaluator`` override
wins when feasible and is recorded as such. Below the confidence threshold the configured default
is used and the route says so; nothing falls back silently.

The route is built directly from values computed here with known types (mypy checks the calls);
pydantic validates routes where they come in from outside (``Route.model_validate``). Nothing is
carried from one route to the next.
"""

from __future__ import annotations

import copy
import time
from typing import Any, Callable, Mapping, Sequence

from oracle.routing._rounding import round_to
from oracle.config.model import OracleConfig
from oracle.errors import ConfigError
from oracle.routing.settings import PolicySettings
from oracle.routing.policy import Policy
from oracle.routing.route import SCHEMA_VERSION, Gate, Route, VoteRecord
from oracle.routing.signals import Signals, signal_values
from oracle.tasks.task import EVALUATORS, EvaluatorKind, Task, Trajectory


_clock = time.perf_counter_ns


def build_policies(config: OracleConfig) -> list[Policy]:
    """Instantiate the enabled, positively weighted policies named in the config, in name order.

    A name no policy is registered under (built in, ``register_policy``, or an installed plugin's
    entry point) is a ``ConfigError`` naming ``routing.policies``, before anything is routed."""
    from oracle.policies import registered_policies

    registry = registered_policies(config.routing.policies)
    unknown = sorted(set(config.routing.policies) - set(registry))
    if unknown:
        raise ConfigError(f"routing.policies: unknown policies {unknown}; known: {sorted(registry)}")
    out: list[Policy] = []
    for name in sorted(config.routing.policies):
        settings = config.routing.policies[name]
        if settings.enabled and settings.weight > 0:
            out.append(registry[name](settings))
    return out


_VERIFIER: EvaluatorKind = "verifier"
_DECISION: EvaluatorKind = "decision_judge"
_LLM: EvaluatorKind = "llm_judge"
_OK = {kind: Gate(evaluator=kind, feasible=True, reason="ok") for kind in EVALUATORS}
_DISABLED = {kind: Gate(evaluator=kind, feasible=False, reason="disabled in routing.enabled_evaluators")
             for kind in EVALUATORS}
_NOTHING_TO_CHECK = Gate(evaluator=_VERIFIER, feasible=False, reason="no tests and no reference answer")
_NOTHING_CLOSED = Gate(evaluator=_DECISION, feasible=False,
                       reason="no fixed-option question, no criteria and no claim to check")
"""Every gate there can be: immutable values, picked per route (a gate reads two booleans)."""


def gates_for(enabled: Sequence[str], checkable: bool, closed: bool) -> list[Gate]:
    """Which evaluators can run on a task at all, and why not, in the fixed evaluator order.

    ``checkable``: the task has tests or a reference; ``closed``: a fixed-option question, criteria
    or a claim to check.
    """
    return [_DISABLED[_DECISION] if _DECISION not in enabled else _OK[_DECISION] if closed else _NOTHING_CLOSED,
            _DISABLED[_LLM] if _LLM not in enabled else _OK[_LLM],
            _DISABLED[_VERIFIER] if _VERIFIER not in enabled else _OK[_VERIFIER] if checkable
            else _NOTHING_TO_CHECK]


def feasibility(signals: Signals, enabled: Sequence[str]) -> list[Gate]:
    """``gates_for`` from the signals."""
    return gates_for(enabled, signals.has_tests or signals.has_reference,
                     signals.has_closed_question or signals.n_criteria > 0 or signals.claim_checkable)


class PolicyChain:
    """Routes tasks with a fixed set of policies built once from the config."""

    def __init__(self, config: OracleConfig) -> None:
        self.config = config
        self.policies = build_policies(config)
        self.config_hash = config.hash()
        self._versions = {p.name: p.version for p in self.policies}
        # Everything a route reads from the policies and the config, looked up once here.
        # Each vote records the policy's changed settings (usually none) as its own copy.
        self._chain = [(p.vote, p.name, p.version, p.weight, p.spec().get("settings") or None)
                       for p in self.policies]
        routing = config.routing
        self._prefix_chars, self._scan_chars = routing.cue_prefix_chars, routing.scan_chars
        self._threshold = routing.threshold
        # The hardness rule of the difficulty policy (its settings), when that policy is in the chain.
        difficulty = routing.policies.get("difficulty")
        self._hardness: tuple[Callable[[Signals, Any], str | None], PolicySettings] | None = None
        if difficulty is not None and difficulty.enabled and difficulty.weight > 0:
            from oracle.policies.difficulty import hard_reason

            self._hardness = (hard_reason, difficulty)
        # The gates and the feasible evaluators for each (checkable, closed) pair: four constants of
        # the config, so a route picks its gates instead of building them.
        self._gates = {(checkable, closed): (gates, [g.evaluator for g in gates if g.feasible])
                       for checkable in (False, True) for closed in (False, True)
                       for gates in [gates_for(routing.enabled_evaluators, checkable, closed)]}

    def route(self, task: Task, trajectories: Sequence[Trajectory], *,
              history: Mapping[str, float] | None = None) -> Route:
        start = _clock()
        values = signal_values(task, trajectories, history, self._prefix_chars, self._scan_chars)
        signals = Signals.of(values)

        # Weighted totals in the fixed evaluator order: decision_judge, llm_judge, verifier.
        total_d = total_l = total_v = 0.0
        votes: list[VoteRecord] = []
        abstained: list[str] = []
        for vote_of, name, version, weight, settings in self._chain:
            vote = vote_of(signals)
            if vote is None:
                abstained.append(name)
                continue
            scores = vote.scores
            total_d += weight * scores["decision_judge"]
            total_l += weight * scores["llm_judge"]
            total_v += weight * scores["verifier"]
            # Every container in the trace is this route's own (a caller may edit its route); the
            # values the vote read are in the route's signals, so the vote names them.
            votes.append(VoteRecord(name, weight, dict(scores), vote.reason, version, tuple(vote.reads),
                                    {} if settings is None else copy.deepcopy(settings)))
        totals: dict[str, float] = {_DECISION: round_to(total_d, 9), _LLM: round_to(total_l, 9),
                                    _VERIFIER: round_to(total_v, 9)}

        threshold = self._threshold
        gates, feasible = self._gates[values["has_tests"] or values["has_reference"],
                                      values["has_closed_question"] or values["n_criteria"] > 0
                                      or values["claim_checkable"]]
        feasible_total = sum(map(totals.__getitem__, feasible))
        shares = {k: (totals[k] / feasible_total if feasible_total > 0 else 0.0) for k in feasible}
        # Highest share first; ties keep the fixed evaluator order (sorted is stable, reverse too).
        ranked = sorted(feasible, key=shares.__getitem__, reverse=True)

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
            if shares[evaluator] < threshold:
                low = True
                default = self._default_or(ranked)
                fallback = (f"confidence {shares[evaluator]:.3f} below threshold {threshold}; "
                            + (f"using default {default}" if default != evaluator
                               else f"default {default} is the vote winner"))
                evaluator = default

        runner_up = confidence = margin = None
        if evaluator:
            for k in ranked:
                if k != evaluator:
                    runner_up = k
                    break
            confidence = shares.get(evaluator, 0.0)
            if runner_up:
                margin = round_to(confidence - shares[runner_up], 6)
        return Route(
            evaluator=evaluator,  # type: ignore[arg-type]  # one of EVALUATORS (the gates' keys)
            confidence=round_to(confidence, 6) if confidence else 0.0, totals=totals, votes=votes,
            abstained=abstained, policies=dict(self._versions), gates=list(gates), runner_up=runner_up,
            margin=margin, threshold=threshold, low_confidence=low, fallback=fallback, override=override,
            claim_check=evaluator == _DECISION and values["claim_checkable"],
            hard=(self._hardness is not None
                  and (values["prior_hardness"] is not None or values["difficulty"] == "hard")
                  and self._hardness[0](signals, self._hardness[1]) is not None),
            signals=values, config_hash=self.config_hash, schema_version=SCHEMA_VERSION,
            elapsed_us=(_clock() - start) / 1000)  # whole nanoseconds: no rounding needed

    def _default_or(self, ranked: list[str]) -> str:
        default = self.config.routing.default_evaluator
        return default if default in ranked else ranked[0]
