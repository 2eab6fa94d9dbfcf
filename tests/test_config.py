"""Config: one frozen object, strict keys, file formats, env overrides, hash without secrets."""

from __future__ import annotations

import pytest

from oracle.config import OracleConfig, apply_env_overrides
from oracle.errors import ConfigError


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
    with pytest.raises(Exception, match="unknown policies"):
        OracleConfig.model_validate({"routing": {"policies": {"magic": {"weight": 1}}}})
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
    f = tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False)
    f.write(text)
    f.close()
    return f.name


def test_cached_hashes_follow_changed_copies():
    from oracle.task import Task

    cfg = OracleConfig()
    changed = cfg.model_copy(update={"routing": cfg.routing.model_copy(update={"threshold": 0.1})})
    assert cfg.hash() == OracleConfig().hash() and changed.hash() != cfg.hash()
    task = Task(id="a", prompt="p")
    assert task.content_hash() != task.model_copy(update={"prompt": "q"}).content_hash()
