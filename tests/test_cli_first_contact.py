"""Issue 29, "CLI and output conventions" and the doc mismatches: each as the user meets it, through
the real ``oracle`` command in a subprocess (real stdin, real files, real exit codes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"


def oracle(*args: str, cwd: Path = ROOT, stdin: bytes | None = None, env: dict | None = None,
           timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "oracle", *args], cwd=cwd, input=stdin, capture_output=True,
                          timeout=timeout, env=env)


def rows(text: bytes | str) -> list[dict]:
    return [json.loads(line) for line in (text.decode() if isinstance(text, bytes) else text).splitlines()
            if line.strip()]


# -- the doc mismatches -----------------------------------------------------------------------------

def test_the_docs_say_what_auto_mode_of_the_llm_judge_does():
    """README said "pointwise or pairwise": auto scores several candidates pointwise, then the close
    ones pairwise (strategies/llm_judge: the cascade)."""
    from oracle.config.model import LLMJudgeConfig
    from oracle.strategies.llm_judge.strategy import LLMJudge
    from oracle.tasks.task import Trajectory

    judge, auto = LLMJudge(), LLMJudgeConfig()
    assert auto.mode == "auto"
    one, two = [Trajectory(id="a", answer="x")], [Trajectory(id="a", answer="x"), Trajectory(id="b", answer="y")]
    assert judge.resolve_mode(one, auto) == "pointwise" and judge.resolve_mode(two, auto) == "cascade"
    for page in ("README.md", "docs/index.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert "pointwise or pairwise" not in text and "never does both" not in text, page
        assert "each candidate pointwise, then the close ones pairwise in both orders" in text, page
    llm_page = (ROOT / "docs/llm-judge.md").read_text(encoding="utf-8")
    assert "then judged pairwise in both orders only among those within" in llm_page


def test_the_documented_bad_input_error_is_the_one_printed():
    """docs/tasks.md shows the error `oracle route docs/examples/bad.jsonl` prints, field path and all."""
    page = (ROOT / "docs/tasks.md").read_text(encoding="utf-8")
    shown = next(line for line in page.splitlines() if line.startswith("error: docs/examples/bad.jsonl"))
    out = oracle("route", "docs/examples/bad.jsonl")
    assert out.returncode == 2 and out.stderr.decode().strip() == shown


@pytest.mark.slow
def test_write_labelled_keeps_to_limit_and_select(tmp_path: Path):
    out = tmp_path / "eight.jsonl"
    done = oracle("compare", str(EXAMPLES / "rubric-labelled.jsonl"), "--write-labelled", str(out), "--limit", "8",
                  "-o", str(tmp_path / "cmp"))
    assert done.returncode == 0, done.stderr
    written = rows(out.read_text())
    assert len(written) == 8 and "wrote 8 labelled items" in done.stderr.decode()
    again = tmp_path / "again.jsonl"
    oracle("compare", str(EXAMPLES / "rubric-labelled.jsonl"), "--write-labelled", str(again), "--limit", "8",
           "-o", str(tmp_path / "cmp"))
    assert again.read_text() == out.read_text()  # the same seeded choice a comparison with --limit 8 runs
    picked = tmp_path / "picked.jsonl"
    done = oracle("compare", str(EXAMPLES / "rubric-labelled.jsonl"), "--write-labelled", str(picked),
                  "--select", "reply-1*", "-o", str(tmp_path / "cmp"))
    assert done.returncode == 0
    assert sorted(r["task"]["id"] for r in rows(picked.read_text())) == ["reply-1", *(f"reply-1{i}" for i in range(10))]


# -- stdin ------------------------------------------------------------------------------------------

YAML_TASK = b"""\
task:
  id: four
  prompt: What is 2 + 2?
  reference: 4
trajectories:
  - {id: a, answer: "The answer is 4."}
"""


@pytest.mark.slow
def test_evaluate_reads_a_yaml_task_from_stdin():
    out = oracle("evaluate", "-", "--json", stdin=YAML_TASK)
    assert out.returncode == 0, out.stderr
    (row,) = rows(out.stdout)
    assert row["task_id"] == "four" and row["status"] == "ok"


@pytest.mark.slow
def test_evaluate_reads_json_from_dev_stdin_piped_or_redirected():
    data = (EXAMPLES / "capital.json").read_bytes()
    piped = oracle("evaluate", "/dev/stdin", "--json", "--allow-failures", stdin=data)
    assert piped.returncode == 0, piped.stderr
    with (EXAMPLES / "capital.json").open("rb") as fh:
        redirected = subprocess.run([sys.executable, "-m", "oracle", "evaluate", "/dev/stdin", "--json",
                                     "--allow-failures"], cwd=ROOT, stdin=fh, capture_output=True, timeout=300)
    assert redirected.returncode == 0, redirected.stderr
    assert rows(piped.stdout)[0]["task_id"] == rows(redirected.stdout)[0]["task_id"] == "capital"


@pytest.mark.slow
def test_evaluate_reads_jsonl_from_stdin_and_names_stdin_in_errors():
    out = oracle("evaluate", "-", "--json", "-q", stdin=(EXAMPLES / "tasks.jsonl").read_bytes())
    assert out.returncode in (0, 3), out.stderr
    assert [r["task_id"] for r in rows(out.stdout)] == ["add", "capital", "sum-digits", "echo"]
    bad = oracle("evaluate", "-", stdin=(EXAMPLES / "bad.jsonl").read_bytes())
    assert bad.returncode == 2 and bad.stderr.decode().startswith("error: <stdin>:line 3: task.tests[0]: ")
    broken = oracle("evaluate", "-", stdin=b'{"task": {"id": "x",')
    assert broken.returncode == 2 and b"<stdin>" in broken.stderr and b"Traceback" not in broken.stderr


@pytest.mark.slow
def test_batch_reads_jsonl_from_stdin_and_a_rerun_resumes(tmp_path: Path):
    data = (EXAMPLES / "tasks.jsonl").read_bytes()
    first = oracle("batch", "-", "-o", str(tmp_path / "out.jsonl"), "--no-store", stdin=data)
    assert first.returncode == 0, first.stderr
    assert b"4 input lines, 0 resumed, 4 computed" in first.stdout
    assert len(rows((tmp_path / "out.jsonl").read_text())) == 4
    again = oracle("batch", "/dev/stdin", "-o", str(tmp_path / "out.jsonl"), "--no-store", stdin=data)
    assert again.returncode == 0 and b"4 input lines, 4 resumed, 0 computed" in again.stdout


# -- global options before or after the command -----------------------------------------------------

@pytest.mark.slow
def test_global_options_work_before_or_after_the_command(tmp_path: Path):
    cfg = tmp_path / "oracle.yaml"
    cfg.write_text("routing:\n  threshold: 0.3\n")
    default = oracle("config", "show", "--json")
    before = oracle("--config", str(cfg), "config", "show", "--json")
    after = oracle("config", "show", "--json", "--config", str(cfg))
    json_first = oracle("--json", "--config", str(cfg), "config", "show")
    hashes = [json.loads(p.stdout)["config_hash"] for p in (default, before, after, json_first)]
    assert hashes[1] == hashes[2] == hashes[3] != hashes[0]
    # nested actions take them too, and a value after the command wins over one before it
    rubric = ["rubric", "list", "--json"]
    cfg.write_text("rubrics:\n  dir: mine\n")
    (tmp_path / "mine" / "r").mkdir(parents=True)
    listed = oracle("--config", "/nonexistent.yaml", *rubric, "--config", str(cfg), cwd=tmp_path)
    assert listed.returncode == 0 and json.loads(listed.stdout)["name"] == "r", listed.stderr
    logged = oracle("route", str(EXAMPLES / "add.yaml"), "--json", "--log-level", "DEBUG", "--log-format", "json")
    assert logged.returncode == 0 and json.loads(logged.stdout)["task_id"] == "add"
    bad = oracle("route", str(EXAMPLES / "add.yaml"), "--log-level", "loud")
    assert bad.returncode == 2 and b"--log-level" in bad.stderr
    refused = oracle("--json", "rubric", "hash", "x")
    assert refused.returncode == 2 and b"--json: `oracle rubric` has no --json option" in refused.stderr


# -- one row schema; --format candidates --------------------------------------------------------------

CANDIDATE_COLUMNS = ["task_id", "candidate_id", "evaluator", "passed", "score", "status", "reason", "cost_usd",
                     "latency_ms"]


_TIMINGS = ("latency_ms", "elapsed_us", "duration_ms", "wall_ms", "line", "key", "call_latency_ms", "seconds")


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in _TIMINGS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


@pytest.mark.slow
def test_evaluate_json_rows_and_batch_rows_have_one_schema(tmp_path: Path):
    source = EXAMPLES / "tasks.jsonl"
    evaluated = rows(oracle("evaluate", str(source), "--json", "--no-store").stdout)
    done = oracle("batch", str(source), "-o", str(tmp_path / "b.jsonl"), "--no-store")
    assert done.returncode == 0, done.stderr
    batched = sorted(rows((tmp_path / "b.jsonl").read_text()), key=lambda r: r["line"])  # in the order they end
    assert [sorted(r) for r in evaluated] == [sorted(r) for r in batched]
    for e, b in zip(evaluated, batched):
        assert e["line"] == b["line"] and e["key"] is None and b["key"]
        assert set(e["result"]) == set(b["result"]) and e["result"]["route"]["evaluator"] == e["evaluator"]
        assert _without_timings(e) == _without_timings(b)
    # a reference check and a sandbox run call no model: their cost is known, 0, in rows as in tables
    assert {r["task_id"]: r["cost_usd"] for r in evaluated} == {"add": 0.0, "capital": 0.0, "sum-digits": 0.0,
                                                                 "echo": 0.0}


@pytest.mark.slow
def test_routes_summary_counts_evaluate_quiet_rows_by_their_evaluator(tmp_path: Path):
    """`evaluate --json -q` rows carry no trace; routes summary counted every one as unrouted."""
    quiet = tmp_path / "q.jsonl"
    quiet.write_bytes(oracle("evaluate", str(EXAMPLES / "tasks.jsonl"), "--json", "-q").stdout)
    summary = json.loads(oracle("routes", "summary", str(quiet), "--json").stdout)
    assert summary["rows"] == 4 and summary["unrouted"] == 0 and summary["untraced"] == 4
    assert summary["evaluators"] == {"verifier": 4}
    text = oracle("routes", "summary", str(quiet))
    assert text.returncode == 0 and b"without trace (evaluate -q: evaluator only): 4" in text.stdout


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_format_candidates_writes_one_row_per_candidate(tmp_path: Path, suffix: str):
    import csv

    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    source = EXAMPLES / "tasks.jsonl"
    out_eval, out_batch = tmp_path / f"e{suffix}", tmp_path / f"b{suffix}"
    done = oracle("evaluate", str(source), "-q", "--format", "candidates", "-o", str(out_eval))
    assert done.returncode == 0, done.stderr
    assert f"wrote 5 candidate rows to {out_eval}".encode() in done.stderr
    done = oracle("batch", str(source), "-o", str(out_batch), "--format", "candidates", "--no-store")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "b.rows.jsonl").is_file()  # the resumable rows, beside the table
    tables = []
    for path in (out_eval, out_batch):
        if suffix == ".jsonl":
            table = rows(path.read_text())
            assert all(list(r) == CANDIDATE_COLUMNS for r in table)
        elif suffix == ".csv":
            with path.open(newline="") as fh:
                reader = csv.DictReader(fh)
                assert reader.fieldnames == CANDIDATE_COLUMNS
                table = list(reader)
        else:
            import pyarrow.parquet as pq

            read = pq.read_table(path)
            assert read.column_names == CANDIDATE_COLUMNS
            table = read.to_pylist()
        tables.append([(r["task_id"], r["candidate_id"], str(r["passed"]), r["status"], r["reason"]) for r in table])
    assert tables[0] == tables[1]
    assert [t[:3] for t in tables[0]] == [("add", "good", "True"), ("add", "bad", "False"),
                                          ("capital", "a", "False"), ("sum-digits", "a", "True"), ("echo", "a", "True")]
    assert "expected 'paris' (contains)" in tables[0][2][4]  # the reason is the table's `why`, uncut
    rerun = oracle("batch", str(source), "-o", str(out_batch), "--format", "candidates", "--no-store")
    assert b"4 resumed, 0 computed" in rerun.stdout


@pytest.mark.slow
def test_format_candidates_refusals_come_before_anything_runs(tmp_path: Path):
    task = str(EXAMPLES / "capital.json")
    no_file = oracle("evaluate", task, "--format", "candidates")
    assert no_file.returncode == 2 and b"name the file with -o FILE" in no_file.stderr
    xlsx = oracle("evaluate", task, "--format", "candidates", "-o", str(tmp_path / "c.xlsx"))
    assert xlsx.returncode == 2 and b".jsonl, .csv or .parquet" in xlsx.stderr
    code = ("import sys\nsys.modules['pyarrow'] = None\nsys.modules['pyarrow.parquet'] = None\n"
            "from oracle.cli.main import main\nsys.exit(main(sys.argv[1:]))")
    for command in (["evaluate", task], ["batch", str(EXAMPLES / "tasks.jsonl"), "--no-store"]):
        out = tmp_path / "c.parquet"
        missing = subprocess.run([sys.executable, "-c", code, *command, "--format", "candidates", "-o", str(out)],
                                 cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert missing.returncode == 2, missing.stderr
        assert "pip install 'oracle-router[parquet]'" in missing.stderr and not out.exists()
        assert not (tmp_path / "c.rows.jsonl").exists()


# -- the route table, the why column, costs -----------------------------------------------------------

@pytest.mark.slow
def test_the_route_table_lists_abstained_policies_only_with_v():
    for command in (["route", "docs/examples/add.yaml"], ["evaluate", "docs/examples/add.yaml"]):
        plain = oracle(*command).stdout.decode()
        assert "abstained\n" not in plain.replace("(-v lists them)", "")
        assert not any(line.rstrip().endswith(" abstained") for line in plain.splitlines())
        assert "6 policies abstained (-v lists them)" in plain
        verbose = oracle(*command, "-v").stdout.decode()
        listed = [line.split()[0] for line in verbose.splitlines() if line.rstrip().endswith(" abstained")]
        assert listed == ["claim_check", "difficulty", "open_ended_judgment", "pairwise_preference",
                          "reference_answer", "tool_use"]
        assert "(-v lists them)" not in verbose


@pytest.mark.slow
def test_why_wraps_on_a_terminal_and_is_whole_in_plain_output():
    """The `why` of lru_cache runs past 300 characters; it was cut at 140."""
    from tests.test_cli_render import _oracle_on_a_terminal

    task = "examples/n_plus_one/task.json"
    plain = oracle("evaluate", task, "-q").stdout.decode()
    (line,) = [x for x in plain.splitlines() if x.startswith("lru_cache")]
    assert line.endswith("sees_new_items_between_calls: fail: a second call returned stale items after an insert "
                         "(test line 90)")
    terminal = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", _oracle_on_a_terminal("evaluate", task, "-q"))
    lines = terminal.splitlines()
    assert max(len(x) for x in lines) <= 160  # laid out at the terminal's width
    start = next(i for i, x in enumerate(lines) if x.startswith("lru_cache"))
    wrapped = " ".join(x.split("ok", 1)[-1].strip() if i == 0 else x.strip()
                       for i, x in enumerate(lines[start:start + 6]) if not x.startswith("best:"))
    assert "(test line 90)" in wrapped and "constant_queries_5000_orders" in wrapped


@pytest.mark.slow
def test_costs_print_one_way_everywhere(tmp_path: Path, scripted_server):
    no_model = "$0 (no model call)"
    sandbox = oracle("evaluate", "docs/examples/add.yaml", "-q").stdout.decode()
    assert f"cost {no_model}" in sandbox and "$0.000000" not in sandbox
    reference = oracle("evaluate", "docs/examples/capital.json", "-q", "--allow-failures").stdout.decode()
    assert f"cost {no_model}" in reference and "cost unknown" not in reference
    batch = oracle("batch", "docs/examples/tasks.jsonl", "-o", str(tmp_path / "b.jsonl"), "--no-store")
    assert no_model in batch.stdout.decode() and "0.0000" not in batch.stdout.decode()
    compared = oracle("compare", "docs/examples/labelled.jsonl", "-o", str(tmp_path / "cmp"), "--arms",
                      "verifier,baseline", "--no-report").stdout.decode()
    verifier_row = next(x for x in compared.splitlines() if x.startswith("verifier "))
    assert verifier_row.endswith(no_model)
    # model calls at a price nobody configured: unknown, never 0
    env = {**os.environ, "ORACLE_BASE_URL": scripted_server.base_url, "ORACLE_MODEL": "scripted-model"}
    judged = oracle("evaluate", str(EXAMPLES / "helpful.yaml"), "-q", "--allow-failures", "--no-store", env=env)
    text = judged.stdout.decode()
    assert re.search(r"calls [1-9]\d*  cost unknown  ", text), text + judged.stderr.decode()


# -- oracle schema task, oracle init ----------------------------------------------------------------

def _yaml(path: Path):
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_schema_task_is_the_models_schema_and_validates_real_task_files(tmp_path: Path):
    import jsonschema

    out = oracle("schema", "task")
    assert out.returncode == 0, out.stderr
    schema = json.loads(out.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    files = [p for pattern in ("docs/examples/**/*.yaml", "docs/examples/*.json", "examples/*/*.json",
                               "examples/*/*.yaml", "oracle/cli/templates/*.yaml") for p in ROOT.glob(pattern)]
    documents = [d for d in map(_yaml, files) if isinstance(d, dict) and "task" in d]
    for path in ROOT.glob("docs/examples/*.jsonl"):
        documents += [{k: v for k, v in json.loads(line).items() if k != "label"}
                      for line in path.read_text().splitlines() if line.strip() and path.name != "bad.jsonl"]
    assert len(documents) > 40  # every example task file the repository ships, shorthands (messages, criteria) too
    for doc in documents:
        errors = list(validator.iter_errors(doc))
        assert not errors, (doc["task"]["id"], errors[0].message[:300])
    bad = [json.loads(line) for line in (EXAMPLES / "bad.jsonl").read_text().splitlines()]
    assert [validator.is_valid(d) for d in bad] == [True, True, False]  # its unknown test kind
    many = [_yaml(EXAMPLES / "add.yaml"), _yaml(EXAMPLES / "author.yaml")]
    assert validator.is_valid(many)  # a file may hold a list of tasks
    typo = _yaml(EXAMPLES / "add.yaml")
    typo["task"]["entrypoint"] = typo["task"].pop("entry_point")
    assert any("entrypoint" in e.message for e in validator.iter_errors(typo))
    bad_kind = _yaml(EXAMPLES / "add.yaml")
    bad_kind["task"]["tests"][0]["kind"] = "unit"
    assert not validator.is_valid(bad_kind)


def test_the_docs_show_the_yaml_language_server_line():
    page = (ROOT / "docs/tasks.md").read_text(encoding="utf-8")
    assert "oracle schema task > oracle-task.schema.json" in page
    assert "# yaml-language-server: $schema=./oracle-task.schema.json" in page


@pytest.mark.slow
def test_init_writes_an_example_of_each_kind_that_evaluates_as_is(tmp_path: Path):
    import jsonschema

    done = oracle("init", str(tmp_path / "start"))
    assert done.returncode == 0, done.stderr
    start = tmp_path / "start"
    names = ["agent_run.yaml", "code.yaml", "open_ended.yaml", "oracle-task.schema.json", "short_answer.yaml"]
    assert sorted(p.name for p in start.iterdir()) == names
    schema = json.loads((start / "oracle-task.schema.json").read_text())
    for name in ("code.yaml", "short_answer.yaml", "agent_run.yaml", "open_ended.yaml"):
        text = (start / name).read_text()
        assert text.startswith("# yaml-language-server: $schema=./oracle-task.schema.json\n")
        assert sum(line.lstrip().startswith("#") for line in text.splitlines()) >= 3  # commented
        jsonschema.validate(_yaml(start / name), schema)
    expected = {"code.yaml": ("verifier", "good"), "short_answer.yaml": ("verifier", "sentence"),
                "agent_run.yaml": ("verifier", "careful")}
    for name, (evaluator, best) in expected.items():
        run = oracle("evaluate", str(start / name), "--json", "--no-store", cwd=tmp_path)
        assert run.returncode == 0, (name, run.stderr)
        (row,) = rows(run.stdout)
        assert (row["status"], row["evaluator"], row["best"]) == ("ok", evaluator, [best]), name
        assert row["result"]["result"]["ranking"][-1] != best  # the examples tell their candidates apart
    again = oracle("init", str(start))
    assert again.returncode == 2 and b"already there (--force overwrites them)" in again.stderr
    assert oracle("init", str(start), "--force").returncode == 0


def _criteria_judge(request):
    from tests.plugins.scripted_server import chat_reply
    from tests.test_llm_judge import pointwise_json

    return chat_reply(pointwise_json({"c1": 9, "c2": 8, "c3": 7}))


@pytest.mark.slow
def test_inits_open_ended_example_with_a_model_and_without_one(tmp_path: Path, scripted_server):
    assert oracle("init", str(tmp_path)).returncode == 0
    task = str(tmp_path / "open_ended.yaml")
    scripted_server.set_handler(_criteria_judge)
    env = {**os.environ, "ORACLE_BASE_URL": scripted_server.base_url, "ORACLE_MODEL": "scripted-model"}
    judged = oracle("evaluate", task, "--json", "--no-store", env=env, cwd=tmp_path)
    assert judged.returncode == 0, judged.stderr
    (row,) = rows(judged.stdout)
    assert row["status"] == "ok" and row["evaluator"] == "llm_judge"
    # 9, 8 and 7 of 1..10 on the three criteria, weighted 1, 1 and 0.5: (8/9 + 7/9 + 0.5 * 6/9) / 2.5
    assert row["score"] == pytest.approx((8 / 9 + 7 / 9 + 0.5 * 6 / 9) / 2.5, abs=1e-3)
    assert scripted_server.requests  # the judge was asked
    text = oracle("evaluate", task, "-q", "--no-store", env=env, cwd=tmp_path).stdout.decode()
    assert re.search(r"calls 1  cost unknown", text), text
    # no server: the existing hint, exit 3, never a traceback
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "ORACLE_BASE_URL": f"http://127.0.0.1:{port}/v1", "ORACLE_MODEL": "scripted-model"}
    down = oracle("evaluate", task, "--no-store", env=env, cwd=tmp_path)
    out = down.stdout.decode() + down.stderr.decode()
    assert down.returncode == 3 and "Traceback" not in out and "internal error" not in out
    assert f"nothing is listening at http://127.0.0.1:{port}/v1" in out and "oracle model serve" in out
    assert "cost $0 (no model answered)" in out
