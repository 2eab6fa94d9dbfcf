"""Decision judge vs LLM judge on HaluEval's human yes/no hallucination labels (a thin benchmark).

The comparison itself lives in the library (``oracle.compare``, oracle/comparison/); this script
is the same as the documented command

    oracle compare --import halueval --limit 30 --arms decision_judge,llm_judge,baseline \
        --repeats 3 --both-orders -o out/halueval --local-model

and prints the terminal table plus the figures this benchmark used to print (share of "yes"
verdicts, order-averaged agreement), read from the run records. Items: a balanced, seeded sample of
short ``halueval/general_data.json`` records, reserved records (and records sharing a reserved
prompt) excluded by the converter (oracle/comparison/_importers.py). Both judges answer the same
question, "Does the response contain hallucinated (false or unverifiable) information?": the
decision judge as a choice between yes and no (asked in both option orders), the LLM judge as the
rubric criterion "The answer to this question is 'yes': ..." (a pass means yes).

    python benchmarks/decision_vs_generative.py --items 40 --repeats 2 --out out/halueval
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oracle.cli.main import main as oracle_main  # noqa: E402


def extra_figures(out: Path) -> list[dict[str, Any]]:
    """Per judge: share of "yes" verdicts (a constant answer shows here) and the order-averaged
    agreement of the decision judge (P(yes) averaged over both option orders, first repeat)."""
    import json

    records = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
    labels = {}
    for line in (out / "labelled.jsonl").read_text().splitlines():
        item = json.loads(line)
        labels[item["task"]["id"]] = item["label"]["answers"]["answer"]
    rows = []
    for arm in ("decision_judge", "llm_judge"):
        mine = [r for r in records if r["arm"] == arm and r["status"] != "n/a"]
        chosen = [r["chosen"].get("answer") for r in mine]
        p_yes: dict[str, list[float]] = {}
        for r in mine:
            probs = r["distribution"].get("answer")
            if r["repeat"] == 0 and probs:
                p_yes.setdefault(r["item_id"], []).append(probs.get("yes", 0.0))
        both = {k: v for k, v in p_yes.items() if len(v) == 2}
        averaged = (sum((("yes" if sum(v) / 2 > 0.5 else "no") == labels[k]) for k, v in both.items()) / len(both)
                    if both else None)
        rows.append({"judge": arm, "runs": len(mine),
                     "yes_share": sum(c == "yes" for c in chosen) / len(chosen) if chosen else None,
                     "order_averaged_agreement": averaged, "order_averaged_items": len(both)})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None)
    parser.add_argument("--data", default=None,
                        help="shared data directory (default: ORACLE_DATA_DIR or ../shared/data)")
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out/decision_vs_generative", help="output directory (resumable)")
    args = parser.parse_args()
    out = Path(args.out)
    common = (["--config", args.config] if args.config else []) + ["compare", "--import", "halueval",
                                                                   "--limit", str(args.items), "--seed", str(args.seed)]
    if args.data:
        common += ["--data", args.data]
    out.mkdir(parents=True, exist_ok=True)
    code = oracle_main([*common, "-o", str(out), "--write-labelled", str(out / "labelled.jsonl")])
    if code:
        return code
    code = oracle_main([*common, "--arms", "decision_judge,llm_judge,baseline", "--repeats", str(args.repeats),
                        "--both-orders", "--local-model", "-o", str(out)])
    if code:
        return code
    for row in extra_figures(out):
        print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
