"""Config: one frozen object, strict keys, file formats, env overrides, hash without secrets."""

from __future__ import annotations

import pytest

from oracle.config.model import OracleConfig, apply_env_overrides
from oracle.errors import ConfigError
from oracle.routing._chain import PolicyChain


def test_defaults_hash_is_stable_and_changes_with_settings():
    assert OracleConfig().hash() == OracleConfig().hash()
    other = OracleConfig.model_validate({"routing": {"threshold": 0.2}})
    assert other.hash() != OracleConfig().hash()


def test_secret_key_not_in_hash_or_dump():
    a = OracleConfig.model_validate({"providers": {"judge": {"api_key": "sk-secret-1"}}})
    b = OracleConfig.model_validate({"providers": {"judge": {"api_key": "sk-secret-2"}}})
    assert a.hash() == b.hash()
    assert "sk-secret" not in a.model_dump_json()
    assert a.providers.judge.resolved_api_key() == "sk-secret-1"


def test_unknown_policy_and_key_rejected():
    # The chain that builds the policies checks their names (the registry is routing's).
    config = OracleConfig.model_validate({"routing": {"policies": {"magic": {"weight": 1}}}})
    with pytest.raises(ConfigError, match=r"routing.policies: unknown policies \['magic'\]"):
        PolicyChain(config)
    with pytest.raises(ConfigError, match="routing.treshold"):
        OracleConfig.load(_write("routing:\n  treshold: 1\n", ".yaml"), env=False)


def test_python_and_toml_configs(tmp_path):
    py = tmp_path / "c.py"
    py.write_text("CONFIG = {'routing': {'default_evaluator': 'decision_judge'}}\n")
    assert OracleConfig.load(py, env=False).routing.default_evaluator == "decision_judge"
    toml = tmp_path / "c.toml"
    toml.write_text("[verifier]\ntimeout_s = 3\n")
    assert OracleConfig.load(toml, env=False).verifier.timeout_s == 3


def test_env_overrides():
    env = {"ORACLE_BASE_URL": "http://h:1/v1", "ORACLE_MODEL": "m", "ORACLE_API_KEY": "k",
           "ORACLE_DECISION_URL": "http://d:2/v1/systemone"}
    cfg = OracleConfig.model_validate(apply_env_overrides({}, env))
    assert cfg.providers.judge.base_url == "http://h:1/v1" and cfg.providers.judge.model == "m"
    assert cfg.providers.judge.api_key_env == "ORACLE_API_KEY"
    assert cfg.providers.decision.kind == "systemone"


def _write(text, suffix):
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
        f.write(text)
    return f.name


def test_cached_hashes_follow_changed_copies():
    from oracle.tasks.task import Task

    cfg = OracleConfig()
    changed = cfg.model_copy(update={"routing": cfg.routing.model_copy(update={"threshold": 0.1})})
    assert cfg.hash() == OracleConfig().hash() and changed.hash() != cfg.hash()
    task = Task(id="a", prompt="p")
    assert task.content_hash() != task.model_copy(update={"prompt": "q"}).content_hash()


# --- the environment: ORACLE_<SECTION>__<FIELD>, the short aliases, secrets ------------------------

def _env(monkeypatch, **values):
    import os

    for name in list(os.environ):
        if name.upper().startswith("ORACLE_"):
            monkeypatch.delenv(name)
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def test_every_section_is_settable_by_its_path(monkeypatch, tmp_path):
    _env(monkeypatch, ORACLE_ROUTING__THRESHOLD="0.3", oracle_decision_judge__samples="7",
         ORACLE_PROVIDERS__JUDGE__DEADLINE_S="null", ORACLE_PROVIDERS__JUDGE__HEADERS__X_TEAM="evals",
         ORACLE_ROUTING__ENABLED_EVALUATORS='["verifier", "llm_judge"]',
         ORACLE_PROVIDERS__PRICES='{"my-model": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}}',
         ORACLE_LLM_JUDGE__LOGPROBS="false", ORACLE_ESCALATION__REQUIRED_ISOLATION="rlimits")
    path = tmp_path / "c.yaml"
    path.write_text("routing:\n  default_evaluator: verifier\n  threshold: 0.9\n")
    cfg = OracleConfig.load(path)
    assert cfg.routing.threshold == 0.3 and cfg.routing.default_evaluator == "verifier"  # merged with the file
    assert cfg.routing.enabled_evaluators == ("verifier", "llm_judge")
    assert cfg.decision_judge.samples == 7 and cfg.llm_judge.logprobs is False
    assert cfg.providers.judge.deadline_s is None and cfg.providers.judge.headers == {"x_team": "evals"}
    assert cfg.providers.prices["my-model"].output_per_mtok == 1.5
    assert cfg.escalation.required_isolation == "rlimits"
    assert OracleConfig.load(path, env=False).routing.threshold == 0.9


def test_short_aliases_still_work_and_the_scheme_wins_over_them(monkeypatch):
    _env(monkeypatch, ORACLE_BASE_URL="http://127.0.0.1:9/v1", ORACLE_MODEL="from-alias",
         ORACLE_DECISION_URL="http://d:2/v1", ORACLE_DECISION_MODEL="decider")
    cfg = OracleConfig.load()
    assert cfg.providers.judge.base_url == "http://127.0.0.1:9/v1" and cfg.providers.judge.model == "from-alias"
    assert cfg.providers.decision.kind == "systemone" and cfg.providers.decision.model == "decider"
    monkeypatch.setenv("ORACLE_PROVIDERS__JUDGE__MODEL", "from-scheme")
    monkeypatch.setenv("ORACLE_PROVIDERS__DECISION__KIND", "decisions")
    cfg = OracleConfig.load()
    assert cfg.providers.judge.model == "from-scheme" and cfg.providers.decision.kind == "decisions"


def test_the_judge_key_is_not_the_decision_endpoints(monkeypatch):
    _env(monkeypatch, ORACLE_API_KEY="sk-judge", ORACLE_DECISION_URL="http://d:2/v1/systemone")
    cfg = OracleConfig.load()
    assert cfg.providers.judge.resolved_api_key() == "sk-judge"
    assert cfg.providers.decision.resolved_api_key() is None
    monkeypatch.setenv("ORACLE_DECISION_API_KEY", "sk-decider")
    assert OracleConfig.load().providers.decision.resolved_api_key() == "sk-decider"


@pytest.mark.parametrize(("name", "value", "said"), [
    ("ORACLE_ROUTING__THRESHOLD", "abc", "valid number"),
    ("ORACLE_ROUTING__THRESHOLD", "7", "less than or equal to 1"),
    ("ORACLE_ROUTING__TRESHOLD", "0.2", "unknown key"),
    ("oracle_decision_judge__backend", "magic", "native"),
    ("ORACLE_PROVIDERS__PRICES", "{not json", "JSON"),
    ("ORACLE_PROVIDERS__JUDGE__TIMEOUT_S", "-1", "greater than 0"),
    ("ORACLE_BASE_URL", "https://api.example.com/v1", "name the model"),
])
def test_a_bad_value_is_a_config_error_naming_the_variable(monkeypatch, name, value, said):
    _env(monkeypatch, **{name: value})
    with pytest.raises(ConfigError, match=said) as info:
        OracleConfig.load()
    assert name in str(info.value)


def test_secrets_stay_out_of_the_hash_and_config_show(monkeypatch):
    import json
    import subprocess
    import sys

    _env(monkeypatch, ORACLE_PROVIDERS__JUDGE__API_KEY="sk-secret-1")
    first = OracleConfig.load()
    monkeypatch.setenv("ORACLE_PROVIDERS__JUDGE__API_KEY", "sk-secret-2")
    second = OracleConfig.load()
    assert first.providers.judge.resolved_api_key() == "sk-secret-1"
    assert first.hash() == second.hash() == OracleConfig.load(env=False).hash()
    assert first.public_dump()["providers"]["judge"]["api_key"] == "set"
    assert OracleConfig.load(env=False).public_dump()["providers"]["judge"]["api_key"] == "unset"

    def show(**env: str) -> str:
        import os

        clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("ORACLE_")}
        out = subprocess.run([sys.executable, "-m", "oracle", "config", "show", "--json"], capture_output=True,
                             text=True, env={**clean, **env}, check=True)
        return out.stdout

    shown = show(ORACLE_PROVIDERS__JUDGE__API_KEY="sk-secret-3")
    assert "sk-secret" not in shown and json.loads(shown)["config"]["providers"]["judge"]["api_key"] == "set"
    shown = show(ORACLE_API_KEY="sk-secret-4")
    assert "sk-secret" not in shown and json.loads(shown)["config"]["providers"]["judge"]["api_key"] == "set"
    assert json.loads(show())["config"]["providers"]["judge"]["api_key"] == "unset"


def test_pydantic_settings_loads_only_when_the_scheme_is_used(tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    task = root / "examples" / "n_plus_one" / "task.json"
    code = ("import contextlib, io, json, sys\nfrom oracle.cli.main import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    rc = main(['route', {str(task)!r}, '--json'])\n"
            "print(json.dumps([rc, 'pydantic_settings' in sys.modules]))")
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("ORACLE_")}

    def run(**env: str) -> list:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                             env={**clean, **env}, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    assert run() == [0, False]
    assert run(ORACLE_MODEL="m") == [0, False]                     # aliases: no import either
    assert run(ORACLE_ROUTING__THRESHOLD="0.3") == [0, True]


def test_a_panel_member_naming_no_provider_section_is_refused_naming_the_member(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("llm_judge:\n  panel:\n    - {provider: nope}\n    - {provider: judge}\n")
    with pytest.raises(ConfigError) as refused:
        OracleConfig.load(path, env=False)
    said = str(refused.value)
    assert said == f"{path}: llm_judge.panel.0: provider: no provider section named 'nope' (known: judge)"
    path.write_text("llm_judge:\n  panel:\n    - {base_url: 'https://judge.example/v1'}\n    - {provider: judge}\n")
    with pytest.raises(ConfigError, match=r"llm_judge.panel.0: model: name the model to ask for at https://judge"):
        OracleConfig.load(path, env=False)
    path.write_text("decision_judge:\n  panel:\n    - {provider: judge}\n")
    with pytest.raises(ConfigError, match=r"decision_judge.panel: .*two or more members"):
        OracleConfig.load(path, env=False)


def test_the_response_cache_never_changes_the_config_hash():
    plain = OracleConfig.model_validate({"providers": {"endpoints": {"b": {"base_url": "http://127.0.0.1:9/v1"}}}})
    cached = OracleConfig.model_validate({"providers": {
        "judge": {"cache_path": "/tmp/x.sqlite"},
        "endpoints": {"b": {"base_url": "http://127.0.0.1:9/v1", "cache_path": "/tmp/y.sqlite"}}}})
    assert plain.hash() == cached.hash()
    assert plain.hash() != OracleConfig.model_validate({"llm_judge": {"seed": 1}, "providers": {
        "endpoints": {"b": {"base_url": "http://127.0.0.1:9/v1"}}}}).hash()
