"""The ground floor: a task and its trajectories, the test kinds, questions, task files, limits.

Public modules: ``oracle.tasks.task`` (``Task``, ``Trajectory``, ``TaskInput``),
``oracle.tasks.testspec`` (the test kinds, and ``UNDEFINED``: JavaScript's undefined in Python),
``oracle.tasks.questions``, ``oracle.tasks.environment`` (``Environment``: what the candidates
run with), ``oracle.tasks.repository`` (``Repository``: a repository task's base commit),
``oracle.tasks.patch_text`` (a candidate's change to a repository, as the verifier reads it) and
``oracle.tasks.files`` (reading task files). Private helpers of
these: ``_validation_errors`` (pydantic's errors as a ``TaskValidationError`` naming the field),
``_limits`` (the size limits every input is held to), ``_messages`` (message lists as
trajectories) and ``_judge_template`` (the judge prompt template's variables, checked for tasks
and rubrics)."""
