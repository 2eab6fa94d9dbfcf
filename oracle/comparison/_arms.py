"""The arms of a comparison: what each evaluator can judge on an item, and running it once.

An arm is one of ``verifier``, ``decision_judge``, ``llm_judge`` (each evaluator run directly,
whatever the router would say), ``routed`` (what the router picks) and ``baseline`` (no model,
oracle/comparison/_baseline.py). Running an arm gives a ``RunRecord``; an arm that cannot judge an item
gives a record with status ``n/a`` and the reason, so nothing is dropped silently.

Which label kinds an arm's verdict covers (``kinds`` of an arm on an item):

- verifier: ``passed`` and ``best``, where the task has tests or a reference;
- decision judge: questions mode ``answers``, ``passed`` and ``best``; criteria mode ``passed`` and
  ``best``; comparison mode ``best`` only (it ranks, it gives no pass verdict). Several candidates
  with no question and no criteria get one comparison question, "Which response best satisfies
  the task?", whose options are the candidate ids in the order shown;
- LLM judge: ``passed`` (pointwise score >= ``llm_judge.pass_threshold``, 0.5 when unset) and
  ``best``; ``answers`` when the task has exactly one question with two options: the judge scores
  the candidate on the criterion "The answer to this question is '<top option>': <question>", and
  a pass chooses the top-scored option, a fail the other one;
- baseline: every kind.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from oracle.comparison._baseline import baseline_verdict
from oracle.comparison._bias import pair_seats
from oracle.comparison._labels import LabelledItem
from oracle.comparison.records import RunRecord
from oracle.config.model import OracleConfig
from oracle.errors import OracleError
from oracle.results.result import EvaluationResult
from oracle.results._cost import model_cost
from oracle.tasks.task import Task, TaskInput, Trajectory

LLM_DEFAULT_THRESHOLD = 0.5
"""The LLM judge's pass threshold when the config leaves it unset (a verdict needs one)."""


@dataclass(frozen=True)
class Shown:
    """The item as one run shows it: task and candidates in the run's order."""

    task: Task
    trajectories: list[Trajectory]


def reorder(item: LabelledItem, order: str) -> Shown:
    """``given``: as in the file. ``reversed``: candidates reversed, and every choice question's
    options reversed (likelihood labels are fixed yes/no; score levels are an ordered scale)."""
    if order == "given":
        return Shown(item.task, list(item.trajectories))
    questions = [q.model_copy(update={"options": dict(reversed(list(q.options.items())))})
                 if q.type == "choice" and q.options else q for q in item.task.questions]
    task = Task.model_validate({**item.task.model_dump(), "questions": [q.model_dump() for q in questions]})
    return Shown(task, list(reversed(item.trajectories)))


def options_shown(shown: Shown) -> dict[str, list[str]]:
    out = {"candidates": [t.id for t in shown.trajectories]}
    out.update({q.id: q.labels() for q in shown.task.questions})
    return out


def label_in_options(item: LabelledItem, shown: Shown) -> bool:
    opts = options_shown(shown)
    ok = all(option in opts.get(qid, []) for qid, option in (item.label.answers or {}).items())
    if item.label.best:
        ok = ok and any(b in opts["candidates"] for b in item.label.best)
    return ok


def _two_option_question(task: Task) -> tuple[Any, str, str] | None:
    """(question, top-scored option, other option) when the task has exactly one 2-option question."""
    if len(task.questions) != 1 or len(task.questions[0].labels()) != 2:
        return None
    q = task.questions[0]
    scores = q.score_map()
    top, other = sorted(q.labels(), key=lambda label: (-scores.get(label, 0.0), label))
    return q, top, other


def arm_kinds(arm: str, item: LabelledItem, config: OracleConfig) -> tuple[list[str], str | None]:
    """(label kinds the arm's verdict covers on this item, reason when it covers none)."""
    task, trajs = item.task, item.trajectories
    present = item.label.kinds()
    if arm == "baseline":
        kinds = present
    elif arm == "verifier":
        if not (task.tests or task.reference is not None):
            return [], "the task has no tests and no reference to check against"
        kinds = [k for k in present if k in ("passed", "best")]
    elif arm == "decision_judge":
        from oracle.strategies.decision_judge.validation import decision_mode

        try:
            mode = decision_mode(decision_task(task, trajs), trajs)
        except OracleError as exc:
            return [], str(exc)
        allowed = {"questions": ("answers", "passed", "best"), "criteria": ("passed", "best"),
                   "comparison": ("best",)}.get(mode, ())
        kinds = [k for k in present if k in allowed]
    elif arm == "llm_judge":
        kinds = [k for k in present if k in ("passed", "best")]
        if "answers" in present:
            if _two_option_question(task) is None:
                if not kinds:
                    return [], ("the LLM judge scores rubrics; it answers a question only when the task has "
                                "exactly one question with two options")
            else:
                kinds.append("answers")
    else:  # routed: whatever the chosen evaluator covers, decided at run time
        kinds = present
    if not kinds:
        return [], f"{arm} gives no verdict for this item's label kinds ({', '.join(present)})"
    return kinds, None


COMPARISON_QUESTION = "Which response best satisfies the task?"


def decision_task(task: Task, trajectories: list[Trajectory]) -> Task:
    """The task the decision judge sees: several candidates and nothing to ask about each of them
    get one comparison question (a choice whose options are the candidate ids, in the order shown)."""
    if task.questions or task.criteria or len(trajectories) < 2:
        return task
    question = {"id": "best_response", "type": "choice", "instructions": COMPARISON_QUESTION,
                "options": {t.id: t.id for t in trajectories}}
    return Task.model_validate({**task.model_dump(), "questions": [question]})


def llm_task(task: Task) -> tuple[Task, tuple[str, str] | None]:
    """The task the LLM judge sees: a two-option question becomes one rubric criterion."""
    found = _two_option_question(task)
    if found is None:
        return task, None
    q, top, other = found
    criterion = f"The answer to this question is '{top}': {q.instructions}"
    data = {**task.model_dump(), "questions": [], "criteria": [{"criterion": criterion}]}
    return Task.model_validate(data), (top, other)


def arm_config(arm: str, config: OracleConfig) -> OracleConfig:
    """The LLM judge gets a pass threshold when the config has none (a verdict needs one)."""
    if arm == "llm_judge" and config.llm_judge.pass_threshold is None:
        data = config.model_dump(mode="python")
        data["llm_judge"]["pass_threshold"] = LLM_DEFAULT_THRESHOLD
        return OracleConfig.model_validate(data)
    return config


def baseline_record(base: dict[str, Any], item: LabelledItem, shown: Shown, kinds: list[str]) -> RunRecord:
    start = time.perf_counter()
    ranking, passed, f1, answers = baseline_verdict(shown.task, shown.trajectories)
    dist = {"candidates": f1} if f1 is not None else {}
    return RunRecord(**base, status="ok", evaluator=None, kinds=kinds, ranking=ranking,
                     top=ranking[0] if ranking else None, passed=dict(passed),
                     scores=dict(f1 or {}), threshold=0.5 if f1 is not None else None,
                     chosen=answers, distribution=dist, calls=0, cost_usd=0.0, spent_usd=0.0, input_tokens=0,
                     output_tokens=0, latency_ms=round((time.perf_counter() - start) * 1000, 3),
                     call_latency_ms=0.0)


def _provenance_fields(result: EvaluationResult) -> dict[str, Any]:
    prov = result.provenance
    first = prov.calls[0] if prov.calls else None
    spent = model_cost(result)  # a run with no model request cost 0, not "unknown"
    cost, calls = spent, result.calls
    hits = [c for c in prov.calls if c.cached]
    if hits:
        # A run is compared by what its answers cost, wherever they came from: answered from the
        # response cache they count as first paid (calls and cost), so a rerun from the cache
        # gives the same summary; ``cached_calls`` and ``spent_usd`` say what this run spent.
        cost = None if spent is None or prov.cached_cost_usd is None else spent + prov.cached_cost_usd
        calls = None if calls is None else calls + sum(c.attempts for c in hits)
    return dict(model_requested=prov.model_requested, models_answered=list(prov.models_answered),
                sampling_requested=dict(first.sampling_requested) if first else {},
                sampling_applied=dict(first.sampling_applied) if first else {},
                call_latency_ms=round(sum(c.latency_ms for c in prov.calls), 3) if prov.calls else None,
                input_tokens=prov.tokens.input, output_tokens=prov.tokens.output,
                cost_usd=cost, calls=calls, cached_calls=len(hits), spent_usd=spent)


def _decision_answers(result: EvaluationResult) -> tuple[dict[str, str], dict[str, dict[str, float]],
                                                         dict[str, float | None]]:
    chosen: dict[str, str] = {}
    dist: dict[str, dict[str, float]] = {}
    conf: dict[str, float | None] = {}
    if len(result.candidates) != 1:
        return chosen, dist, conf
    for q in result.candidates[0].details.get("questions", []):
        if q.get("unparsed"):
            continue
        probs = {k: float(v) for k, v in (q.get("probabilities") or {}).items()}
        dist[q["question_id"]] = probs
        if q.get("selected") is not None:
            chosen[q["question_id"]] = q["selected"]
            conf[q["question_id"]] = probs.get(q["selected"])
    return chosen, dist, conf


def evaluator_record(base: dict[str, Any], arm: str, result: EvaluationResult, *, kinds: list[str],
                     threshold: float | None, llm_options: tuple[str, str] | None,
                     question_id: str | None, wall_ms: float) -> RunRecord:
    """Read one evaluation into a record: ranking, would-pass verdicts, chosen options."""
    scores = {c.id: c.score for c in result.candidates}
    passed = {c.id: c.passed for c in result.candidates}
    chosen: dict[str, str] = {}
    dist: dict[str, dict[str, float]] = {}
    conf: dict[str, float | None] = {}
    if arm == "decision_judge":
        chosen, dist, conf = _decision_answers(result)
        probs = result.details.get("probabilities")
        if isinstance(probs, dict) and probs:
            dist["candidates"] = {k: float(v) for k, v in probs.items()}
            top = result.ranking[0] if result.ranking else None
            conf["candidates"] = dist["candidates"].get(top) if top else None
    elif arm == "llm_judge" and llm_options is not None and question_id is not None and result.candidates:
        verdict = result.candidates[0].passed
        if verdict is not None:
            chosen[question_id] = llm_options[0] if verdict else llm_options[1]
    if "passed" not in kinds:
        passed = {}
    return RunRecord(**base, status=result.status.value, evaluator=result.evaluator, kinds=kinds,
                     ranking=list(result.ranking), top=result.ranking[0] if result.ranking else None,
                     passed=passed, scores=scores, threshold=threshold, chosen=chosen, distribution=dist,
                     confidence=conf, latency_ms=round(wall_ms, 3),
                     error=result.error.model_dump() if result.error else None, pairs=pair_seats(result),
                     **_provenance_fields(result))


class ArmRunner:
    """Runs evaluator arms through one ``Oracle`` per arm, all sharing one provider pool.

    Why the Oracle and not the evaluator itself: it builds each evaluator once, turns a leaked exception
    into a failed result and fills provenance the same way a routed evaluation does; the shared
    pool keeps one client (and one concurrency limit) per endpoint across every arm.
    """

    def __init__(self, config: OracleConfig, pool: Any,
                 overlays: dict[str, dict[str, dict[str, Any]]] | None = None) -> None:
        self.config = config
        self.pool = pool
        self._oracles: dict[str, Any] = {}
        self.overlays = overlays or {}
        """Item id -> config overlay from the item's rubric (thresholds); see comparison/rubrics.py."""

    def config_for(self, arm: str) -> OracleConfig:
        return self.oracle(arm).config  # type: ignore[no-any-return]

    def oracle(self, arm: str) -> Any:
        from oracle._oracle import Oracle

        if arm not in self._oracles:
            self._oracles[arm] = Oracle(arm_config(arm, self.config), providers=self.pool)
        return self._oracles[arm]

    def item_config(self, arm: str, item_id: str) -> OracleConfig:
        """The arm's config with the item's rubric overlay applied (the same config when none)."""
        base = self.config_for(arm)
        overlay = self.overlays.get(item_id)
        if not overlay:
            return base
        from oracle.rubrics.apply import config_with

        return config_with(base, overlay)  # type: ignore[no-any-return]

    def threshold(self, arm: str, item_id: str | None = None) -> float | None:
        cfg = self.item_config(arm, item_id) if item_id is not None else self.config_for(arm)
        if arm == "llm_judge":
            return cfg.llm_judge.pass_threshold
        if arm == "decision_judge":
            return cfg.decision_judge.pass_threshold
        return None

    async def run(self, base: dict[str, Any], arm: str, item: LabelledItem, shown: Shown,
                  kinds: list[str]) -> RunRecord:
        """Run evaluator ``arm`` once (never raises on evaluator faults: a failed record)."""
        task, llm_options = (llm_task(shown.task) if arm == "llm_judge" and "answers" in kinds
                             else (shown.task, None))
        if arm == "decision_judge":
            task = decision_task(task, shown.trajectories)
        oracle = self.oracle(arm)
        item_input = TaskInput(task=task, trajectories=shown.trajectories)
        start = time.perf_counter()
        # No route: an evaluator arm runs whatever the router would say (``routed`` is the arm
        # that follows the router); the context's route is optional for every evaluator.
        # The run's repeat index reaches the evaluator (``ctx.extra["repeat"]``): the judges salt
        # their cache keys with it, so repeat k of a comparison is its own sample, cached apart.
        result = await oracle.run_evaluator(item_input, None, arm, {"repeat": base["repeat"]}, providers=self.pool,
                                            config=self.item_config(arm, item.id))
        wall_ms = (time.perf_counter() - start) * 1000
        qid = shown.task.questions[0].id if llm_options is not None else None
        return evaluator_record(base, arm, result, kinds=kinds, threshold=self.threshold(arm, item.id),
                                llm_options=llm_options, question_id=qid, wall_ms=wall_ms)
