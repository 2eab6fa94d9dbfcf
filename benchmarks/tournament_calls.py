"""Pairwise judgements a tournament spends for n candidates, against the all-pairs round robin.

A simulated judge (no model): hidden strengths, and each single-order verdict goes to the first
seat with probability ``--seat-bias`` regardless of content, the rest by a Bradley-Terry draw on
the strengths. Every pair is asked in both orders, exactly as the LLM judge does, so the counts
are the judge's model calls (no repeats, no repair requests). Also reports how well the final
order matches the hidden one (Kendall tau), to show what the cheaper schedule costs in accuracy.

    python benchmarks/tournament_calls.py [--sizes 2 4 8 16 32] [--trials 20] [--seat-bias 0.13]

The second table is ``llm_judge.mode: auto`` with several candidates (the cascade): every candidate
is scored pointwise once (a noisy reading of its strength on a 1..10 scale, ``--point-noise``), then
only the candidates within ``--margin`` of the top go to the both-order tournament. It reports the
calls against the full tournament and the accuracy of the resulting order.
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

from oracle.strategies.llm_judge.ranking import (
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


class SimulatedJudge:
    """Hidden strengths; each single-order verdict follows the first seat with probability
    ``seat_bias``, else a Bradley-Terry draw. Counts its calls (both orders per comparison)."""

    def __init__(self, strength: dict[str, float], seat_bias: float, rng: random.Random) -> None:
        self.strength, self.seat_bias, self.rng, self.calls = strength, seat_bias, rng, 0

    def once(self, first: str, second: str) -> OrderJudgement:
        self.calls += 1
        if self.rng.random() < self.seat_bias:
            return OrderJudgement(first, second, "A")
        p_first = 1 / (1 + math.exp(self.strength[second] - self.strength[first]))
        return OrderJudgement(first, second, "A" if self.rng.random() < p_first else "B")

    async def compare(self, a: str, b: str):
        return combine_orders(a, b, self.once(a, b), self.once(b, a))


async def one_trial(n: int, all_pairs_max: int, seat_bias: float, rng: random.Random) -> tuple[int, float]:
    ids = [f"c{i}" for i in range(n)]
    strength = {x: rng.gauss(0, 1.5) for x in ids}
    judge = SimulatedJudge(strength, seat_bias, rng)
    ranking, _ = await tournament(ids, judge.compare, all_pairs_max=all_pairs_max)
    truth = sorted(ids, key=lambda x: -strength[x])
    return judge.calls, kendall_tau(ranking.order, truth)


async def cascade_trial(n: int, all_pairs_max: int, seat_bias: float, margin: float, noise: float,
                        rng: random.Random) -> tuple[int, int, float]:
    """(pointwise calls + pairwise calls, pairwise calls, tau) for one cascade run."""
    ids = [f"c{i}" for i in range(n)]
    strength = {x: rng.gauss(0, 1.5) for x in ids}
    # Pointwise: the strength read with noise, on 1..10, normalized like the judge does.
    raw = {x: min(10, max(1, round(5.5 + 1.5 * (strength[x] + rng.gauss(0, noise))))) for x in ids}
    score = {x: (raw[x] - 1) / 9 for x in ids}
    by_score = sorted(ids, key=lambda x: (-score[x], ids.index(x)))
    top = score[by_score[0]]
    close = [x for x in by_score if score[x] >= top - margin - 1e-12]
    judge = SimulatedJudge(strength, seat_bias, rng)
    order = by_score
    if len(close) > 1:
        ranking, _ = await tournament(close, judge.compare, all_pairs_max=all_pairs_max)
        order = ranking.order + [x for x in by_score if x not in close]
    truth = sorted(ids, key=lambda x: -strength[x])
    return n + judge.calls, judge.calls, kendall_tau(order, truth)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seat-bias", type=float, default=0.13)
    ap.add_argument("--all-pairs-max", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--margin", type=float, default=0.1, help="llm_judge.pairwise_margin")
    ap.add_argument("--point-noise", type=float, default=0.5, help="sd of the pointwise reading (strength units)")
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
    print(f"\nauto cascade: pointwise for all, pairwise within {args.margin} of the top "
          f"(pointwise noise sd {args.point_noise})")
    print(f"{'n':>4} {'calls mean':>10} {'pairwise':>8} {'full tourn.':>11} {'saved':>6} {'tau(cascade)':>12} "
          f"{'tau(full)':>9}")
    for n in args.sizes:
        runs = [await cascade_trial(n, args.all_pairs_max, args.seat_bias, args.margin, args.point_noise, rng)
                for _ in range(args.trials)]
        full = [await one_trial(n, args.all_pairs_max, args.seat_bias, rng) for _ in range(args.trials)]
        full_calls = statistics.mean(c for c, _ in full)
        calls = statistics.mean(c for c, _, _ in runs)
        print(f"{n:>4} {calls:>10.1f} {statistics.mean(p for _, p, _ in runs):>8.1f} {full_calls:>11.1f} "
              f"{1 - calls / full_calls:>6.0%} {statistics.mean(t for _, _, t in runs):>12.3f} "
              f"{statistics.mean(t for _, t in full):>9.3f}")


if __name__ == "__main__":
    asyncio.run(main())
