"""Run one code test on one program in the sandbox: the path every candidate and the task's
reference solution take (plan, warm pool, verdict), so the reference is checked exactly as the
candidates are judged."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable

from oracle.config.model import VerifierConfig
from oracle.strategies.verifier import harness
from oracle.strategies.verifier.extract import ExtractedCode
from oracle.tasks.task import DEFAULT_MODULE
from oracle.tasks.testspec import PytestTest


@dataclass(frozen=True)
class CodeRunner:
    """What a run of a code test needs beyond the program and the test."""

    pool: Any
    cfg: VerifierConfig
    entry_point: str | None
    prompt_code: str | None
    interpreters: dict[str, str]
    in_process: bool
    integrity: str
    execute: Callable[[Any, Any], Any]
    """``run_in_pool`` (oracle/sandbox/runs.py): one plan on the pool, blocking."""
    module: str = DEFAULT_MODULE
    """``task.module``: the name a pytest test imports the program under."""
    pytest: Any = None
    """The test side's pytest for pytest tests (the environment's or the pinned copy), else None."""

    async def run(self, test: harness.CodeTest, index: int, code: ExtractedCode) -> harness.TestOutcome:
        cfg = self.cfg
        if isinstance(test, PytestTest) and code.language != "python":
            return harness.TestOutcome(harness.test_name(test, index), test.kind, "error",
                                       f"a pytest test runs Python programs; this one is {code.language}",
                                       0.0, test.weight, before_test=True)
        plan = harness.build_plan(
            test, code.code or "", language=code.language, entry_point=self.entry_point,
            prompt_code=self.prompt_code, timeout_s=test.timeout_s or cfg.timeout_s,
            output_limit=cfg.output_limit_bytes, node=self.interpreters.get("javascript"), in_process=self.in_process,
            module=self.module, pytest=self.pytest)
        loop = asyncio.get_running_loop()
        run = await loop.run_in_executor(self.pool.executor, self.execute, self.pool, plan)
        return harness.interpret(test, index, run, tolerance=cfg.float_tolerance, memory_mb=cfg.memory_mb,
                                 integrity=self.integrity)

    def cache_key(self, content_hash: str, version: str, language: str) -> tuple:
        """What a reference run's outcomes depend on besides the task: the settings of the run."""
        cfg = self.cfg
        return (content_hash, version, self.in_process, self.interpreters.get(language), cfg.backend,
                cfg.allow_weak_isolation, cfg.timeout_s, cfg.memory_mb, cfg.max_pids, cfg.disk_mb,
                cfg.output_limit_bytes, cfg.float_tolerance, self.pytest)
