"""Property-based fuzzing of the committed OpenAPI schema against a real ``oracle serve`` (schemathesis).

Every operation gets up to 50 generated requests, valid and invalid, sent over TCP to a server in
a subprocess; none may get a 5xx, and each reply must match what the schema promises (status
code, content type, body shape). The models behind the server are the scripted wire-protocol server,
so generated tasks that reach a judge make real HTTP calls that answer at once. Limits on jobs and
batches are raised so that a 503 (a full server, by design) cannot pass for a crash.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from tests.plugins.scripted_server import ScriptedServer
from tests.profiles import examples
from tests.serve_support import judge_config, need_serve_extra, serve

pytestmark = pytest.mark.slow
need_serve_extra()
if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
    import schemathesis
else:
    schemathesis = pytest.importorskip("schemathesis")

from schemathesis.checks import (content_type_conformance, not_a_server_error,  # noqa: E402
                                 response_schema_conformance, status_code_conformance)

from oracle.serve.openapi_doc import COMMITTED  # noqa: E402

schemathesis.serializer.alias("application/x-ndjson", "text/plain")  # a batch body is JSONL text
schema = schemathesis.openapi.from_path(str(COMMITTED))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    models = ScriptedServer().start()
    tmp = tmp_path_factory.mktemp("fuzz")
    try:
        with serve(tmp, "--max-jobs", "1000", "--max-batches", "1000", "--request-timeout", "60",
                   config=judge_config(models.base_url)) as served:
            yield served.base_url
    finally:
        models.stop()


@schema.parametrize()
@settings(max_examples=examples(50), deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
def test_no_server_error_and_replies_match_the_schema(case, base_url):
    case.call_and_validate(base_url=base_url, checks=CHECKS, timeout=90)
