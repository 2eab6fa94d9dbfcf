"""Repository patches (issue 28): a naive SWE-bench-style harness against the verifier, on the same
candidates, and how many attack candidates each lets through.

    python benchmarks/repo_patch_bench.py [--workers 1,2] [--rounds 1] [--copies 3] [--arms naive,ours] [--json PATH]

The instances: the example repository (examples/repo_patch/: ``textkit`` with a wrong ``truncate``
at the base commit, the fix in the commit after it) and every candidate of tests/repo_attacks.py,
the honest ones (a right fix, a right fix that adds a test of its own) and the attacks (future
history, a test edit, a conftest hook, a pytest plugin in the configuration, skip and xfail from
the library, an early exit with status 0, fake PASSED lines, a .pth file, a sitecustomize, reading
the test patch from disk). ``--copies`` repeats the honest candidates (each copy is judged
separately) so the timing rests on more than two runs.

- ``naive``: per candidate, ``cp -a`` of a clone of the repository (with its history, as a
  checkout is), ``git checkout`` of the base commit, ``git apply`` of the candidate's patch and of
  the test patch (both written next to the tree, as files), then ``python -m pytest -rA
  -p no:cacheprovider NODE...`` with the tree on ``PYTHONPATH``, no sandbox, from a thread pool of
  ``--workers``. Two readings of the same run: ``exit`` (resolved when pytest exits 0) and ``lines``
  (SWE-bench's log rule: each node's last ``STATUS node`` line; PASSED and XFAIL pass; a node with
  no line fails). A patch that does not apply is a failure.
- ``ours``: ``VerifierStrategy`` on one repository task holding every candidate, at
  ``verifier.workers`` = W (the environment, the verifier's interpreter, is the same for both).

Arms alternate per round (naive, ours; then ours, naive) so a drift in a shared machine's load hits
both. Printed per arm and W: wall time, per-candidate time, the ratio ours/naive (aim <= 1.3), and
the attack candidates each resolves (the goal for ours: 0), with each candidate's verdict.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import repo_attacks  # noqa: E402

AIM_RATIO = 1.3
TIMEOUT_S = 60.0
_STATUS = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(\S+)")
_LINES_PASS = frozenset({"PASSED", "XFAIL"})  # SWE-bench's test_passed


@dataclass(frozen=True)
class Instance:
    """What both arms judge: the repository, its base and test patch, and the candidates."""

    repo: Path
    bundle: Path
    base: str
    test_patch: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    patches: dict[str, str]
    kinds: dict[str, str]
    """Per candidate: ``honest`` or ``attack``."""


def build_instance(work: Path, copies: int) -> Instance:
    ex = repo_attacks.example()
    repo = work / "textkit"
    base, fix = ex.build_repository(repo)
    bundle = work / "textkit.bundle"
    ex.git("bundle", "create", "-q", str(bundle), "main", cwd=repo)
    patches: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for candidate in repo_attacks.honest():
        text = ex.make_patch(repo, base, candidate.files)
        for i in range(copies):
            name = candidate.name if i == 0 else f"{candidate.name}_{i + 1}"
            patches[name], kinds[name] = text, "honest"
    for candidate in repo_attacks.attacks():
        patches[candidate.name], kinds[candidate.name] = ex.make_patch(repo, base, candidate.files), "attack"
    return Instance(repo, bundle, base, ex.test_patch(repo, base, fix), list(ex.FAIL_TO_PASS),
                    list(ex.PASS_TO_PASS), patches, kinds)


# -- the naive harness -------------------------------------------------------------------------------

@dataclass
class NaiveVerdict:
    exit_code: int | None
    by_exit: bool
    by_lines: bool
    note: str
    seconds: float
    test_s: float = 0.0
    """The pytest run alone (the rest: the copy, the checkout, the two applies)."""


def naive_one(inst: Instance, patch: str, python: str, pytest_path: str, scratch: Path) -> NaiveVerdict:
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(dir=scratch))
    try:
        tree = work / "repo"
        subprocess.run(["cp", "-a", str(inst.repo), str(tree)], check=True)
        repo_attacks.example().git("checkout", "-q", "--detach", inst.base, cwd=tree)
        for name, text in (("candidate.patch", patch), ("test.patch", inst.test_patch)):
            (work / name).write_text(text, encoding="utf-8")
            if not text.strip():
                continue
            done = subprocess.run(["git", "apply", str(work / name)], cwd=tree, capture_output=True, text=True)
            if done.returncode != 0:
                return NaiveVerdict(None, False, False, f"{name} does not apply: {done.stderr.strip()[:120]}",
                                    time.perf_counter() - started)
        nodes = inst.fail_to_pass + inst.pass_to_pass
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONPATH": os.pathsep.join([str(tree), pytest_path]), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        test_started = time.perf_counter()
        try:
            done = subprocess.run([python, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *nodes], cwd=tree,
                                  env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return NaiveVerdict(None, False, False, "timed out", time.perf_counter() - started)
        status: dict[str, str] = {}
        for line in (done.stdout + "\n" + done.stderr).splitlines():
            match = _STATUS.match(line)
            if match:
                status[match.group(2)] = match.group(1)
        by_lines = all(status.get(n) in _LINES_PASS for n in nodes)
        shown = ", ".join(f"{n.rsplit('::', 1)[-1]}={status.get(n, '-')}" for n in inst.fail_to_pass)
        now = time.perf_counter()
        return NaiveVerdict(done.returncode, done.returncode == 0, by_lines, f"exit {done.returncode}; {shown}",
                            now - started, now - test_started)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_naive(inst: Instance, workers: int, python: tuple[str, str], scratch: Path
              ) -> tuple[float, dict[str, NaiveVerdict]]:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {cid: pool.submit(naive_one, inst, patch, *python, scratch) for cid, patch in inst.patches.items()}
        verdicts = {cid: f.result() for cid, f in futures.items()}
    return time.perf_counter() - started, verdicts


# -- ours ----------------------------------------------------------------------------------------------

def task_document(inst: Instance) -> dict:
    return repo_attacks.example().task_document(inst.base, inst.test_patch, inst.patches, bundle=str(inst.bundle),
                                                task_id="textkit-bench")


def run_ours(inst: Instance, workers: int) -> tuple[float, dict[str, dict]]:
    from oracle import EvaluationContext, OracleConfig
    from oracle.tasks.files import parse_task
    from oracle.strategies.verifier.strategy import VerifierStrategy

    loaded = parse_task(task_document(inst))
    task, trajectories = loaded.task, loaded.trajectories
    config = OracleConfig(verifier={"workers": workers})
    strategy = VerifierStrategy()
    try:
        started = time.perf_counter()
        result = asyncio.run(strategy.evaluate(EvaluationContext(task=task, trajectories=tuple(trajectories),
                                                                 config=config)))
        seconds = time.perf_counter() - started
    finally:
        strategy.close()
    if result.error is not None:
        raise SystemExit(f"ours: the evaluation failed: {result.error.type}: {result.error.message}")
    verdicts = {c.id: {"resolved": bool(c.passed), "status": str(getattr(c.status, "value", c.status)),
                       "fail_to_pass": c.details.get("fail_to_pass"), "pass_to_pass": c.details.get("pass_to_pass"),
                       "why": c.details.get("unscored_because") or c.details.get("failed_because")
                       or c.details.get("first_failure")}
                for c in result.candidates}
    return seconds, verdicts


# -- the report ----------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--copies", type=int, default=3, help="copies of each honest candidate (default 3)")
    ap.add_argument("--arms", default="naive,ours")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    arms = [a for a in args.arms.split(",") if a]
    python = _test_side()
    report: dict = {"workers": {}, "candidates": {}}
    with tempfile.TemporaryDirectory(prefix="repo-bench-") as scratch_dir:
        scratch = Path(scratch_dir)
        inst = build_instance(scratch, args.copies)
        n = len(inst.patches)
        n_attacks = sum(k == "attack" for k in inst.kinds.values())
        print(f"{n} candidates ({n_attacks} attacks); naive: {python[0]} with pytest from {python[1]}")
        for w in (int(x) for x in args.workers.split(",")):
            times: dict[str, list[float]] = {a: [] for a in arms}
            pytest_alone: list[float] = []
            last: dict[str, dict] = {}
            for r in range(args.rounds):
                for arm in (arms if r % 2 == 0 else arms[::-1]):
                    if arm == "naive":
                        seconds, verdicts = run_naive(inst, w, python, scratch)
                        last["naive"] = {cid: v.__dict__ for cid, v in verdicts.items()}
                        pytest_alone.append(sum(v.test_s for v in verdicts.values()) / len(verdicts))
                    else:
                        seconds, last["ours"] = run_ours(inst, w)
                    times[arm].append(seconds)
            row = {arm: {"wall_s": sum(t) / len(t), "per_candidate_s": sum(t) / len(t) / n} for arm, t in times.items()}
            if pytest_alone:
                row["naive"]["pytest_alone_per_candidate_s"] = sum(pytest_alone) / len(pytest_alone)
            if "naive" in row and "ours" in row:
                row["ratio"] = row["ours"]["wall_s"] / row["naive"]["wall_s"]
            report["workers"][w] = row
            report["candidates"] = last
            print(f"workers={w}: " + "; ".join(f"{arm} {v['wall_s']:.2f} s ({v['per_candidate_s'] * 1000:.0f} ms per "
                                                f"candidate)" for arm, v in row.items() if arm != "ratio")
                  + (f"; ours/naive {row['ratio']:.2f} (aim <= {AIM_RATIO})" if "ratio" in row else "")
                  + (f"; naive's pytest run alone {row['naive']['pytest_alone_per_candidate_s'] * 1000:.0f} ms per "
                     "candidate" if "naive" in row else ""))
        attacks = [cid for cid, kind in inst.kinds.items() if kind == "attack"]
        honest = [cid for cid, kind in inst.kinds.items() if kind == "honest"]
        counts = {}
        if "naive" in report["candidates"]:
            naive = report["candidates"]["naive"]
            counts["naive_exit"] = sum(naive[c]["by_exit"] for c in attacks)
            counts["naive_lines"] = sum(naive[c]["by_lines"] for c in attacks)
            counts["naive_either"] = sum(naive[c]["by_exit"] or naive[c]["by_lines"] for c in attacks)
            counts["naive_honest_resolved"] = sum(naive[c]["by_exit"] and naive[c]["by_lines"] for c in honest)
        if "ours" in report["candidates"]:
            ours = report["candidates"]["ours"]
            counts["ours"] = sum(ours[c]["resolved"] for c in attacks)
            counts["ours_honest_resolved"] = sum(ours[c]["resolved"] for c in honest)
        report["attacks_passed"] = counts
        print(f"attack candidates resolved, of {len(attacks)}: " + ", ".join(f"{k} {v}" for k, v in counts.items()
                                                                               if "honest" not in k)
              + f"; honest resolved of {len(honest)}: "
              + ", ".join(f"{k.split('_')[0]} {v}" for k, v in counts.items() if "honest" in k))
        print(f"{'candidate':<20} {'naive exit':>10} {'naive lines':>11} {'ours':>6}  notes")
        for cid in attacks + [c.name for c in repo_attacks.honest()]:
            nv = report["candidates"].get("naive", {}).get(cid)
            ov = report["candidates"].get("ours", {}).get(cid)
            mark = lambda b: "PASS" if b else "fail"  # noqa: E731
            print(f"{cid:<20} {mark(nv['by_exit']) if nv else '-':>10} {mark(nv['by_lines']) if nv else '-':>11} "
                  f"{mark(ov['resolved']) if ov else '-':>6}  {nv['note'] if nv else ''}"
                  + (f" | ours: {ov['status']} f2p {ov['fail_to_pass']} p2p {ov['pass_to_pass']}"
                     f"{'; ' + str(ov['why'])[:100] if ov['why'] else ''}" if ov else ""))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 0


def _test_side() -> tuple[str, str]:
    """The verifier's interpreter and its pinned pytest copy: both arms run the same pytest on the
    same interpreter (the environment, built once)."""
    from oracle import OracleConfig
    from oracle.sandbox import pinned_pytest
    from oracle.strategies.verifier.strategy import find_interpreter

    python = find_interpreter("python", OracleConfig().verifier)
    if python is None:
        raise SystemExit("no interpreter the verifier can use (oracle sandbox check says why)")
    copy = pinned_pytest.pinned(python)
    assert copy.path is not None
    return python, copy.path


if __name__ == "__main__":
    raise SystemExit(main())
