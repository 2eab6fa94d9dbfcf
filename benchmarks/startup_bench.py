"""Start-up cost for a library caller: ``Oracle().route(TASK)`` against the typed floor, in a fresh install.

    python benchmarks/startup_bench.py [--runs 20] [--task examples/n_plus_one/task.json]

The package is installed the way a user gets it, not as an editable checkout: ``pip install
--no-deps --no-build-isolation --target TMP .`` (a wheel built from this tree, byte-compiled by
pip), and every command runs with ``PYTHONPATH=TMP`` from an empty directory, so neither this
checkout nor an editable install elsewhere is imported (checked before timing). The dependencies
are the interpreter's own.

Timed, alternately, each ``--runs`` times, stdout discarded (one untimed run of each first):

- ``Oracle().route``: ``from oracle import Oracle; Oracle().route(json.load(open(TASK)))``;
- the typed floor: the config and the task file read through their models
  (``OracleConfig.load()``, ``parse_task(json.load(open(TASK)))``), with no routing: what any
  typed validation of the two inputs costs;
- for reference: ``oracle route TASK`` (the console script), ``import oracle``, ``from pydantic
  import BaseModel`` and the bare interpreter.

Reported: the median wall and CPU time of each, the ratio of ``Oracle().route`` to the floor
(the aim: <= 1.5), and the top-level packages the route loads beyond the floor (where the gap is).
The 1-minute load average before and after says how busy the machine was.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AIM_RATIO = 1.5

ROUTE = "import json, sys\nfrom oracle import Oracle\nOracle().route(json.load(open(sys.argv[1])))"
FLOOR = ("import json, sys\nfrom oracle.config.model import OracleConfig\nfrom oracle.tasks.files import parse_task\n"
         "OracleConfig.load()\nparse_task(json.load(open(sys.argv[1])))")
LOADED = "\nimport json as _j, sys as _s\nprint(_j.dumps(sorted(_s.modules)), file=_s.stderr)"


def install(target: Path) -> None:
    """A wheel of this tree into ``target`` (no dependencies: the interpreter has them)."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(ROOT)], check=True)


def _time(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds user+system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd, env=env)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()[-800:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _loaded(code: str, task: str, env: dict[str, str], cwd: Path) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + LOADED, task], capture_output=True, text=True, cwd=cwd,
                         env=env, check=True)
    return set(json.loads(out.stderr.strip().splitlines()[-1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--task", default=str(ROOT / "examples" / "n_plus_one" / "task.json"))
    args = ap.parse_args()
    task = str(Path(args.task).resolve())

    tmp = Path(tempfile.mkdtemp(prefix="oracle-startup-"))
    try:
        site, cwd = tmp / "site", tmp / "empty"
        cwd.mkdir()
        install(site)
        # As in a normal install, modules load from bytecode caches (pip wrote them); the children
        # may write missing ones, whatever PYTHONDONTWRITEBYTECODE this shell has.
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
        env["PYTHONPATH"] = str(site)
        where = subprocess.run([sys.executable, "-c", "import oracle; print(oracle.__file__)"], capture_output=True,
                               text=True, cwd=cwd, env=env, check=True).stdout.strip()
        if not Path(where).is_relative_to(site):
            raise SystemExit(f"oracle imports from {where}, not from the fresh install in {site}")
        script = site / "bin" / "oracle"
        commands = {
            "Oracle().route": [sys.executable, "-c", ROUTE, task],
            "typed floor": [sys.executable, "-c", FLOOR, task],
            "oracle route (CLI)": ([str(script)] if script.is_file() else [sys.executable, "-m", "oracle"])
            + ["route", task],
            "import oracle": [sys.executable, "-c", "import oracle"],
            "pydantic import": [sys.executable, "-c", "from pydantic import BaseModel"],
            "bare python": [sys.executable, "-c", "pass"],
        }
        for cmd in commands.values():  # once each, untimed: disk caches warm for every arm alike
            _time(cmd, env, cwd)
        load_before = os.getloadavg()[0]
        wall: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, cmd in commands.items():
                w, c = _time(cmd, env, cwd)
                wall[name].append(w)
                cpu[name].append(c)
        load_after = os.getloadavg()[0]
        beyond = _loaded(ROUTE, task, env, cwd) - _loaded(FLOOR, task, env, cwd)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    med = {name: statistics.median(v) * 1000 for name, v in wall.items()}
    med_cpu = {name: statistics.median(v) * 1000 for name, v in cpu.items()}
    print(f"median of {args.runs} runs each, interleaved (load 1-min {load_before:.2f} -> {load_after:.2f})")
    print(f"  interpreter: {sys.executable}\n  installed:   {where} (pip --target, non-editable)\n"
          f"  task:        {task}")
    for name, ms in med.items():
        spread = sorted(wall[name])
        print(f"  {name:<19} wall {ms:7.1f} ms (min {spread[0] * 1000:.1f}, max {spread[-1] * 1000:.1f})   "
              f"cpu {med_cpu[name]:7.1f} ms")
    packages = sorted({m.partition(".")[0] for m in beyond} - {"oracle"})
    ours = sorted(m for m in beyond if m.startswith("oracle."))
    print(f"Oracle().route loads beyond the floor: {len(beyond)} modules; packages: {', '.join(packages) or '-'}; "
          f"oracle modules: {len(ours)}")
    floor = med["typed floor"]
    print(f"typed floor / pydantic import = {floor / med['pydantic import']:.2f}")
    print(f"oracle route (CLI) / typed floor = {med['oracle route (CLI)'] / floor:.2f}")
    ratio, cpu_ratio = med["Oracle().route"] / floor, med_cpu["Oracle().route"] / med_cpu["typed floor"]
    verdict = "ok" if ratio <= AIM_RATIO else "NOT MET"
    print(f"Oracle().route / typed floor = {ratio:.2f} wall, {cpu_ratio:.2f} cpu (aim <= {AIM_RATIO} wall: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
