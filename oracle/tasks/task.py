"""The task and trajectory models: the input contract of oracle-router.

A task file is ``{"task": {...}, "trajectories": [...]}``. Models use ``extra='forbid'`` so a
misspelt key fails at load time with the field named. An OpenAI-style message list is accepted as
a trajectory and converted into answer + steps (typed first, in ``oracle.tasks._messages``).

Whatever the caller passes, bad input raises ``TaskValidationError`` naming the field, bounded by
``oracle.config.model.InputLimits`` (depth, huge integers, candidates per task) before anything copies
or hashes it.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from typing import Any, ClassVar, Literal

from pydantic import (BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator,
                      model_validator)
from pydantic_core import PydanticCustomError

from oracle._internal.frozen import FrozenWithCache
from oracle.tasks._validation_errors import NAMED_FIELD_ERROR, format_validation_error
from oracle.tasks._judge_template import check_judge_template
from oracle._internal.decoded import input_problem
from oracle.tasks._limits import DEFAULT_LIMITS, InputLimits
from oracle.tasks.environment import Environment, without_defaults
from oracle.tasks.repository import Repository, relative_path_problem
from oracle.tasks.questions import Question, scoring_problem
from oracle.tasks._testcode import static_problem
from oracle.tasks.testspec import PYTEST_RESERVED_MODULES, PytestTest, ReferenceCheck, RepoTestsTest, TestCase

EvaluatorKind = Literal["decision_judge", "llm_judge", "verifier"]
EVALUATORS: tuple[EvaluatorKind, ...] = ("decision_judge", "llm_judge", "verifier")

DEFAULT_MODULE = "solution"
"""The module name a pytest test imports the candidate's code by, unless ``task.module`` says otherwise."""
MAX_WEIGHT = 1e9
"""Weights are relative; a bound keeps any sum of them finite (1e308 weights summed to inf and
scored every candidate 0.0)."""


class Criterion(BaseModel):
    """One rubric criterion; a bare string in a task file means weight 1."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    criterion: str = Field(min_length=1)
    weight: float = Field(default=1.0, ge=0, le=MAX_WEIGHT, allow_inf_nan=False)
    """Relative weight in the score; 0 keeps it in the pass rule and out of the score."""


class Step(BaseModel):
    """One step of an agent trajectory: reasoning, a tool call, a tool result or a message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["reasoning", "tool_call", "tool_result", "message"] = "message"
    content: str = ""
    role: str | None = None
    tool: str | None = None
    """Tool name for tool calls and results."""
    arguments: Any = None
    """A tool call's arguments: an object, or the JSON string the model produced."""
    tool_call_id: str | None = None
    """Pairs a tool result with the call it answers (OpenAI's ``tool_call_id``)."""


class _TranslatingMeta(type(BaseModel)):  # type: ignore[misc]
    """``Model(...)`` raises ``TaskValidationError`` instead of pydantic's ``ValidationError``.

    The translation sits on the metaclass call, not in ``__init__``: a model that defines
    ``__init__`` makes pydantic call it for every nested instance too, which would translate
    (and re-wrap) errors at each level and slow down validating 10,000 candidates.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except ValidationError as exc:
            raise format_validation_error(exc, prefix=cls._error_prefix) from None


class _InputModel(BaseModel, metaclass=_TranslatingMeta):
    """Validation failures of an input model raise ``TaskValidationError`` naming the field.

    Why: library callers should catch one error family (``OracleError``) for bad input, whether
    the task came from a file or was built in Python; a raw pydantic ``ValidationError`` or a
    ``TypeError`` from deep inside is not a contract anyone can rely on. Nested models are
    validated by pydantic-core directly, so only the outermost call is translated.
    """

    _error_prefix: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise format_validation_error(exc, prefix=cls._error_prefix) from None

    @classmethod
    def model_validate_json(cls, json_data: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        try:
            return super().model_validate_json(json_data, **kwargs)
        except ValidationError as exc:
            raise format_validation_error(exc, prefix=cls._error_prefix) from None


def criteria_from_strings(value: Any) -> Any:
    """A bare string in a criteria list means that criterion with weight 1 (tasks and rubrics)."""
    if isinstance(value, list):
        return [{"criterion": c} if isinstance(c, str) else c for c in value]
    return value


def check_criteria_and_questions(criteria: list[Criterion], questions: list[Question]) -> None:
    """The rules criteria and questions keep wherever they are written (a task or a rubric)."""
    if criteria and all(c.weight == 0 for c in criteria):
        raise ValueError("criteria: at least one criterion weight must be above 0")
    ids = [q.id for q in questions]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ValueError(f"questions: duplicate question ids {dupes}")


_HASHED_WHEN_SET = ("environment", "solution", "repository", "test_patch")
"""Fields added after tasks were first hashed: left out of ``content_hash`` while unset, so a task
that does not use them keeps its hash (its stored batch rows and escalation ids still match)."""


class Task(FrozenWithCache, _InputModel):  # type: ignore[metaclass]  # mypy cannot see type(BaseModel) as pydantic's metaclass
    """What is being evaluated, plus everything an evaluator may check it against."""

    _cached = ("_content_hash",)
    _error_prefix = ("task",)

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    prompt: str
    description: str | None = None
    criteria: list[Criterion] = Field(default_factory=list)
    reference: str | None = None
    reference_check: ReferenceCheck | None = None
    """How the verifier compares a non-code answer with ``reference`` (default: mode contains, the whole reply)."""
    tests: list[TestCase] = Field(default_factory=list)
    solution: str | None = Field(default=None, min_length=1)
    """Reference code, a correct answer (a program or, for a Python prompt that is code, the body):
    the verifier runs the tests against it first, and a test that fails on it is broken (the
    task's fault, scored for no candidate). Only the verifier reads it; no judge is ever shown it."""
    questions: list[Question] = Field(default_factory=list)
    difficulty: Literal["easy", "medium", "hard"] | None = None
    language: str | None = None
    """Programming language of candidate code (python, javascript); None means infer."""
    entry_point: str | None = None
    module: str = Field(default=DEFAULT_MODULE, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    """The name a ``pytest`` test imports the candidate's code by (``from solution import slugify``); not
    a standard-library module, a keyword or a name of the test side's own pytest."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    evaluator: EvaluatorKind | None = None
    """Explicit override: this evaluator runs, and the trace records that it was forced."""
    execution: Literal["isolated", "in_process"] = "isolated"
    """How the verifier runs tests: ``isolated`` (the test in its own process, the candidate reached
    through a channel of plain data) or ``in_process`` (the test inside the candidate's process, for
    tests that need in-process access; a candidate can forge that verdict, so it also needs
    ``verifier.allow_in_process`` and its results carry ``integrity: in_process``)."""
    rubric: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}(@([0-9]+|draft))?$")
    """A released rubric supplies criteria, questions and judge settings: ``NAME`` (its current
    release), ``NAME@N`` or ``NAME@draft``. Not together with inline criteria or questions."""
    judge_prompt: str | None = None
    """The LLM judge's pointwise prompt template (``string.Template``); set by a rubric, or inline.
    Its variables are checked at load: an unknown or missing one is an error before any call."""
    context: str | None = None
    """Source text the answer should be grounded in (a document, a retrieved passage): evidence, like
    ``reference``, for a claim check."""
    environment: Environment | None = None
    """What the candidates run with (oracle/tasks/environment.py): a prepared interpreter, pip
    requirements built once into the environment cache, a ``node_modules`` directory. It replaces
    ``verifier.environment`` as a whole; None: the config's, else the interpreter alone."""
    claim_check: bool = False
    """Judge the single candidate's answer as a claim against the evidence (``context`` and/or
    ``reference``): the decision judge asks whether the evidence supports it and whether there is
    strong evidence against it, and gives a verdict only when the two agree."""
    repository: Repository | None = None
    """The git repository candidates patch (oracle/tasks/repository.py): a local clone or a bundle at
    a base commit. Goes with a ``repo_tests`` test, which runs the repository's own suite on each
    candidate's tree."""
    test_patch: str | None = None
    """The task's test changes (a unified diff), applied after each candidate's patch and before the
    repository's tests run; the files it touches are part of the protected surface."""

    @field_validator("judge_prompt")
    @classmethod
    def _judge_prompt_checked(cls, value: str | None) -> str | None:
        if value is not None:
            check_judge_template(value)
        return value

    @field_validator("module")
    @classmethod
    def _module_name(cls, value: str) -> str:
        import keyword
        import sys

        if keyword.iskeyword(value) or value in sys.stdlib_module_names or value in PYTEST_RESERVED_MODULES \
                or value in ("__main__", "builtins"):
            raise ValueError(f"{value!r} is a keyword, a standard-library module or the test side's own "
                             "module; choose another name (default 'solution')")
        return value

    @field_validator("criteria", mode="before")
    @classmethod
    def _criteria_from_strings(cls, value: Any) -> Any:
        return criteria_from_strings(value)

    @model_validator(mode="after")
    def _check_consistency(self) -> "Task":
        check_criteria_and_questions(self.criteria, self.questions)
        if self.rubric is not None and (self.criteria or self.questions or self.judge_prompt is not None):
            raise ValueError("rubric: a task names a rubric or gives criteria/questions/judge_prompt inline, not both")
        for i, test in enumerate(self.tests):
            if isinstance(test, PytestTest):
                clash = [n for n in test.test_files() if n.split("/")[0] in (self.module, self.module + ".py")]
                if clash:
                    raise PydanticCustomError(NAMED_FIELD_ERROR, "{field}: {reason}", {
                        "field": f"task.tests[{i}].{'code' if test.code is not None else 'files'}",
                        "reason": f"the file {clash[0]!r} would shadow the candidate's module {self.module!r} "
                                  "(task.module)"})
        repo_tests = [i for i, t in enumerate(self.tests) if isinstance(t, RepoTestsTest)]
        if repo_tests and self.repository is None:
            raise PydanticCustomError(NAMED_FIELD_ERROR, "{field}: {reason}", {
                "field": f"task.tests[{repo_tests[0]}]",
                "reason": "a repo_tests test runs a repository's own tests: it needs task.repository"})
        if self.repository is not None and not repo_tests:
            raise ValueError("repository: a task with a repository needs a repo_tests test (the tests that judge "
                             "a candidate's patch)")
        if self.test_patch is not None and self.repository is None:
            raise ValueError("test_patch: the test changes are applied to task.repository, which this task lacks")
        if self.claim_check and not (self.context or self.reference):
            raise ValueError("claim_check: a claim check needs the evidence as text: task.context or task.reference")
        for i, test in enumerate(self.tests):  # a test that is broken on sight (oracle/tasks/_testcode.py)
            problem = static_problem(test, self.language)
            if problem is not None:
                named = f"({test.name!r}) " if test.name else ""
                raise PydanticCustomError(NAMED_FIELD_ERROR, "{field}: {reason}",
                                          {"field": f"task.tests[{i}]", "reason": named + problem})
        return self

    def content_hash(self) -> str:
        """A stable hash of the task's content (keys resumable batch rows and escalation ids)."""
        return self._content_hash

    def clarifications(self) -> list[str]:
        """What human reviewers answered in free text (``metadata["human_answers"]``, written by
        ``oracle resume``), each with the question it answers: the judges read these beside the
        prompt. They are never part of the prompt itself, so a code prompt that a candidate's
        function body is joined to stays code."""
        answers = self.metadata.get("human_answers")
        if not isinstance(answers, list):
            return []
        out = []
        for answer in answers:
            text = answer.get("text") if isinstance(answer, dict) else None
            if isinstance(text, str) and text.strip():
                asked = answer.get("question")
                out.append(f"{text.strip()} (a reviewer's answer to: {asked})" if isinstance(asked, str) and asked
                           else text.strip())
        return out

    @cached_property
    def _content_hash(self) -> str:
        from oracle._internal.canonical import sha256_json

        data = self.model_dump(mode="json")
        for name in _HASHED_WHEN_SET:
            if data.get(name) is None:
                data.pop(name, None)
        if isinstance(data.get("repository"), dict):
            # Its content is pinned by ``commit`` (a git object id); where it lies (``path`` or
            # ``bundle``, made absolute at load) is not content: a batch moved to another directory or
            # machine must resume, not re-run.
            data["repository"] = {k: v for k, v in data["repository"].items() if k not in ("path", "bundle")}
        if isinstance(data.get("environment"), dict):  # its later fields, at their defaults, likewise
            data["environment"] = without_defaults(data["environment"])
        if data.get("module") == DEFAULT_MODULE:  # likewise a task with the default module
            del data["module"]
        return sha256_json(data)


class Trajectory(_InputModel):  # type: ignore[metaclass]  # mypy cannot see type(BaseModel) as pydantic's metaclass
    """One candidate: its final answer, optional code, steps and execution output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    answer: str = ""
    code: str | None = None
    steps: list[Step] = Field(default_factory=list)
    output: str | None = None
    """Execution output the candidate produced (logs, test runs), if any."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    patch: str | None = None
    """For a repository task: the candidate's change as a unified diff (``git apply`` semantics). An
    empty patch is a candidate that changes nothing (judged, not refused)."""
    files: dict[str, str] | None = None
    """For a repository task: the candidate's change as whole files (a path relative to the
    repository root -> its new content). Not together with ``patch``."""

    @field_validator("files")
    @classmethod
    def _file_paths(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for name in value or {}:
            problem = relative_path_problem(name)
            if problem:
                raise ValueError(f"{name!r} {problem}")
        return value

    @model_validator(mode="after")
    def _one_change(self) -> "Trajectory":
        if self.patch is not None and self.files is not None:
            raise ValueError("patch: give the change as a patch or as files, not both")
        return self


def trajectory_from_messages(messages: list[dict[str, Any]], *, id: str) -> Trajectory:
    """Convert an OpenAI-style message list into a trajectory.

    The last assistant message with text is the answer; tool calls and tool results become steps,
    so nothing in the conversation is lost. A list of the wrong shape raises ``TaskValidationError``.
    """
    from oracle.tasks._messages import trajectory_data_from_messages

    return Trajectory.model_validate(trajectory_data_from_messages(messages, id=id))


def _limits(info: ValidationInfo) -> InputLimits:
    context = info.context if isinstance(info.context, dict) else {}
    limits = context.get("limits")
    return limits if isinstance(limits, InputLimits) else DEFAULT_LIMITS


class TaskInput(_InputModel):  # type: ignore[metaclass]  # mypy cannot see type(BaseModel) as pydantic's metaclass
    """One task with its candidates: the unit the router and the evaluators work on.

    Limits (``oracle.config.model.InputLimits``) come from the validation context
    (``TaskInput.model_validate(data, context={"limits": ...})``), else the defaults.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: Task
    trajectories: list[Trajectory] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _bounded(cls, data: Any, info: ValidationInfo) -> Any:
        """Depth and huge integers are checked before anything copies or hashes the input."""
        problem = input_problem(data, _limits(info).max_depth)
        if problem is not None:
            field, reason = problem
            raise PydanticCustomError(NAMED_FIELD_ERROR, "{field}: {reason}", {"field": field, "reason": reason})
        if isinstance(data, dict) and "task" not in data:
            misplaced = [k for k in data if isinstance(k, str) and k in Task.model_fields]
            if misplaced:  # the commonest first mistake: the task's fields written at the top level
                raise PydanticCustomError(
                    NAMED_FIELD_ERROR, "{field}: {reason}",
                    {"field": "task", "reason": f"missing; {', '.join(misplaced[:5])} are task fields: put them "
                                                "under `task:`, beside `trajectories:`"})
        return data

    @field_validator("trajectories", mode="before")
    @classmethod
    def _accept_message_lists(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, list):
            return value
        limit = _limits(info).max_trajectories
        if len(value) > limit:
            raise PydanticCustomError(
                "too_many_trajectories",
                "{count} trajectories; at most {limit} per task (limits.max_trajectories)",
                {"count": len(value), "limit": limit})
        out = []
        for i, item in enumerate(value):
            # Message lists are typed in oracle.tasks._messages, loaded only when a task holds one.
            if isinstance(item, list):
                from oracle.tasks._messages import trajectory_data_from_messages

                out.append(trajectory_data_from_messages(item, id=f"t{i}", index=i))
            elif isinstance(item, dict) and "messages" in item and "answer" not in item:
                from oracle.tasks._messages import trajectory_data_from_item

                out.append(trajectory_data_from_item(item, i))
            else:
                out.append(item)
        return out

    @model_validator(mode="after")
    def _unique_ids(self) -> "TaskInput":
        counts = Counter(t.id for t in self.trajectories)  # linear: 100,000 ids in milliseconds
        dupes = sorted(i for i, n in counts.items() if n > 1)
        if dupes:
            shown = dupes[:10] + (["..."] if len(dupes) > 10 else [])
            raise ValueError(f"trajectories: duplicate trajectory ids {shown}")
        if self.task.claim_check and len(self.trajectories) != 1:
            raise ValueError(f"trajectories: a claim check judges one claim; got {len(self.trajectories)} candidates")
        ids = [t.id for t in self.trajectories]
        for i, question in enumerate(self.task.questions):
            problem = scoring_problem(question, ids)
            if problem is not None:
                raise PydanticCustomError(NAMED_FIELD_ERROR, "{field}: {reason}",
                                          {"field": f"task.questions[{i}].{problem[0]}", "reason": problem[1]})
        return self
