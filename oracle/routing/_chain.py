"""The policy chain: signals -> votes -> weighted totals -> gated, normalized winner -> Route.

Pure apart from timing the call. Feasibility gates are separate from votes: an evaluator that
cannot run on the task never wins, however many votes it gets. The task's ``evaluator`` override
wins when feasible and is recorded as such. Below the confidence threshold the configured default
is used and the route says so; nothing falls back silently.

The route is built directly from values computed here with known types (mypy checks the calls);
pydantic validates routes where they come in from outside (``route_adapter``). Nothing is carried
from one route to the next.
"""

from __future__ import annotations

import copy
import time
from typing import Callable, Mapping, Sequence

from oracle.config.model import OracleConfig
from oracle.errors import ConfigError
from oracle.routing.policy import Policy
from oracle.routing.route import SCHEMA_VERSION, Gate, Route, VoteRecord
from oracle.routing.settings import DifficultySettings, ReferenceAnswerSettings
from oracle.routing.signals import ANSWER_KEY_CHARS, Signals, extract
from oracle.tasks.task import EvaluatorKind, Task, Trajectory


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


def gates_for(enabled: Sequence[str], checkable: bool, closed: bool) -> list[Gate]:
    """Which evaluators can run on a task at all, and why not, in the fixed evaluator order.

    ``checkable``: the task has tests or a reference; ``closed``: a fixed-option question, criteria
    or a claim to check.
    """
    def gate(kind: str, feasible: bool, why_not: str) -> Gate:
        if kind not in enabled:
            return Gate(evaluator=kind, feasible=False, reason="disabled in routing.enabled_evaluators")
        return Gate(evaluator=kind, feasible=feasible, reason="ok" if feasible else why_not)

    return [gate(_DECISION, closed, "no fixed-option question, no criteria and no claim to check"),
            gate(_LLM, True, ""), gate(_VERIFIER, checkable, "no tests and no reference answer")]


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
        # The one answer-key threshold (signals.has_answer_key) is the reference_answer policy's.
        answer_key = routing.policies.get("reference_answer")
        self._answer_key_chars = (answer_key.short_reference_chars if isinstance(answer_key, ReferenceAnswerSettings)
                                  else ANSWER_KEY_CHARS)
        # The hardness rule of the difficulty policy and its settings, when that policy is in the chain.
        difficulty = routing.policies.get("difficulty")
        self._hardness: tuple[Callable[[Signals, DifficultySettings], str | None], DifficultySettings] | None
        self._hardness = None
        if isinstance(difficulty, DifficultySettings) and difficulty.enabled and difficulty.weight > 0:
            from oracle.policies.difficulty import hard_reason

            self._hardness = (hard_reason, difficulty)
        # The gates and the feasible evaluators for each (checkable, closed) pair: four constants of
        # the config.
        self._gates: dict[tuple[bool, bool], tuple[list[Gate], list[str]]] = {}
        for checkable in (False, True):
            for closed in (False, True):
                gates = gates_for(routing.enabled_evaluators, checkable, closed)
                self._gates[checkable, closed] = (gates, [g.evaluator for g in gates if g.feasible])

    def route(self, task: Task, trajectories: Sequence[Trajectory], *,
              history: Mapping[str, float] | None = None) -> Route:
        start = time.perf_counter_ns()
        signals = extract(task, trajectories, history=history, prefix_chars=self._prefix_chars,
                          scan_chars=self._scan_chars, answer_key_chars=self._answer_key_chars)

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
            votes.append(VoteRecord(policy=name, weight=weight, scores=dict(scores), reason=vote.reason,
                                    version=version, reads=tuple(vote.reads),
                                    settings={} if settings is None else copy.deepcopy(settings)))
        totals: dict[str, float] = {_DECISION: round(total_d, 9), _LLM: round(total_l, 9),
                                    _VERIFIER: round(total_v, 9)}

        threshold = self._threshold
        gates, feasible = self._gates[signals.has_tests or signals.has_reference,
                                      signals.has_closed_question or signals.n_criteria > 0
                                      or signals.claim_checkable]
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

        confidence, runner_up, margin = 0.0, None, None
        if evaluator is not None:
            confidence = shares[evaluator]
            for k in ranked:
                if k != evaluator:
                    runner_up = k
                    margin = round(confidence - shares[k], 6)
                    break
        return Route(
            evaluator=evaluator,  # type: ignore[arg-type]  # one of EVALUATORS (the gates' keys)
            confidence=round(confidence, 6), totals=totals, votes=votes,
            abstained=abstained, policies=dict(self._versions), gates=list(gates), runner_up=runner_up,
            margin=margin, threshold=threshold, low_confidence=low, fallback=fallback, override=override,
            claim_check=evaluator == _DECISION and signals.claim_checkable,
            hard=(self._hardness is not None
                  and (signals.prior_hardness is not None or signals.difficulty == "hard")
                  and self._hardness[0](signals, self._hardness[1]) is not None),
            signals=signals.as_dict(), config_hash=self.config_hash, schema_version=SCHEMA_VERSION,
            elapsed_us=(time.perf_counter_ns() - start) / 1000)

    def _default_or(self, ranked: list[str]) -> str:
        default = self.config.routing.default_evaluator
        return default if default in ranked else ranked[0]
