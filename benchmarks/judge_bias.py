"""Position bias of the LLM judge on LLMBar pairs: flip rate and agreement with human labels.

Each item (an instruction and two outputs, ``label`` naming the better one) goes through the real
``llm_judge`` strategy with two candidates, so the pair is asked in both orders with the shipped
prompt templates. Reported: the flip rate (the winner changed when the outputs swapped seats),
the first-seat win rate over single-order verdicts, and agreement with the human label (over all
items, a flip counting as a miss, and over the order-consistent items only).

Items come from ``llmbar/`` of the shared data (``--data``, ``$ORACLE_DATA_DIR`` or ../shared/data) (Natural and
Adversarial/Neighbor by default). Records
listed in ``suite/reserved_keys.json``, and every record sharing a normalized prompt with a reserved
LLMBar or PandaLM record, are excluded before sampling. Short items are preferred so the tiny CPU
model finishes in minutes; the sample is deterministic (``--seed``).

    python benchmarks/judge_bias.py                    # local SmolLM2 (started if not running)
    python benchmarks/judge_bias.py --config my.yaml   # the configured judge model
    python benchmarks/judge_bias.py --items 30 --subsets LLMBar/Natural Processed/MT-Bench
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oracle.config.model import OracleConfig
from oracle.strategies.protocol import EvaluationContext
from oracle.tasks.task import Task, Trajectory
from oracle.strategies.llm_judge.strategy import LLMJudge



def norm(text: str) -> str:
    return " ".join(str(text).split()).lower()


def reserved(data: Path) -> tuple[set[str], set[str]]:
    """(reserved keys, normalized prompts of reserved LLMBar and PandaLM records)."""
    doc = json.loads((data / "suite" / "reserved_keys.json").read_text())
    keys = set(doc["keys"])
    prompts: set[str] = set()
    for key in keys:
        if key.startswith("llmbar:"):
            _, subset, index = key.split(":")
            records = json.loads((data / "llmbar" / subset / "dataset.json").read_text())
            prompts.add(norm(records[int(index)]["input"]))
    pandalm = data / "pandalm" / "testset-v1.json"
    if pandalm.exists():
        for x in json.loads(pandalm.read_text()):
            if f"pandalm:{x['idx']}" in keys:
                prompts.add(norm(x["instruction"] + (("\n\n" + x["input"]) if x["input"].strip() else "")))
    return keys, prompts


def load_items(data: Path, subsets: list[str], n: int, max_chars: int, seed: int) -> list[dict]:
    keys, prompts = reserved(data)
    per_subset = max(1, n // len(subsets))
    items: list[dict] = []
    rng = random.Random(seed)
    for subset in subsets:
        records = json.loads((data / "llmbar" / subset / "dataset.json").read_text())
        pool = [dict(x, key=f"llmbar:{subset}:{i}") for i, x in enumerate(records)
                if f"llmbar:{subset}:{i}" not in keys and norm(x["input"]) not in prompts
                and len(x["input"]) + len(x["output_1"]) + len(x["output_2"]) <= max_chars]
        seen: set[str] = set()
        unique = []
        for x in pool:  # one item per prompt
            if norm(x["input"]) not in seen:
                seen.add(norm(x["input"]))
                unique.append(x)
        items.extend(rng.sample(unique, min(per_subset, len(unique))))
    return items


async def judge_item(judge: LLMJudge, cfg: OracleConfig, item: dict) -> dict:
    task = Task(id=item["key"], prompt=item["input"])
    trajectories = (Trajectory(id="1", answer=item["output_1"]), Trajectory(id="2", answer=item["output_2"]))
    result = await judge.evaluate(EvaluationContext(task=task, trajectories=trajectories, config=cfg))
    if result.status.value == "failed":
        return {"key": item["key"], "status": "failed", "error": result.error.message if result.error else None,
                "calls": result.calls}
    pair = result.details["pairs"][0]
    seats = [o.get("winner_seat") for o in pair["orders"]]
    # single-order verdicts as candidate ids: order 0 has "1" in seat A, order 1 has "2" in seat A
    single = [None if s is None else (o["seat_a"] if s == "A" else o["seat_b"]) for s, o in zip(seats, pair["orders"])]
    return {"key": item["key"], "status": result.status.value, "label": str(item["label"]), "winner": pair["winner"],
            "order_inconsistent": pair["order_inconsistent"], "unparsed": pair["unparsed"], "seats": seats,
            "single": single, "calls": result.calls, "p_a": pair["p_a"]}


def summarize(rows: list[dict]) -> dict:
    done = [r for r in rows if r["status"] != "failed"]
    read = [r for r in done if not r["unparsed"]]
    consistent = [r for r in read if not r["order_inconsistent"]]
    seats = [s for r in done for s in r["seats"] if s is not None]
    singles = [(s, r["label"]) for r in done for s in r["single"] if s is not None]
    return {
        "items": len(rows), "failed": len(rows) - len(done), "unparsed_pairs": len(done) - len(read),
        "flip_rate": (sum(r["order_inconsistent"] for r in read) / len(read)) if read else None,
        "first_seat_win_rate": seats.count("A") / len(seats) if seats else None,
        "agreement_all": sum(r["winner"] == r["label"] for r in read) / len(read) if read else None,
        "agreement_consistent": (sum(r["winner"] == r["label"] for r in consistent) / len(consistent)
                                 if consistent else None),
        "consistent_items": len(consistent),
        "single_order_agreement": sum(s == lab for s, lab in singles) / len(singles) if singles else None,
        "calls": sum(r["calls"] for r in rows),
    }


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", help="oracle config file (default: built-in config, local model)")
    ap.add_argument("--data", default=None, help="shared data directory (default: ORACLE_DATA_DIR or ../shared/data)")
    ap.add_argument("--subsets", nargs="+", default=["LLMBar/Natural", "LLMBar/Adversarial/Neighbor"])
    ap.add_argument("--items", type=int, default=24)
    ap.add_argument("--max-chars", type=int, default=900, help="skip items longer than this (prompt + outputs)")
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--timeout-s", type=float, default=600.0,
                    help="per-call timeout (a shared 2-core machine makes the tiny model slow)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print per-item rows as JSON lines too")
    args = ap.parse_args()
    from oracle._internal.data_paths import DataNotFound, shared_data_dir

    try:
        data_dir = shared_data_dir(args.data, required=("llmbar", "suite/reserved_keys.json"))
    except DataNotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None

    cfg = OracleConfig.load(args.config)
    cfg = cfg.model_copy(update={"llm_judge": cfg.llm_judge.model_copy(
        update={"mode": "pairwise", "max_tokens": args.max_tokens})})
    server = None
    from oracle import local_model

    judge_settings = cfg.providers.judge.model_copy(update={"timeout_s": args.timeout_s})
    cfg = cfg.model_copy(update={"providers": cfg.providers.model_copy(update={"judge": judge_settings})})
    if local_model.probe(judge_settings.base_url) is None and judge_settings.model == local_model.LOCAL_MODEL_ALIAS:
        server = local_model.LocalModelServer(n_ctx=4096).start()
        cfg = cfg.model_copy(update={"providers": cfg.providers.model_copy(update={
            "judge": judge_settings.model_copy(update={"base_url": server.base_url})})})
        print(f"started local model at {server.base_url} in {server.startup_s:.1f}s", file=sys.stderr)
    try:
        items = load_items(data_dir, args.subsets, args.items, args.max_chars, args.seed)
        judge = LLMJudge()
        started = time.perf_counter()
        rows = []
        for i, item in enumerate(items, 1):
            rows.append(await judge_item(judge, cfg, item))
            print(f"[{i}/{len(items)}] {rows[-1]['key']}: winner={rows[-1].get('winner')} "
                  f"label={rows[-1].get('label')} seats={rows[-1].get('seats')}", file=sys.stderr)
        elapsed = time.perf_counter() - started
    finally:
        if server is not None:
            server.stop()
    if args.json:
        for r in rows:
            print(json.dumps(r))
    s = summarize(rows)
    print(f"model {cfg.providers.judge.model} at {cfg.providers.judge.base_url}; subsets {', '.join(args.subsets)}")
    print(f"items {s['items']} (failed {s['failed']}, unparsed pairs {s['unparsed_pairs']}), "
          f"model calls {s['calls']}, {elapsed:.0f} s")
    fmt = lambda x: "n/a" if x is None else f"{x:.1%}"  # noqa: E731
    print(f"flip rate (winner changes with seat order): {fmt(s['flip_rate'])}")
    print(f"first-seat win rate over single-order verdicts: {fmt(s['first_seat_win_rate'])}")
    print(f"agreement with human labels, flips counted as misses: {fmt(s['agreement_all'])}")
    print(f"agreement on order-consistent items ({s['consistent_items']}): {fmt(s['agreement_consistent'])}")
    print(f"single-order agreement (each order alone): {fmt(s['single_order_agreement'])}")


if __name__ == "__main__":
    asyncio.run(main())
