"""Pairwise judgements a tournament spends for n candidates, against the all-pairs round robin.

A simulated judge (no model): hidden strengths, and each single-order verdict goes to the first
seat with probability ``--seat-bias`` regardless of content, the rest by a Bradley-Terry draw on
the strengths. Every pair is asked in both orders, exactly as the LLM judge does, so the counts
are the judge's model calls (no repeats, no repair requests). Also reports how well the final
order matches the hidden one (Kendall tau), to show what the cheaper schedule costs in accuracy.

    python benchmarks/tournament_calls.py [--sizes 2 4 8 16 32] [--trials 20] [--seat-bias 0.13]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from strategies.ranking import (  # noqa: E402
    OrderJudgement,
    all_pairs_judgements,
    combine_orders,
    judgement_budget,
    tournament,
)


def kendall_tau(order: list[str], truth: list[str]) -> float:
    pos = {x: i for i, x in enumerate(order)}
    concordant = discordant = 0
    for x, y in itertools.combinations(truth, 2):  # x truly above y
        if pos[x] < pos[y]:
            concordant += 1
        else:
            discordant += 1
    total = concordant + discordant
    return (concordant - discordant) / total if total else 1.0


async def one_trial(n: int, all_pairs_max: int, seat_bias: float, rng: random.Random) -> tuple[int, float]:
    ids = [f"c{i}" for i in range(n)]
    strength = {x: rng.gauss(0, 1.5) for x in ids}
    calls = 0

    def judge_once(first: str, second: str) -> OrderJudgement:
        nonlocal calls
        calls += 1
        if rng.random() < seat_bias:
            return OrderJudgement(first, second, "A")
        p_first = 1 / (1 + math.exp(strength[second] - strength[first]))
        return OrderJudgement(first, second, "A" if rng.random() < p_first else "B")

    async def compare(a: str, b: str):
        return combine_orders(a, b, judge_once(a, b), judge_once(b, a))

    ranking, _ = await tournament(ids, compare, all_pairs_max=all_pairs_max)
    truth = sorted(ids, key=lambda x: -strength[x])
    return calls, kendall_tau(ranking.order, truth)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seat-bias", type=float, default=0.13)
    ap.add_argument("--all-pairs-max", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    print(f"seat bias {args.seat_bias}, {args.trials} trials per size, all pairs up to n={args.all_pairs_max}")
    print(f"{'n':>4} {'scheme':>10} {'calls mean':>10} {'calls max':>9} {'2n*log2n':>9} "
          f"{'round robin':>11} {'saved':>6} {'tau(sched)':>10} {'tau(rr)':>8}")
    for n in args.sizes:
        sched = [await one_trial(n, args.all_pairs_max, args.seat_bias, rng) for _ in range(args.trials)]
        rr = [await one_trial(n, 10**9, args.seat_bias, rng) for _ in range(args.trials)]
        calls = [c for c, _ in sched]
        rr_calls = all_pairs_judgements(n)
        assert all(c == rr_calls for c, _ in rr)
        scheme = "all_pairs" if n <= args.all_pairs_max else "merge_sort"
        print(f"{n:>4} {scheme:>10} {statistics.mean(calls):>10.1f} {max(calls):>9} "
              f"{judgement_budget(n):>9.1f} {rr_calls:>11} {1 - statistics.mean(calls) / rr_calls:>6.0%} "
              f"{statistics.mean(t for _, t in sched):>10.3f} {statistics.mean(t for _, t in rr):>8.3f}")


if __name__ == "__main__":
    asyncio.run(main())
