"""Decision judge vs LLM judge on HaluEval's human yes/no hallucination labels.

Each item is one ChatGPT response to a user query, labelled by humans: does it contain hallucinated
(false or unverifiable) content? Both judges run through the real strategies against the configured
model (default: the embedded SmolLM2, started here if nothing answers at the judge URL):

- decision judge: one choice question, "Does the response contain hallucinated information?"
  with options yes/no, asked in both option orders (yes-first and no-first), ``--repeats`` times
  each. Its verdict is the selected option.
- LLM judge (when ``strategies/llm_judge.py`` exists): pointwise rubric with the criterion "contains
  only accurate, verifiable information", ``--repeats`` times; verdict "no" (no hallucination) when
  it passes ``pass_threshold`` 0.5, else "yes". A pointwise rubric has no option order, so the
  reversal column is n/a for it.

Printed per judge: agreement with the labels (over every run; unparsed/failed runs count as misses
and are counted separately), Cohen's kappa, items whose verdict changed between repeats, items whose
verdict changed when the option order was reversed, the share of "yes" verdicts (a constant answer
shows up here), median latency, calls and tokens per evaluation.

Items: ``halueval/general_data.json`` records with a numeric ID, excluding every key listed in
``suite/reserved_keys.json`` and every record whose normalized prompt equals a reserved record's
prompt (any data set). Short items (query + response <= ``--max-chars``) keep the CPU model fast;
the sample is balanced (half yes, half no) and seeded.

    python benchmarks/decision_vs_generative.py                  # 30 items, both judges, local model
    python benchmarks/decision_vs_generative.py --judges decision --items 40
    python benchmarks/decision_vs_generative.py --config my.yaml --out results.json
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oracle.config import LLMJudgeConfig, OracleConfig  # noqa: E402
from oracle.local_model import LocalModelServer, probe  # noqa: E402
from oracle.providers.openai_chat import LOCAL_MODEL_ALIAS  # noqa: E402
from oracle.questions import Question  # noqa: E402
from oracle.result import EvaluationResult  # noqa: E402
from oracle.strategy import EvaluationContext, strategy_factory  # noqa: E402
from oracle.task import Task, Trajectory  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
QUESTION = "Does the response contain hallucinated (false or unverifiable) information?"
OPTIONS = {"yes": "it contains false or unverifiable claims",
           "no": "everything it states is accurate and verifiable"}
CRITERION = ("The response contains only accurate, verifiable information: "
             "no hallucinated, false or unverifiable claims.")


# --- items ----------------------------------------------------------------------------------------

def _norm(text: str) -> str:
    return " ".join(str(text).split()).lower()


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def reserved_prompts(keys: set[str]) -> set[str]:
    """Normalized prompts of every reserved record, whichever data set it lives in."""
    prompts: set[str] = set()
    by_prefix: dict[str, list[str]] = {}
    for key in keys:
        head, _, tail = key.rpartition(":")
        by_prefix.setdefault(head, []).append(tail)
    for head, ids in by_prefix.items():
        kind, _, sub = head.partition(":")
        if kind == "llmbar":
            rows = json.loads((DATA / "llmbar" / sub / "dataset.json").read_text(encoding="utf-8"))
            prompts |= {_norm(rows[int(i)]["input"]) for i in ids}
        elif kind == "hhh":
            rows = json.loads((DATA / "hhh_alignment" / sub / "task.json").read_text(encoding="utf-8"))["examples"]
            prompts |= {_norm(rows[int(i)]["input"]) for i in ids}
        elif kind == "pandalm":
            rows = {str(x["idx"]): x for x in json.loads((DATA / "pandalm" / "testset-v1.json").read_text())}
            for i in ids:
                x = rows[i]
                prompts.add(_norm(x["instruction"] + (("\n\n" + x["input"]) if x["input"].strip() else "")))
        elif kind == "truthfulqa":
            with (DATA / "truthfulqa" / "TruthfulQA.csv").open(encoding="utf-8-sig") as fh:
                rows = list(csv.DictReader(fh))
            prompts |= {_norm(rows[int(i)]["Question"]) for i in ids}
        elif kind == "halueval-general":
            wanted = set(ids)
            prompts |= {_norm(x["user_query"]) for x in _jsonl(DATA / "halueval" / "general_data.json")
                        if str(x["ID"]) in wanted}
        elif kind == "halueval-qa":
            rows = _jsonl(DATA / "halueval" / "qa_one-turn_data.json")
            prompts |= {_norm(f"Knowledge: {rows[int(i)]['knowledge']}\n\nQuestion: {rows[int(i)]['question']}")
                        for i in ids}
    return prompts


def load_items(n: int, *, max_chars: int, seed: int) -> list[dict[str, Any]]:
    doc = json.loads((DATA / "suite" / "reserved_keys.json").read_text(encoding="utf-8"))
    keys = set(doc["keys"])
    banned_prompts = reserved_prompts(keys)
    pool: dict[str, list[dict[str, Any]]] = {"yes": [], "no": []}
    for x in _jsonl(DATA / "halueval" / "general_data.json"):
        if not str(x["ID"]).isdigit() or f"halueval-general:{x['ID']}" in keys:
            continue
        if _norm(x["user_query"]) in banned_prompts or x["hallucination"] not in pool:
            continue
        if len(x["user_query"]) + len(x["chatgpt_response"]) > max_chars:
            continue
        pool[x["hallucination"]].append(x)
    rng = random.Random(f"decision_vs_generative:{seed}")
    items = []
    for label in ("yes", "no"):
        rows = sorted(pool[label], key=lambda x: int(x["ID"]))
        rng.shuffle(rows)
        items += rows[: (n + (label == "yes")) // 2]
    return sorted(items, key=lambda x: int(x["ID"]))


# --- judges ---------------------------------------------------------------------------------------

@dataclass
class Run:
    item_id: str
    label: str
    order: str
    repeat: int
    verdict: str | None
    status: str
    latency_ms: float
    calls: int
    tokens: int | None
    error: str | None = None
    p_yes: float | None = None
    """decision judge: P(yes) read for this run (for the order-averaged verdict)."""


@dataclass
class JudgeReport:
    name: str
    runs: list[Run] = field(default_factory=list)


def decision_task(item: dict[str, Any], order: str) -> Task:
    options = OPTIONS if order == "yes-first" else dict(reversed(list(OPTIONS.items())))
    q = Question(id="hallucination", type="choice", instructions=QUESTION, options=options,
                 scores={"yes": 1, "no": 5})
    return Task(id=f"halueval-general:{item['ID']}", prompt=item["user_query"], questions=[q])


def decision_verdict(result: EvaluationResult) -> str | None:
    if not result.candidates or result.candidates[0].score is None:
        return None
    (q,) = result.candidates[0].details["questions"]
    return q.get("selected")


def decision_p_yes(result: EvaluationResult) -> float | None:
    if not result.candidates or result.candidates[0].score is None:
        return None
    (q,) = result.candidates[0].details["questions"]
    return q["probabilities"].get("yes")


def llm_task(item: dict[str, Any]) -> Task:
    return Task(id=f"halueval-general:{item['ID']}", prompt=item["user_query"], criteria=[CRITERION])


def llm_verdict(result: EvaluationResult) -> str | None:
    if not result.candidates or result.candidates[0].passed is None:
        return None
    return "no" if result.candidates[0].passed else "yes"


def _tokens(result: EvaluationResult) -> int | None:
    tokens = result.provenance.tokens.model_dump()
    if tokens.get("input") is None or tokens.get("output") is None:
        return None
    return int(tokens["input"]) + int(tokens["output"])


async def run_judge(kind: str, config: OracleConfig, items: list[dict[str, Any]], orders: list[str],
                    repeats: int, log: Any) -> JudgeReport:
    judge = strategy_factory(kind)()
    report = JudgeReport(kind)
    for item in items:
        answer = Trajectory(id="response", answer=item["chatgpt_response"])
        for order in orders:
            task = decision_task(item, order) if kind == "decision_judge" else llm_task(item)
            for r in range(repeats):
                start = time.perf_counter()
                result = await judge.evaluate(EvaluationContext(task=task, trajectories=(answer,), config=config))
                wall_ms = (time.perf_counter() - start) * 1000
                verdict = decision_verdict(result) if kind == "decision_judge" else llm_verdict(result)
                run = Run(item_id=str(item["ID"]), label=item["hallucination"], order=order, repeat=r,
                          verdict=verdict, status=result.status.value, latency_ms=wall_ms,
                          calls=result.calls, tokens=_tokens(result),
                          error=result.error.message if result.error else None,
                          p_yes=decision_p_yes(result) if kind == "decision_judge" else None)
                report.runs.append(run)
                print(json.dumps({"judge": kind, **run.__dict__}), file=log, flush=True)
    return report


# --- metrics --------------------------------------------------------------------------------------

def kappa(pairs: list[tuple[str, str | None]]) -> float | None:
    """Cohen's kappa of verdicts vs labels (yes/no); a missing verdict counts as its own class."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(v == lab for lab, v in pairs) / n
    classes = {"yes", "no", None}
    expected = sum((sum(lab == c for lab, _ in pairs) / n) * (sum(v == c for _, v in pairs) / n)
                   for c in classes)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def summarize(report: JudgeReport) -> dict[str, Any]:
    runs = report.runs
    by_item: dict[str, list[Run]] = {}
    for r in runs:
        by_item.setdefault(r.item_id, []).append(r)
    changed_between_repeats = 0
    flipped_by_order = 0
    orders = sorted({r.order for r in runs})
    for item_runs in by_item.values():
        per_order = {o: [r.verdict for r in item_runs if r.order == o] for o in orders}
        if any(len(set(v)) > 1 for v in per_order.values()):
            changed_between_repeats += 1
        if len(orders) == 2:
            a, b = (per_order[o] for o in orders)
            if any(x != y for x, y in zip(a, b)):
                flipped_by_order += 1
    verdicts = [r.verdict for r in runs]
    tokens = [r.tokens for r in runs if r.tokens is not None]
    first = [r.latency_ms for r in runs if r.repeat == 0]
    averaged = _order_averaged_agreement(by_item) if len(orders) == 2 else None
    return {
        "judge": report.name, "items": len(by_item), "runs": len(runs),
        "agreement": sum(r.verdict == r.label for r in runs) / len(runs) if runs else None,
        "kappa": kappa([(r.label, r.verdict) for r in runs]),
        "unscored_runs": sum(v is None for v in verdicts),
        "failed_runs": sum(r.status == "failed" for r in runs),
        "yes_share": sum(v == "yes" for v in verdicts) / len(runs) if runs else None,
        "items_changed_between_repeats": changed_between_repeats,
        "items_flipped_by_order_reversal": flipped_by_order if len(orders) == 2 else None,
        "order_averaged_agreement": averaged,
        "median_latency_ms": statistics.median(r.latency_ms for r in runs) if runs else None,
        "median_latency_first_repeat_ms": statistics.median(first) if first else None,
        "calls_per_evaluation": statistics.mean(r.calls for r in runs) if runs else None,
        "tokens_per_evaluation": statistics.mean(tokens) if tokens else None,
        "errors": sorted({r.error for r in runs if r.error})[:3],
    }


def _order_averaged_agreement(by_item: dict[str, list[Run]]) -> float | None:
    """Agreement when P(yes) is averaged over both option orders (first repeat): position bias removed."""
    hits = total = 0
    for item_runs in by_item.values():
        ps = [r.p_yes for r in item_runs if r.repeat == 0]
        if len(ps) != 2 or any(p is None for p in ps):
            continue
        total += 1
        hits += ("yes" if sum(ps) / 2 > 0.5 else "no") == item_runs[0].label
    return hits / total if total else None


def print_table(rows: list[dict[str, Any]]) -> None:
    def fmt(v: Any) -> str:
        if v is None:
            return "n/a"
        return f"{v:.3f}" if isinstance(v, float) else str(v)
    keys = ["judge", "items", "runs", "agreement", "kappa", "unscored_runs", "failed_runs", "yes_share",
            "items_changed_between_repeats", "items_flipped_by_order_reversal", "order_averaged_agreement",
            "median_latency_ms", "median_latency_first_repeat_ms",
            "calls_per_evaluation", "tokens_per_evaluation"]
    for key in keys:
        print(f"{key:<32}" + "".join(f"{fmt(r.get(key)):>18}" for r in rows))
    for r in rows:
        if r["errors"]:
            print(f"errors ({r['judge']}): {r['errors']}")


# --- main -----------------------------------------------------------------------------------------

async def main_async(args: argparse.Namespace) -> int:
    config = OracleConfig.load(args.config)
    config = config.model_copy(update={"llm_judge": LLMJudgeConfig(
        **{**config.llm_judge.model_dump(), "pass_threshold": 0.5, "mode": "pointwise",
           "max_tokens": args.llm_max_tokens})})
    items = load_items(args.items, max_chars=args.max_chars, seed=args.seed)
    print(f"{len(items)} items ({sum(x['hallucination'] == 'yes' for x in items)} labelled yes), "
          f"repeats={args.repeats}, judges={args.judges}", file=sys.stderr)
    server = None
    judge = config.providers.judge
    if judge.model == LOCAL_MODEL_ALIAS and probe(judge.base_url) is None:
        print("starting the local model (llama.cpp + SmolLM2)...", file=sys.stderr)
        server = LocalModelServer().start(ready_timeout_s=120)
        providers = config.providers.model_copy(update={"judge": judge.model_copy(
            update={"base_url": server.base_url, "concurrency": 1})})
        config = config.model_copy(update={"providers": providers})
    rows = []
    log = open(args.runs_log, "a", encoding="utf-8") if args.runs_log else open("/dev/null", "w")  # noqa: SIM115
    try:
        if "decision" in args.judges:
            report = await run_judge("decision_judge", config, items, ["yes-first", "no-first"], args.repeats, log)
            rows.append(summarize(report))
            print_table(rows)
        if "llm" in args.judges:
            if strategy_factory("llm_judge") is None:
                print("llm_judge is not available; decision judge only", file=sys.stderr)
            else:
                llm_items = items[: args.llm_items] if args.llm_items else items
                report = await run_judge("llm_judge", config, llm_items, ["n/a"], args.repeats, log)
                rows.append(summarize(report))
    finally:
        log.close()
        if server is not None:
            server.stop()
    print(f"\nmodel: {config.providers.judge.model} at {config.providers.judge.base_url}")
    print_table(rows)
    if args.out:
        Path(args.out).write_text(json.dumps({"items": [x["ID"] for x in items], "results": rows}, indent=2))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None)
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--judges", nargs="+", default=["decision", "llm"], choices=["decision", "llm"])
    parser.add_argument("--llm-items", type=int, default=None, help="limit the LLM judge to the first N items")
    parser.add_argument("--llm-max-tokens", type=int, default=160)
    parser.add_argument("--max-chars", type=int, default=700)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the summary as JSON here")
    parser.add_argument("--runs-log", default=None, help="append every run as a JSON line here")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
