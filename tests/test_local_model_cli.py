"""``oracle model status`` against endpoints that do not need the real model."""

from __future__ import annotations

import json

from oracle.cli.main import main as cli_main


def test_status_unreachable_endpoint_exits_1(capsys):
    assert cli_main(["model", "status", "--base-url", "http://127.0.0.1:9/v1"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["reachable"] is False and report["models"] == []


def test_status_endpoint_without_configured_model_exits_1(scripted_server, monkeypatch, capsys):
    monkeypatch.setenv("ORACLE_BASE_URL", scripted_server.base_url)
    monkeypatch.setenv("ORACLE_MODEL", "not-served")
    assert cli_main(["model", "status"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["reachable"] and report["models"] == ["scripted-model"] and not report["model_served"]
    assert scripted_server.requests[0].path == "/v1/models"


def test_status_endpoint_serving_configured_model_exits_0(scripted_server, monkeypatch, capsys):
    monkeypatch.setenv("ORACLE_BASE_URL", scripted_server.base_url)
    monkeypatch.setenv("ORACLE_MODEL", "scripted-model")
    assert cli_main(["model", "status"]) == 0
