"""One configuration object for the whole oracle: routing weights, thresholds, providers, limits.

``OracleConfig`` is frozen and forbids unknown keys. It loads from YAML, TOML or Python and its
hash (over a canonical JSON dump, secrets excluded) goes into every trace, so two results can be
compared knowing whether the same settings produced them. Each default lives here, once. Every
setting can also come from the environment, ``ORACLE_<SECTION>__<FIELD>`` (oracle/config/_env.py);
an API key never enters the hash, and a dump shows only whether it is set.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, SecretStr, SerializeAsAny, ValidationError,
                      field_validator, model_validator)

from oracle._internal.canonical import sha256_json
from oracle._internal.frozen import FrozenWithCache
from oracle.errors import ConfigError
from oracle.tasks._limits import InputLimits
from oracle.rubrics.gates import Gate
from oracle.routing.settings import (CUE_PREFIX_CHARS, POLICY_SETTINGS, SCAN_CHARS, PolicySettings,
                                    merge_policy_settings)
from oracle.tasks.environment import Environment
from oracle.tasks.task import EVALUATORS, EvaluatorKind

# allow_inf_nan=False: an infinite timeout or a NaN threshold is bad input, not a setting.
_FROZEN = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


DEFAULT_POLICY_WEIGHTS: dict[str, float] = {name: cls().weight for name, cls in POLICY_SETTINGS.items()}
"""Default weight of each built-in policy (the settings models in oracle/routing/settings.py hold them)."""


class RoutingConfig(BaseModel):
    """How votes become a route."""

    model_config = _FROZEN
    policies: dict[str, SerializeAsAny[PolicySettings]] = Field(
        default_factory=lambda: merge_policy_settings({}))
    """Policy name -> its weight and the numbers its votes use (oracle/routing/settings.py). Named
    policies take the given fields over their defaults; built-in policies not named keep theirs."""
    threshold: float = Field(default=0.45, ge=0, le=1)
    """Below this normalized confidence the router falls back to ``default_evaluator``."""
    default_evaluator: EvaluatorKind = "llm_judge"
    enabled_evaluators: tuple[EvaluatorKind, ...] = EVALUATORS
    """Evaluators the router may pick; the others are gated out."""
    cue_prefix_chars: int = Field(default=CUE_PREFIX_CHARS, ge=256, le=1_000_000)
    """Cue densities are computed on this prefix of the prompt so routing cost stays flat."""
    scan_chars: int = Field(default=SCAN_CHARS, ge=256, le=1_000_000)
    """Every other text a signal reads (answers, outputs, reference, criteria) is read this far:
    the head, and for end-anchored checks the tail; so routing cost does not grow with them."""

    @field_validator("policies", mode="before")
    @classmethod
    def _typed_policies(cls, value: Any) -> Any:
        return merge_policy_settings(value)


class EscalationConfig(BaseModel):
    """When the oracle asks a human instead of pretending to know."""

    model_config = _FROZEN
    route_margin: float = Field(default=0.15, ge=0, le=1)
    """A low-confidence route whose runner-up is within this margin raises a request."""
    score_spread: float = Field(default=0.05, ge=0, le=1)
    """Candidates whose best scores differ by less than this cannot be separated."""
    required_isolation: Literal["none", "rlimits", "landlock", "namespaces"] = "namespaces"
    """Code run with weaker isolation than this raises a request."""
    store_path: str = ".oracle/escalations.sqlite"
    enabled: bool = True


class Price(BaseModel):
    """USD per million tokens."""

    model_config = _FROZEN
    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


LOCAL_MODEL_ALIAS = "smollm2-135m-instruct"
"""Model name the embedded llama.cpp server answers to (``oracle model serve``)."""
LOCAL_BASE_URL = "http://127.0.0.1:8765/v1"
"""Where ``oracle model serve`` listens by default: the judge endpoint when none is configured."""
SYSTEMONE_MODEL_ALIAS = "jev-latest"
"""The model name every System One server accepts for its current model (spec §3.1, request.model-alias)."""
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

ProviderKind = Literal["openai", "anthropic", "decisions", "systemone"]


class ProviderSettings(BaseModel):
    """One model endpoint and how calls to it behave."""

    model_config = _FROZEN
    kind: ProviderKind = "openai"
    base_url: str = LOCAL_BASE_URL
    model: str | None = None
    """The model to ask for. Left unset it is never borrowed from another endpoint: the embedded
    model's name for an OpenAI-compatible server on this machine, ``jev-latest`` for System One,
    none (the server's default, no ``model`` field sent) for the Decisions format; an
    OpenAI-compatible server elsewhere and Anthropic must be told which model to use."""
    api_key: SecretStr | None = None
    """Prefer ``api_key_env``; a key given here is never logged, traced or hashed."""
    api_key_env: str | None = None
    """Name of the environment variable holding the key."""
    timeout_s: float = Field(default=120.0, gt=0)
    deadline_s: float | None = Field(default=600.0, gt=0)
    """Overall deadline for one logical call, retries included (None: no deadline). A server
    that keeps a call alive with retries and slow replies cannot hold a task past it."""
    max_reply_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    """A reply body larger than this (after decompression) fails the call: ``ResponseTooLarge``."""
    max_retries: int = Field(default=4, ge=0)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=20.0, ge=0)
    concurrency: int = Field(default=4, ge=1)
    cache_path: str | None = None
    """SQLite response cache for reproducible reruns (None: off)."""
    headers: dict[str, str] = Field(default_factory=dict)
    structured_output: Literal["auto", "json_schema", "json_object_schema", "none"] = "auto"
    """How to ask an OpenAI-compatible server for schema-constrained JSON. ``json_schema`` is the
    OpenAI form; ``json_object_schema`` is llama-cpp-python's ``{"type": "json_object", "schema"}``;
    ``auto`` uses the latter for the embedded local model and the former elsewhere."""
    price_provider: str | None = None
    """Whose price list this endpoint's calls are read from (a genai-prices provider id: "openai",
    "anthropic", "openrouter", ...). None: the provider the base URL names, else the model name; a
    server on this machine has no price unless ``providers.prices`` names its model (oracle/providers/prices.py)."""

    @model_validator(mode="before")
    @classmethod
    def _default_model(cls, data: Any) -> Any:
        """Fill an unset ``model`` from this endpoint's own kind and address, never another's."""
        if not isinstance(data, dict) or data.get("model") is not None:
            return data
        kind, base_url = data.get("kind", "openai"), data.get("base_url", LOCAL_BASE_URL)
        if kind == "systemone":
            return {**data, "model": SYSTEMONE_MODEL_ALIAS}
        if kind == "decisions":
            return data
        if kind == "openai" and isinstance(base_url, str) and is_loopback(base_url):
            return {**data, "model": LOCAL_MODEL_ALIAS}
        raise ValueError(f"model: name the model to ask for at {base_url} (the embedded model's name is "
                         "only assumed for a server on this machine)")

    def resolved_api_key(self) -> str | None:
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.api_key_env:
            return os.environ.get(self.api_key_env)
        return None


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (127.0.0.1, localhost, ::1)."""
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return host.lower() in _LOOPBACK_HOSTS or host.startswith("127.")


class ProvidersConfig(BaseModel):
    """The judge endpoint, an optional native decision endpoint, and the price table."""

    model_config = _FROZEN
    judge: ProviderSettings = Field(default_factory=ProviderSettings)
    decision: ProviderSettings | None = None
    """A native decision endpoint (/v1/decisions or /v1/systemone); None: logprob readout on judge."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Model name -> price, over the bundled genai-prices table (oracle/providers/prices.py); a model neither
    knows gets cost None, never 0."""
    endpoints: dict[str, ProviderSettings] = Field(default_factory=dict)
    """More named endpoints, for judge panels (``llm_judge.panel``, ``decision_judge.panel``): a
    member names one with ``provider: NAME``, as it can name ``judge`` or ``decision``."""

    @field_validator("endpoints")
    @classmethod
    def _endpoint_names(cls, value: dict[str, ProviderSettings]) -> dict[str, ProviderSettings]:
        for name in value:
            if name in ("judge", "decision") or not name.strip():
                raise ValueError(f"endpoints: {name!r} is reserved or empty (judge and decision have sections)")
        return value


class PanelMember(BaseModel):
    """One judge of a panel: a provider section of the config by name, or an OpenAI-compatible URL.

    Why a panel: one grader's bias is indistinguishable from the candidate's quality; several
    graders judging independently with the same rubric show where they split."""

    model_config = _FROZEN
    provider: str | None = None
    """``judge``, ``decision`` or a key of ``providers.endpoints``."""
    base_url: str | None = None
    """An OpenAI-compatible URL (the same key rules as a provider section: a model must be named
    for a server that is not on this machine; the key comes from ``api_key_env``)."""
    model: str | None = None
    """The model to ask for (over the named section's own)."""
    temperature: float | None = Field(default=None, ge=0)
    """Over the judge's own temperature for this member."""
    api_key_env: str | None = None
    """With ``base_url``: the environment variable holding this member's key."""
    name: str | None = None
    """The member's label in results; default: the model's name (numbered when two share one)."""

    @model_validator(mode="after")
    def _one_source(self) -> "PanelMember":
        if (self.provider is None) == (self.base_url is None):
            raise ValueError("panel member: give exactly one of provider (a provider section's name) or base_url")
        if self.api_key_env is not None and self.base_url is None:
            raise ValueError("api_key_env: only with base_url (a named provider section carries its own key)")
        return self

    def settings(self, providers: "ProvidersConfig") -> ProviderSettings:
        """This member's endpoint as a full ``ProviderSettings`` (validated as a provider section is)."""
        if self.base_url is not None:
            data: dict[str, Any] = {"kind": "openai", "base_url": self.base_url}
            if self.model is not None:
                data["model"] = self.model
            if self.api_key_env is not None:
                data["api_key_env"] = self.api_key_env
            if providers.judge.cache_path is not None:
                data["cache_path"] = providers.judge.cache_path
            return ProviderSettings.model_validate(data)
        base = endpoint_named(providers, self.provider or "")
        return base if self.model is None else base.model_copy(update={"model": self.model})


def endpoint_named(providers: "ProvidersConfig", name: str) -> ProviderSettings:
    """The provider section called ``name`` (``judge``, ``decision`` or an ``endpoints`` key)."""
    if name == "judge":
        return providers.judge
    if name == "decision" and providers.decision is not None:
        return providers.decision
    if name in providers.endpoints:
        return providers.endpoints[name]
    known = ", ".join(["judge", *(["decision"] if providers.decision is not None else []), *providers.endpoints])
    raise ValueError(f"provider: no provider section named {name!r} (known: {known})")


def member_labels(panel: "tuple[PanelMember, ...]", providers: "ProvidersConfig") -> list[str]:
    """One label per member, unique: its ``name``, else its model's name, numbered on a clash."""
    raw = [m.name or m.settings(providers).model or m.provider or m.base_url or "member" for m in panel]
    seen: dict[str, int] = {}
    out = []
    for label in raw:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if raw.count(label) == 1 else f"{label}#{seen[label]}")
    return out


def _check_panel(panel: "tuple[PanelMember, ...]") -> "tuple[PanelMember, ...]":
    if len(panel) == 1:
        raise ValueError("panel: a panel needs two or more members (leave it empty for a single judge)")
    names = [m.name for m in panel if m.name is not None]
    if len(names) != len(set(names)):
        raise ValueError("panel: member names must be unique")
    return panel


class VerifierConfig(BaseModel):
    """Sandbox and test-running settings."""

    model_config = _FROZEN
    backend: Literal["auto", "nsjail", "bubblewrap", "landlock", "rlimits"] = "auto"
    """auto picks the strongest available; a named backend that is missing is an error."""
    allow_weak_isolation: bool = False
    """Run untrusted code under rlimits only; also needs ORACLE_ALLOW_WEAK_SANDBOX=1."""
    allow_in_process: bool = False
    """Let tasks opt in to ``execution: in_process`` (forgeable verdicts, labelled and escalated)."""
    timeout_s: float = Field(default=10.0, gt=0)
    max_timeout_s: float = Field(default=120.0, gt=0, le=600)
    """Ceiling for a test's own ``timeout_s`` (more is bad input); le=600 matches the test schema."""
    memory_mb: int = Field(default=1024, ge=64)
    max_pids: int = Field(default=64, ge=4)
    output_limit_bytes: int = Field(default=1_000_000, ge=1024)
    float_tolerance: float = Field(default=1e-6, ge=0)
    workers: int | None = Field(default=None, ge=1)
    """Parallel sandbox runs; None uses the number of cores."""
    disk_mb: int = Field(default=64, ge=1)
    """Size of the writable work dir of each run (tmpfs) and the largest file it may write."""
    python_executable: str | None = None
    """Interpreter for Python candidates (and the tests' side); None: the first of sys.executable,
    /usr/bin/python3.11, /usr/bin/python3 that the sandbox user can read and run (a pyenv or a venv
    under /root, or in a home directory of mode 700, is not). One it cannot use is refused with the
    reason (``oracle sandbox check`` prints it); ``environment`` is the way to add packages."""
    environment: Environment | None = None
    """The environment every task runs with unless it names its own (``task.environment`` replaces
    this one as a whole): ``{"python": "/path/to/bin/python"}`` (an interpreter or venv the sandbox
    user can read), ``{"requirements": ["numpy>=2"], "python": "3.11"}`` (built once into
    ``environment_cache``; ``python`` optional: an interpreter path or a version, default the one
    above), ``{"node_modules": "/abs/path/node_modules"}`` for JavaScript. See docs/verifier.md."""
    environment_cache: str | None = None
    """Where built environments are kept, one directory per (requirements, interpreter version,
    platform), shared by every task and run; None: /var/cache/oracle-sandbox/environments when
    the sandbox drops to another user (root), else ~/.cache/oracle/environments. The sandbox
    user must be able to read it."""
    environment_installer: Literal["pip", "uv"] = "pip"
    """What builds environments: the interpreter's own pip (your pip.conf and ``PIP_*`` settings),
    or uv (``uv pip install --target``, with uv's own configuration: ``UV_INDEX_URL``, uv.toml)."""
    environment_build_timeout_s: float = Field(default=900.0, gt=0)
    """Longest one environment build (pip) may take before it fails the task."""
    node_executable: str | None = None
    """Node for JavaScript candidates; None: ``node`` on PATH (JavaScript unsupported without it)."""
    repo_timeout_s: float = Field(default=120.0, gt=0, le=600)
    """A ``repo_tests`` test's whole run (install, collection, the tests) when the test gives no
    ``timeout_s`` of its own (a repository's suite needs more than one function's test)."""
    repo_test_edits: Literal["restore", "fail"] = "restore"
    """A candidate that changes the repository's test files only (an honest agent often adds a
    test): ``restore`` puts them back to the base plus the test patch, reports each as a
    ``tampering`` concern and judges the candidate on the rest; ``fail`` fails it."""
    repo_hook_edits: Literal["fail", "restore"] = "fail"
    """A candidate that changes a ``conftest.py``, the test configuration (pytest.ini, tox.ini,
    setup.cfg, pyproject.toml's pytest section), a site hook (sitecustomize, usercustomize, a .pth)
    or ``.git``: ``fail`` fails it (reported as ``tampering``); ``restore`` restores and judges it."""
    repo_cache: str | None = None
    """Where the base snapshots of repository tasks are kept (one per source and commit); None:
    /var/cache/oracle-sandbox/repositories when the sandbox drops to another user (root), else
    ~/.cache/oracle/repositories."""


class ClaimCheckConfig(BaseModel):
    """A claim check's two opposing questions (task option ``claim_check``) and when they decide.

    A side decides when its probability is at or above its threshold (yes) or at or below one minus
    it (no); in between it is weak. Supported: support yes, challenge no; refuted: the reverse;
    anything else (the two disagree, or either is weak) abstains and asks a human."""

    model_config = _FROZEN
    support_threshold: float = Field(default=0.7, gt=0.5, le=1)
    """P("the claim is supported by the evidence") that counts as yes (1 - this: as no)."""
    challenge_threshold: float = Field(default=0.7, gt=0.5, le=1)
    """P("there is strong evidence that the claim is wrong") that counts as yes (1 - this: as no)."""


class DecisionJudgeConfig(BaseModel):
    """Decision judge settings."""

    model_config = _FROZEN
    pass_threshold: float = Field(default=0.5, ge=0, le=1)
    calibration_file: str | None = None
    backend: Literal["auto", "native", "logprob_readout", "sampled"] = "auto"
    samples: int = Field(default=5, ge=1)
    sample_temperature: float = Field(default=0.8, gt=0)
    coverage_floor: float = Field(default=0.5, ge=0, le=1)
    """Label probability mass below this in a logprob readout (or share of samples naming a label)
    means there is no answer to read: the question is ``unparsed``, never a verdict."""
    low_coverage: Literal["unparsed", "sample"] = "unparsed"
    """A logprob readout below ``coverage_floor``: ``unparsed``, or ``sample`` to ask again by
    sampling (``samples`` at ``sample_temperature``; the floor then applies to the samples)."""
    timeout_s: float = Field(default=120.0, gt=0)
    claim_check: ClaimCheckConfig = Field(default_factory=ClaimCheckConfig)
    panel: tuple[PanelMember, ...] = ()
    """Two or more judges answering every question independently (empty: the one configured
    endpoint). Each member's calls, tokens and cost are kept apart in the ledger."""
    panel_aggregate: Literal["mean", "majority"] = "mean"
    """How members' answers combine: the mean of their probabilities, or the majority of their labels
    (no majority: unparsed, never a guess)."""
    panel_disagreement: float = Field(default=0.3, ge=0, le=1)
    """Members whose probabilities for one answer differ by more than this (or whose labels differ)
    raise an escalating ``panel_disagreement`` concern."""

    _panel = field_validator("panel")(classmethod(lambda cls, v: _check_panel(v)))


class LLMJudgeConfig(BaseModel):
    """LLM judge settings."""

    model_config = _FROZEN
    scale_min: int = 1
    scale_max: int = 10
    per_criterion_calls: bool = False
    repeats: int = Field(default=1, ge=1)
    aggregate: Literal["mean", "majority"] = "mean"
    temperature: float = Field(default=0.0, ge=0)
    max_tokens: int = Field(default=512, ge=16)
    all_pairs_max: int = Field(default=4, ge=2)
    """All pairs up to this many candidates; a sort-based tournament beyond."""
    mode: Literal["auto", "pointwise", "pairwise"] = "auto"
    """auto: one candidate is scored pointwise; several are scored pointwise on the weighted criteria
    first, then judged pairwise in both orders only among those within ``pairwise_margin`` of the top
    (pairwise reorders only inside that close group). pointwise: rubric scores only, ranked by score.
    pairwise: the full tournament."""
    pairwise_margin: float = Field(default=0.1, ge=0, le=1)
    """auto: candidates whose normalized pointwise score is within this of the best go to pairwise."""
    pass_threshold: float | None = Field(default=None, ge=0, le=1)
    """Pointwise: passed = normalized score >= this; None leaves ``passed`` unset."""
    logprobs: bool = True
    """Ask for top logprobs where the endpoint offers them and record logprob-weighted readouts."""
    top_logprobs: int = Field(default=10, ge=1)
    hard_repeats: int = Field(default=3, ge=1)
    """A route marked ``hard`` (prior hardness or a stated hard task): at least this many pointwise
    samples, at ``hard_temperature`` when ``temperature`` is 0 (identical samples would say nothing),
    and several candidates judged pairwise in both orders instead of the cheaper cascade."""
    hard_temperature: float = Field(default=0.7, gt=0)
    seed: int = 0
    """Fixes candidate placement (the order candidates are judged in pointwise batches, the seats
    of pairwise comparisons, a tournament's first order) and the seed sent with each request; the
    same seed gives the same order. Recorded in the trace."""
    panel: tuple[PanelMember, ...] = ()
    """Two or more judges scoring independently with the same rubric (empty: the one ``judge``
    endpoint). Each member's calls, tokens and cost are kept apart in the ledger."""
    panel_aggregate: Literal["mean", "majority"] = "mean"
    """How members' judgments combine, per criterion and per pairwise comparison: the mean (of
    normalized scores; of the probability the first candidate is better), or the majority (of raw
    scores, lowest among the most frequent; of winners, a tie when none has a majority)."""
    panel_disagreement: float = Field(default=0.25, ge=0, le=1)
    """Members whose normalized scores for one criterion differ by more than this, or who pick
    different winners of a pair, raise an escalating ``panel_disagreement`` concern."""
    commit_first: bool = False
    """A question with a short answer and no reference: the judge answers it itself before it sees
    any candidate (one call per judge), then grades every candidate against its own answer."""
    commit_first_max_chars: int = Field(default=200, ge=1)
    """commit_first: "a short answer" means every candidate's answer has at most this many characters."""

    _panel = field_validator("panel")(classmethod(lambda cls, v: _check_panel(v)))

    @model_validator(mode="after")
    def _scale(self) -> "LLMJudgeConfig":
        if self.scale_max <= self.scale_min:
            raise ValueError("scale_max: must be above scale_min")
        return self


class RubricsConfig(BaseModel):
    """Where rubric drafts and releases live, and the gates a release's evidence must pass."""

    model_config = _FROZEN
    dir: str = ".oracle/rubrics"
    gates: list[Gate] = Field(default_factory=list)
    """For example ``[{"metric": "agreement", "op": ">=", "value": 0.8}, {"metric": "n", "op": ">=",
    "value": 100}]``; a metric the evidence lacks fails its gate."""
    min_evidence_items: int = Field(default=20, ge=1)
    """A release's evidence must have answered (given a verdict on) at least this many items, as
    its own summary counts them; fewer, or none, refuses the release (exit 3, ``--force`` or not)."""


class OracleConfig(FrozenWithCache):
    """Every setting of the oracle, in one frozen object."""

    _cached = ("_hash",)

    model_config = _FROZEN
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
    escalation: EscalationConfig = Field(default_factory=EscalationConfig)
    providers: ProvidersConfig = Field(default_factory=ProvidersConfig)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    decision_judge: DecisionJudgeConfig = Field(default_factory=DecisionJudgeConfig)
    llm_judge: LLMJudgeConfig = Field(default_factory=LLMJudgeConfig)
    rubrics: RubricsConfig = Field(default_factory=RubricsConfig)
    limits: InputLimits = Field(default_factory=InputLimits)
    """Bounds on task files and tasks (size, depth, candidates, YAML aliases)."""

    @model_validator(mode="after")
    def _default_enabled(self) -> "OracleConfig":
        # Policy names are checked against the registry by the chain that builds them
        # (oracle.routing._chain.build_policies): the registry is routing's, above this model.
        if self.routing.default_evaluator not in self.routing.enabled_evaluators:
            raise ValueError("routing.default_evaluator: must be one of routing.enabled_evaluators")
        for section in ("llm_judge", "decision_judge"):
            for i, member in enumerate(getattr(self, section).panel):
                try:
                    member.settings(self.providers)
                except ValidationError as exc:
                    said = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
                    raise ValueError(f"{section}.panel.{i}: {said}") from None
                except ValueError as exc:
                    raise ValueError(f"{section}.panel.{i}: {exc}") from None
        return self

    def public_dump(self) -> dict[str, Any]:
        """The settings as JSON data for people (``oracle config show``): each endpoint's API key is
        shown as ``"set"`` or ``"unset"`` (from ``api_key`` or the variable ``api_key_env`` names),
        never its value."""
        data = self.model_dump(mode="json")
        for name in ("judge", "decision"):
            settings = getattr(self.providers, name)
            if settings is not None:
                data["providers"][name]["api_key"] = "set" if settings.resolved_api_key() else "unset"
        return data

    def hash(self) -> str:
        """sha256 over the canonical JSON dump with secrets removed (computed once: the object is frozen)."""
        return self._hash

    @cached_property
    def _hash(self) -> str:
        data = self.model_dump(mode="json")
        # Secrets and the response cache's location never change what a configuration means:
        # turning the cache on or off leaves the hash (and so a resumed run's check) unchanged.
        sections = [data["providers"].get("judge"), data["providers"].get("decision"),
                    *data["providers"].get("endpoints", {}).values()]
        for section in sections:
            if isinstance(section, dict):
                section.pop("api_key", None)
                section.pop("cache_path", None)
        return sha256_json(data)[:16]

    @classmethod
    def load(cls, path: str | Path | None = None, *, env: bool = True) -> "OracleConfig":
        """Load a YAML/TOML/Python config file (or defaults), then apply environment overrides."""
        from oracle.config._env import env_error_names, read_env

        data: dict[str, Any] = {}
        if path is not None:
            from oracle.config._file import read_config_file

            data = read_config_file(Path(path))
        sources: dict[tuple[str, ...], str] = {}
        if env:
            overrides = read_env(os.environ, _sections())
            data, sources = overrides.apply(data), overrides.sources
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = []
            for e in exc.errors():
                where = ".".join(str(p) for p in e["loc"])
                said = "unknown key" if e["type"] == "extra_forbidden" else str(e["msg"]).removeprefix("Value error, ")
                names = env_error_names(e["loc"], sources)
                # A check across sections has no location of its own: its message names the field.
                problems.append(f"{', '.join(names)} ({where or '(root)'}): {said}" if names else
                                f"{f'{path}: ' if path else ''}{f'{where}: ' if where else ''}{said}")
            raise ConfigError("; ".join(problems)) from None


def apply_env_overrides(data: dict[str, Any], environ: Any) -> dict[str, Any]:
    """``data`` with the settings of ``environ`` laid over it: ``ORACLE_<SECTION>__<FIELD>`` and the
    short aliases (ORACLE_BASE_URL, ORACLE_MODEL, ORACLE_API_KEY, ORACLE_DECISION_URL,
    ORACLE_DECISION_MODEL, ORACLE_DECISION_API_KEY); see oracle/config/_env.py."""
    from oracle.config._env import read_env

    return read_env(environ, _sections()).apply(data)


def _sections() -> dict[str, Any]:
    """Section name -> its type: what the environment reader needs to know of the model."""
    return {name: info.annotation for name, info in OracleConfig.model_fields.items()}
