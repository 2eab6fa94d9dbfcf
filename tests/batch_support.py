"""Helpers shared by the batch tests: a mixed task file and a deterministic fault-injecting handler."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from tests.data.tasks import open_task, question_task
from tests.plugins.scripted_server import (Reply, decision_handler, garbage_reply, status_reply,
                                           truncated_reply)


def write_mixed_tasks(path: Path, n: int, *, seed: int = 7) -> dict[str, int]:
    """n lines: decision-judge tasks, LLM-judge tasks, invalid JSON, schema errors and a duplicate."""
    rnd = random.Random(seed)
    kinds = {"question": 0, "open": 0, "bad_json": 0, "bad_schema": 0, "duplicate": 0}
    lines = []
    for i in range(n):
        r = rnd.random()
        if r < 0.08:
            lines.append('{"task": {"id": "cut-%d", "prompt": "half a line' % i)
            kinds["bad_json"] += 1
        elif r < 0.16:
            lines.append(json.dumps({"task": {"id": f"bad-{i}", "prompt": "x", "difficulty": "extreme"},
                                     "trajectories": [{"id": "a", "answer": "y"}]}))
            kinds["bad_schema"] += 1
        elif r < 0.18 and lines and lines[-1].startswith('{"task"') and '"cut-' not in lines[-1] \
                and '"bad-' not in lines[-1]:
            lines.append(lines[-1])
            kinds["duplicate"] += 1
        elif r < 0.75:
            lines.append(json.dumps(question_task(id=f"q{i}", prompt=f"Ticket {i}: charged twice?")))
            kinds["question"] += 1
        else:
            lines.append(json.dumps(open_task(id=f"o{i}")))
            kinds["open"] += 1
    path.write_text("\n".join(lines) + "\n")
    return kinds


def faulty_handler(fault_rate: float = 0.3):
    """Faults chosen by a hash of the request body, so a rerun of a task meets the same fault."""
    def handle(request) -> Reply:
        h = int(hashlib.sha256(request.body).hexdigest()[:8], 16) / 0xFFFFFFFF
        if h < fault_rate * 0.4:
            return status_reply(500)
        if h < fault_rate * 0.6:
            return Reply(fault="reset")
        if h < fault_rate * 0.8:
            return garbage_reply()
        if h < fault_rate:
            return truncated_reply()
        if request.path.endswith("/decisions"):
            billing = round(0.2 + 0.75 * (h - fault_rate) / (1 - fault_rate), 3)
            return decision_handler(probabilities={"team": {"billing": billing, "technical": 1 - billing}})(request)
        from tests.plugins.scripted_server import auto_reply
        return auto_reply(request)
    return handle


def batch_config(server, **escalation):
    from oracle.config.model import OracleConfig

    return OracleConfig.model_validate({
        "providers": {"judge": {"base_url": server.base_url, "max_retries": 0, "timeout_s": 5},
                      "decision": {"kind": "decisions", "base_url": server.base_url, "max_retries": 0,
                                   "timeout_s": 5}},
        "escalation": escalation})


def verdicts(path: Path) -> dict[int, tuple]:
    out = {}
    for raw in path.read_text().splitlines():
        r = json.loads(raw)
        out.setdefault(r["line"], []).append((r["task_id"], r["status"], r["evaluator"], tuple(r["best"]),
                                              r["score"], r["passed"],
                                              (r["escalation"] or {}).get("reason"),
                                              (r["error"] or {}).get("type")))
    return {k: tuple(v) for k, v in out.items()}
