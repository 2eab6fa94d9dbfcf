"""Private: batch runs (``oracle batch``), JSONL in, one JSONL row per input line out, resumable
after a crash.

Modules: ``source`` (lazy input, resume keys), ``output`` (fsynced appends, resume scan), ``rows``
(row shape), ``local`` (asyncio engine), ``ray_engine`` (Ray engine, optional extra), ``progress``,
``summary`` (per-evaluator figures, Parquet export), ``runner`` (``run_batch``).
"""

from oracle.batch.runner import BatchReport, run_batch
from oracle.batch.summary import export_parquet, parquet_available, summarize

__all__ = ["BatchReport", "run_batch", "summarize", "export_parquet", "parquet_available"]
