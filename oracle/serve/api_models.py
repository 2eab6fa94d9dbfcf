"""The HTTP API's own request and response shapes (results and routes are the library's models)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from oracle.results.result import OracleResult

API_VERSION = "1"


class ApiError(BaseModel):
    """Every error the API answers with (4xx and 5xx)."""

    error: str
    """A stable code: task_validation, not_found, already_answered, busy, too_large, timeout, ..."""
    message: str
    """What went wrong, for a person."""
    field: str | None = None
    """The input field at fault, dotted (``task.tests[0]`` for an unknown test kind), when there is one."""
    job_id: str | None = None
    """On a 504 from a waiting evaluate: the job still running, to poll at ``/v1/jobs/{job_id}``."""


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    requests_in_flight: int
    jobs_running: int
    batches_running: int


class VersionInfo(BaseModel):
    name: Literal["oracle-router"] = "oracle-router"
    version: str
    api: str = API_VERSION
    config_hash: str
    """Hash of the evaluation config this server runs with (it is in every result's route too)."""


class JobInfo(BaseModel):
    """An evaluation job: ``running`` until the result (or the error) is there."""

    job_id: str
    state: Literal["running", "done", "failed"]
    created_at: float
    finished_at: float | None = None
    result: OracleResult | None = None
    error: str | None = None


class BatchInfo(BaseModel):
    """A batch run: how many input lines, how many rows so far, and the summary once done."""

    batch_id: str
    state: Literal["running", "done", "failed"]
    total: int
    """Non-blank input lines; each gets exactly one row."""
    rows: int
    created_at: float
    finished_at: float | None = None
    summary: dict[str, Any] | None = None
    error: str | None = None


class EscalationSummary(BaseModel):
    id: str
    task_id: str
    state: Literal["pending", "answered", "resolved"]
    reason: str
    blocking: bool
    question: str
    options: list[str] | None = None


class AnswerRequest(BaseModel):
    """A human's answer to a stored request (apply it with ``POST /v1/escalations/{id}/resume``)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(default="", max_length=100_000)
    """Free text, appended to the task when the request is resumed."""
    choice: str | None = Field(default=None, max_length=10_000)
    """One of the request's options."""
    answered_by: str | None = Field(default=None, max_length=200)
    replace: bool = False
    """Replace an existing answer (otherwise the first answer stands: 409)."""
