"""``--seed N``, shared by ``oracle evaluate`` and ``oracle batch``: ``llm_judge.seed`` for one run.

Why a flag: the seed fixes the LLM judge's candidate placement and sampling seeds
(docs/llm-judge.md); rerunning with another seed, without editing the config file, is how one
measures how much a verdict depends on placement.
"""

from __future__ import annotations

import argparse

from oracle.config.model import OracleConfig


def add_seed_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=None,
                   help="llm_judge.seed for this run (candidate placement, sampling seeds); default: the config's")


def with_seed(config: OracleConfig, seed: int | None) -> OracleConfig:
    """The config with ``llm_judge.seed`` set for this run (validated as a config file is)."""
    if seed is None:
        return config
    data = config.model_dump(mode="python")
    data["llm_judge"]["seed"] = seed
    return type(config).model_validate(data)
