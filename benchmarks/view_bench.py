"""``oracle view`` with 10,000 rows in Debian's chromium: how long until the task list shows, and a filter.

The rows are real: one ``oracle evaluate --json`` of the N+1 example (the verifier in the sandbox),
or the rows of ``--results FILE``, repeated under distinct task ids up to ``--rows``. The viewer runs
as ``oracle view FILE --port 0 --no-open``; playwright drives /usr/bin/chromium. Figures, median of
``--repeats`` fresh page loads: first render (navigation start to the first 200 rows in the table,
``performance.now()`` in the page), all rows loaded (every page of ``/api/rows`` fetched and the
counts drawn), and one filter change (evaluator) over all rows.

    python benchmarks/view_bench.py                 # 10,000 rows, 5 loads
    python benchmarks/view_bench.py --rows 50000 --results out.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def real_rows(results: str | None) -> list[dict]:
    if results:
        return [json.loads(line) for line in Path(results).read_text().splitlines() if line.strip()]
    proc = subprocess.run([sys.executable, "-m", "oracle", "evaluate", str(ROOT / "examples/n_plus_one/task.json"),
                           "--json"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    if proc.returncode not in (0, 3):
        sys.exit(f"evaluate failed: {proc.stderr[-2000:]}")
    return [json.loads(proc.stdout)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--results", help="rows to repeat (default: one real evaluate --json of the N+1 example)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    seed = real_rows(args.results)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        with path.open("w") as fh:
            for i in range(args.rows):
                row = dict(seed[i % len(seed)])
                row["task_id"] = f"{row['task_id']}-{i}"
                row["line"] = i + 1
                fh.write(json.dumps(row) + "\n")
        size_mb = path.stat().st_size / 1e6
        started = time.perf_counter()
        server = subprocess.Popen([sys.executable, "-m", "oracle", "view", str(path), "--port", "0", "--no-open"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            read_s = time.perf_counter() - started
            first, loaded, filtered = [], [], []
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
                for _ in range(args.repeats):
                    page = browser.new_page()
                    page.goto(url)
                    page.wait_for_selector("body[data-loaded]", timeout=120_000)
                    first.append(float(page.get_attribute("body", "data-first-render-ms") or "nan"))
                    loaded.append(float(page.get_attribute("body", "data-loaded-ms") or "nan"))
                    assert page.locator("#rows-body tr").count() == min(200, args.rows)
                    value = page.eval_on_selector("#f-evaluator", "s => s.options[1].value")
                    filtered.append(page.evaluate(
                        """v => { const s = document.getElementById('f-evaluator'), t = performance.now();
                                  s.value = v; s.dispatchEvent(new Event('change'));
                                  return performance.now() - t; }""", value))
                    page.close()
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=20)
    print(f"rows {args.rows} ({size_mb:.1f} MB of JSONL); oracle view read them and listened in {read_s:.2f} s")
    print(f"first render (first 200 rows shown) ms: median {statistics.median(first):.0f}, max {max(first):.0f}")
    print(f"all rows loaded, counts drawn     ms: median {statistics.median(loaded):.0f}, max {max(loaded):.0f}")
    print(f"filter change over all rows      ms: median {statistics.median(filtered):.1f}, max {max(filtered):.1f}")


if __name__ == "__main__":
    main()
