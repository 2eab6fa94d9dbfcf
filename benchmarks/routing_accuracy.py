"""Routing accuracy on the dev suite: confusion table against ``suggested_evaluator``.

    python benchmarks/routing_accuracy.py [--config FILE] [--show-misses] [--data PATH]
        [--prior-hardness X] [--ablation]

The dev suite is read from ``--data PATH``, else ``$ORACLE_DATA_DIR``, else ../shared/data.
``--prior-hardness X`` routes every item as if its history gave it prior hardness X (the suite
carries no history): how routes move when every task counts as hard.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.suite_tasks import suite_path, suite_tasks
from oracle.config.model import OracleConfig
from oracle.routing._chain import PolicyChain
from oracle.tasks.files import parse_task

KINDS = ("verifier", "decision_judge", "llm_judge")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config")
    ap.add_argument("--data", help="shared data directory (default: $ORACLE_DATA_DIR, else ../shared/data)")
    ap.add_argument("--show-misses", action="store_true")
    ap.add_argument("--prior-hardness", type=float, help="route every item with this prior hardness")
    ap.add_argument("--ablation", action="store_true",
                    help="also route with each policy removed in turn (how much each one carries)")
    args = ap.parse_args()
    suite = suite_path(args.data)
    chain = PolicyChain(OracleConfig.load(args.config, env=False))
    confusion: Counter[tuple[str, str]] = Counter()
    by_category: Counter[tuple[str, bool]] = Counter()
    misses = []
    low = 0
    confidences = []
    hard = None
    for item, data in suite_tasks(suite):
        task = parse_task(data)
        if args.prior_hardness is not None:
            hard = {task.task.id: args.prior_hardness}
        route = chain.route(task.task, task.trajectories, history=hard)
        got = route.evaluator or "none"
        want = item["suggested_evaluator"]
        confusion[(want, got)] += 1
        by_category[(item["category"], got == want)] += 1
        low += route.low_confidence
        confidences.append(route.confidence)
        if got != want:
            misses.append((item["id"], want, got, route.confidence))
    total = sum(confusion.values())
    agree = sum(n for (w, g), n in confusion.items() if w == g)
    cols = (*KINDS, "none")
    print(f"{'gold / routed':<16}" + "".join(f"{c:>16}" for c in cols))
    for want in KINDS:
        print(f"{want:<16}" + "".join(f"{confusion[(want, got)]:>16}" for got in cols))
    print()
    for cat in sorted({c for c, _ in by_category}):
        ok, bad = by_category[(cat, True)], by_category[(cat, False)]
        print(f"  {cat:<26} {ok}/{ok + bad}")
    print(f"\nagreement: {agree}/{total} = {agree / total:.1%}")
    confidences.sort()
    print(f"low-confidence routes: {low}/{total}; confidence min {confidences[0]:.3f}, "
          f"median {confidences[len(confidences) // 2]:.3f}")
    if args.ablation:
        print("\nleave-one-policy-out agreement:")
        base = OracleConfig.load(args.config, env=False)
        tasks = [(item["suggested_evaluator"], parse_task(data)) for item, data in suite_tasks(suite)]
        for name in sorted(base.routing.policies):
            policies = {k: v.model_copy(update={"enabled": k != name}) for k, v in base.routing.policies.items()}
            cfg = base.model_copy(update={"routing": base.routing.model_copy(update={"policies": policies})})
            ablated = PolicyChain(cfg)
            hits = sum(ablated.route(t.task, t.trajectories).evaluator == want for want, t in tasks)
            print(f"  without {name:<22} {hits}/{len(tasks)} = {hits / len(tasks):.1%}")
    if args.show_misses:
        for m in misses:
            print("  miss:", *m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
