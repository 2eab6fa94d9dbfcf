"""Converters from the shared data's formats to labelled items (``oracle compare --import ...``).

- ``suite``: the unified item format of ``suite/dev_suite.jsonl`` (and the held-out suite, which
  shares it). Every record listed in ``suite/reserved_keys.json`` is dropped (by key, by normalized
  prompt, by HumanEval task), so a reserved record never reaches a run even if a file holds one.
- ``halueval``: HaluEval's human yes/no hallucination labels (``halueval/general_data.json``),
  a balanced, seeded sample of short items; the same question wording as the suite's.
- ``humaneval``: the HumanEval problems not reserved (80 of 164), each with a few CodeGen-16B
  samples from ``codet/`` and their execution labels (oracle/comparison/_humaneval.py).

What each suite category becomes (the label kinds an arm is scored on):

==========================  =====================================================================
code_with_tests             the HumanEval ``check`` test; ``passed`` per candidate and ``best``
code_without_tests          ``best`` (the reference solution's candidate)
open_ended_pairwise         ``best`` (the human/expert-preferred output)
fixed_option_mcq            ``best`` (letter k is candidate ck); the suite's question becomes a
                            comparison question (a choice whose options are the candidate ids)
reference_grounded_qa       ``best``, the same way
single_response_yes_no      one choice question (options yes/no) and ``answers``
==========================  =====================================================================

Every item also carries ``evaluator`` (the suite's ``suggested_evaluator``) for routing accuracy.
A yes/no question is a *choice* question, not a likelihood one, so its option order can be
reversed (``--both-orders``); its scores mirror a likelihood question (yes 5, no 1). Agreement
reads the chosen option, never the score.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Iterable

from oracle.comparison._labels import LabelledItem, parse_item
from oracle.comparison._reserved import Reserved, normalize_prompt, suite_pool_key
from oracle.errors import TaskValidationError

IMPORT_FORMATS = ("labelled", "suite", "halueval", "humaneval")
SUITE_FILE = "suite/dev_suite.jsonl"
HALUEVAL_FILE = "halueval/general_data.json"
YES_NO_SCORES = {"yes": 5, "no": 1}
HALLUCINATION_QUESTION = "Does the response contain hallucinated (false or unverifiable) information?"
HALLUCINATION_OPTIONS = {"yes": "it contains false or unverifiable claims",
                         "no": "everything it states is accurate and verifiable"}
QUESTION_ID = "answer"


def _yes_no_question(instructions: str, options: dict[str, str]) -> dict[str, Any]:
    return {"id": QUESTION_ID, "type": "choice", "instructions": instructions, "options": options,
            "scores": {k: YES_NO_SCORES.get(k, 1) for k in options}}


def suite_record_to_item(rec: dict[str, Any], *, line: int, source: str) -> LabelledItem:
    """One suite record as a labelled item (bad records raise naming the line and field)."""
    category = rec.get("category")
    cands = rec.get("candidates") or []
    task: dict[str, Any] = {"id": rec["id"], "prompt": rec["task"], "metadata": {"category": category,
                            "source": rec.get("source"), "label_kind": rec.get("label_kind")}}
    label: dict[str, Any] = {"evaluator": rec.get("suggested_evaluator")}
    if category == "code_with_tests":
        tests = rec["tests"]
        task.update(entry_point=tests["entry_point"], language="python",
                    tests=[{"kind": "check", "code": tests["test"], "name": "official", "timeout_s": 10}])
        trajs = [{"id": c["id"], "answer": c["content"], "code": c["content"]} for c in cands]
        label["passed"] = {cid: bool(v["passed_hidden_tests"]) for cid, v in rec["candidate_labels"].items()}
        label["best"] = list(rec["gold_best"]) or None
    elif category == "single_response_yes_no":
        options = rec.get("options") or ["yes", "no"]
        task["questions"] = [_yes_no_question(rec["question"], {o: o for o in options})]
        trajs = [{"id": c["id"], "answer": c["content"]} for c in cands]
        label["answers"] = {QUESTION_ID: rec["gold_option"]}
    else:
        if rec.get("question") and len(cands) > 1:  # a fixed-option question over the candidates
            task["questions"] = [{"id": "best_response", "type": "choice", "instructions": rec["question"],
                                  "options": {c["id"]: c["id"] for c in cands}}]
        trajs = [{"id": c["id"], "answer": c["content"]} for c in cands]
        label["best"] = list(rec["gold_best"])
    return parse_item({"task": task, "trajectories": trajs, "label": {k: v for k, v in label.items() if v}},
                      line=line, source=source)


def import_suite(path: str | Path, data_dir: Path) -> tuple[list[LabelledItem], int]:
    """(items, number of reserved records dropped) from a suite-format JSONL file."""
    reserved = Reserved.load(data_dir)
    items: list[LabelledItem] = []
    dropped = 0
    with Path(path).open(encoding="utf-8") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except ValueError as exc:
                raise TaskValidationError(f"(root): not valid JSON: {exc}", field="(root)", line=number,
                                          source=str(path)) from None
            key, humaneval_task = suite_pool_key(str(rec.get("id", "")))
            if reserved.excludes(pool_key=key, prompt=rec.get("task"), humaneval_task=humaneval_task):
                dropped += 1
                continue
            try:
                items.append(suite_record_to_item(rec, line=number, source=str(path)))
            except KeyError as exc:
                raise TaskValidationError(f"{exc.args[0]}: missing in a suite record", field=str(exc.args[0]),
                                          line=number, source=str(path)) from None
    return items, dropped


def _halueval_rows(data_dir: Path) -> Iterable[dict[str, Any]]:
    with (data_dir / HALUEVAL_FILE).open(encoding="utf-8") as fh:
        for raw in fh:
            if raw.strip():
                yield json.loads(raw)


def import_halueval(data_dir: Path, *, n: int, seed: int, max_chars: int = 700) -> tuple[list[LabelledItem], int]:
    """A balanced (half yes, half no), seeded sample of ``n`` short HaluEval general items.

    Short items (query + response <= ``max_chars``) keep a CPU model fast. Records with a
    non-numeric ID are skipped; reserved ones are dropped and counted.
    """
    reserved = Reserved.load(data_dir)
    pool: dict[str, list[dict[str, Any]]] = {"yes": [], "no": []}
    dropped = 0
    for x in _halueval_rows(data_dir):
        if not str(x.get("ID", "")).isdigit() or x.get("hallucination") not in pool:
            continue
        if reserved.excludes(pool_key=f"halueval-general:{x['ID']}", prompt=x["user_query"]):
            dropped += 1
            continue
        if len(x["user_query"]) + len(x["chatgpt_response"]) <= max_chars:
            pool[x["hallucination"]].append(x)
    rng = random.Random(f"halueval:{seed}")
    chosen: list[dict[str, Any]] = []
    for answer in ("yes", "no"):
        rows = sorted(pool[answer], key=lambda x: int(x["ID"]))
        rng.shuffle(rows)
        chosen += rows[: (n + (answer == "yes")) // 2]
    items = []
    for x in sorted(chosen, key=lambda x: int(x["ID"])):
        items.append(parse_item({
            "task": {"id": f"halueval-general/{x['ID']}", "prompt": x["user_query"],
                     "questions": [_yes_no_question(HALLUCINATION_QUESTION, HALLUCINATION_OPTIONS)],
                     "metadata": {"category": "single_response_yes_no", "source": "HaluEval general"}},
            "trajectories": [{"id": "response", "answer": x["chatgpt_response"]}],
            "label": {"answers": {QUESTION_ID: x["hallucination"]}, "evaluator": "decision_judge"}},
            source=HALUEVAL_FILE))
    return items, dropped


__all__ = ["HALLUCINATION_QUESTION", "IMPORT_FORMATS", "import_halueval", "import_suite", "normalize_prompt",
           "suite_record_to_item"]
