"""Adapters that let evaluation frameworks call oracle-router, one optional extra each.

    oracle.integrations.inspect         Inspect AI scorer            pip install 'oracle-router[inspect]'
    oracle.integrations.pydantic_evals  pydantic-evals Evaluator     pip install 'oracle-router[pydantic-evals]'
    oracle.integrations.langsmith       LangSmith/openevals evaluator pip install 'oracle-router[langsmith]'
    oracle.integrations.deepeval        DeepEval metric              pip install 'oracle-router[deepeval]'
    oracle.integrations.opentelemetry   tracing scoped to a block    pip install 'oracle-router[otel]'

Every adapter maps a framework sample to an oracle task the same way (``oracle.integrations.sample``)
and reads the verdict on the sample's output the same way (``Verdict``); each module's docstring
says which of its framework's fields feed which part and which of our statuses become which
outcome (``opentelemetry`` is the exception: it maps no sample, it scopes tracing). Importing this
package imports no framework.
"""
