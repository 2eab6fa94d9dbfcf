"""Start-up cost: ``oracle route FILE`` against ``python -c 'from pydantic import BaseModel'`` (issue 12).

    python benchmarks/startup_bench.py [--runs 20] [--task examples/n_plus_one/task.json] [--oracle PATH]

Both commands run by absolute path (the interpreter this script runs under, resolved through any
shim; the ``oracle`` console script installed next to it, or ``--oracle PATH``), alternately, each
``--runs`` times, with stdout discarded, and with bytecode caches as a normal install has them
(PYTHONDONTWRITEBYTECODE is dropped from the children's environment; one untimed run of each
command first). Reported: the median wall time of each and their ratio; the
issue requires ``oracle route`` <= 1.6 x the pydantic import. Also timed, for reference: ``python -c
'import oracle'``, ``python -c 'pass'`` (the bare interpreter) and the pydantic import followed by
one one-field model class (what any use of pydantic costs on top of the import: pydantic's field
machinery and its plugin discovery through importlib.metadata load on the first class), ``import
oracle.tasks.task`` (the task model and the test and step kinds a task file is validated against), and
reading the config and the task file through their models without routing (the floor under
``oracle route``: typed validation of its two inputs). Printed too: how many pydantic model
classes ``oracle route`` builds. The 1-minute load average before and
after says how busy the machine was.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIRED_RATIO = 1.6


# As in a normal install, modules load from bytecode caches: the children may write them (the first,
# untimed run of each command does), whatever PYTHONDONTWRITEBYTECODE this shell has.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _time(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=ENV)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


_COUNT_MODELS = """
import contextlib, io, runpy, sys
sys.argv = [sys.argv[1], "route", sys.argv[2]]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit:
        pass
from pydantic import BaseModel
def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)
print(len(set(subclasses(BaseModel))))
"""


def _model_classes(script: Path, task: str) -> str:
    """How many pydantic model classes exist after ``oracle route TASK`` (run once, untimed)."""
    proc = subprocess.run([sys.executable, "-c", _COUNT_MODELS, str(script.resolve()), task],
                          capture_output=True, text=True, cwd=ROOT, env=ENV)
    return proc.stdout.strip() or "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--task", default=str(ROOT / "examples" / "n_plus_one" / "task.json"))
    ap.add_argument("--oracle", help="the oracle console script (default: next to this interpreter)")
    args = ap.parse_args()

    python = str(Path(sys.executable).resolve())
    script = Path(args.oracle) if args.oracle else Path(sys.executable).parent / "oracle"
    if not script.is_file():
        raise SystemExit(f"no oracle console script at {script}; pass --oracle PATH (pip install -e .)")
    task = str(Path(args.task).resolve())
    commands = {
        "oracle route": [str(script.resolve()), "route", task],
        "pydantic import": [python, "-c", "from pydantic import BaseModel"],
        "pydantic + 1 model": [python, "-c", "from pydantic import BaseModel\nclass M(BaseModel):\n    x: int"],
        "import oracle": [python, "-c", "import oracle"],
        # The floor under `oracle route`: the typed models every task file and config are validated
        # against, built and used, with no routing and no output.
        "task model only": [python, "-c", "import oracle.tasks.task"],
        "task + config read": [python, "-c", "import json, sys\nfrom oracle.config.model import OracleConfig\n"
                               "from oracle.tasks.files import parse_task\nOracleConfig.load(env=False)\n"
                               "parse_task(json.load(open(sys.argv[1])))", task],
        "bare python": [python, "-c", "pass"],
    }
    for cmd in commands.values():  # once each, untimed: disk caches warm for every arm alike
        _time(cmd)
    load_before = os.getloadavg()[0]
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, cmd in commands.items():
            wall, used = _time(cmd)
            times[name].append(wall)
            cpu[name].append(used)
    load_after = os.getloadavg()[0]

    medians = {name: statistics.median(v) * 1000 for name, v in times.items()}
    cpu_medians = {name: statistics.median(v) * 1000 for name, v in cpu.items()}
    print(f"median of {args.runs} runs each, interleaved (load 1-min {load_before:.2f} -> {load_after:.2f})")
    print(f"  interpreter: {python}\n  oracle:      {script.resolve()}\n  task:        {task}")
    for name, ms in medians.items():
        spread = sorted(times[name])
        print(f"  {name:<19} wall {ms:7.1f} ms (min {spread[0] * 1000:.1f}, max {spread[-1] * 1000:.1f})   "
              f"cpu {cpu_medians[name]:7.1f} ms")
    floor = medians["pydantic + 1 model"] / medians["pydantic import"]
    print(f"pydantic + 1 model / pydantic import = {floor:.2f}; oracle route builds {_model_classes(script, task)} "
          "pydantic model classes")
    for name in ("task model only", "task + config read"):
        print(f"{name} / pydantic import = {medians[name] / medians['pydantic import']:.2f}")
    ratio = medians["oracle route"] / medians["pydantic import"]
    cpu_ratio = cpu_medians["oracle route"] / cpu_medians["pydantic import"]
    verdict = "ok" if ratio <= REQUIRED_RATIO else "NOT MET"
    print(f"oracle route / pydantic import = {ratio:.2f} wall, {cpu_ratio:.2f} cpu "
          f"(required <= {REQUIRED_RATIO} wall: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
