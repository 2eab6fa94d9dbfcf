"""Private: ``oracle view``, a local browser viewer over results, compare folders and an escalation store.

Modules: ``sources`` (reads the paths given into a ``Catalog``, refusing what is not results),
``catalog`` (the entries and their list fields), ``task_page`` / ``trace_page`` / ``candidates``
(a task's page, server-rendered HTML), ``compare_page`` (a compare folder), ``shell`` (the page
frame, its small hand-written CSS and JS), ``app`` (the HTTP endpoints, FastAPI), ``export`` (the
same pages as one self-contained file), ``server`` (binding and running it).
"""
