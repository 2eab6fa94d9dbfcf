"""The ground floor: a task and its trajectories, the test kinds, questions, task files, limits.

Public modules: ``oracle.tasks.task`` (``Task``, ``Trajectory``, ``TaskInput``),
``oracle.tasks.testspec`` (the test kinds), ``oracle.tasks.questions`` and ``oracle.tasks.files``
(reading task files). Private: ``_limits`` (the size limits every input is held to)."""
