"""The LLM judge's pointwise prompt template: which variables it may use, checked when it is given.

A template comes inline with a task (``Task.judge_prompt``) or with a rubric (``RubricContent``);
both check it here, at load, so a template ``string.Template.substitute`` would fail on is an
error naming the field before any model call, not at call time.
"""

from __future__ import annotations

from string import Template

JUDGE_TEMPLATE_VARIABLES = frozenset({"scale_min", "scale_max", "task_block", "reference_section",
                                      "criteria_list", "response_block", "reply_example"})
"""The variables the LLM judge supplies to a pointwise prompt template."""
JUDGE_TEMPLATE_REQUIRED = frozenset({"response_block", "criteria_list", "reply_example"})
"""A template without these could not show the response, the criteria or the reply format."""


def check_judge_template(text: str) -> None:
    """A template's variables must be exactly ones the judge supplies, the required ones present;
    ``ValueError`` saying which otherwise."""
    tpl = Template(text)
    if not tpl.is_valid():
        raise ValueError("invalid placeholder (a lone '$' must be written '$$')")
    used = set(tpl.get_identifiers())
    unknown = sorted(used - JUDGE_TEMPLATE_VARIABLES)
    if unknown:
        raise ValueError(f"unknown variable(s) {', '.join('$' + u for u in unknown)}; "
                         f"available: {', '.join(sorted('$' + v for v in JUDGE_TEMPLATE_VARIABLES))}")
    missing = sorted(JUDGE_TEMPLATE_REQUIRED - used)
    if missing:
        raise ValueError(f"missing required variable(s) {', '.join('$' + m for m in missing)}")
