"""The OpenAPI document, as FastAPI writes it from the endpoints and their declared models.

Endpoints that take a task read the raw body themselves (so that the task-file limits and the
duplicate-key check apply); their request body refers to ``TaskInput``, whose schema FastAPI
writes because a response model holds it (``StoredEscalation.item``). One schema per model
(``separate_input_output_schemas=False``): the names stay the library's class names.
The document is committed as ``oracle/serve/openapi.json`` (``oracle serve --openapi`` prints it);
a test fails when the two differ, so an API change is always a reviewed diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

COMMITTED = Path(__file__).with_name("openapi.json")


def build(app: FastAPI) -> dict[str, Any]:
    """The document (cached on the app), components sorted by name."""
    if app.openapi_schema:
        return app.openapi_schema
    doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes,
                      separate_input_output_schemas=False)
    components = doc.setdefault("components", {}).setdefault("schemas", {})
    missing = {"TaskInput", "OracleResult", "Route"} - set(components)
    if missing:  # a request body refers to them: an endpoint must still declare a model holding each
        raise RuntimeError(f"OpenAPI: no schema for {sorted(missing)}")
    doc["components"]["schemas"] = dict(sorted(components.items()))
    app.openapi_schema = doc
    return doc


def render(doc: dict[str, Any]) -> str:
    """The committed form: sorted keys, two-space indent, a final newline."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
