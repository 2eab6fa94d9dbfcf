"""Private: the LLM judge (the evaluator ``llm_judge``), rubric scoring, pointwise or pairwise (both
orders), and pairwise rankings.

One module per job: ``strategy`` (the evaluator), ``prompts`` (templates in ``templates/``),
``calls`` (one judge call with its repair), ``parse``, ``pointwise``, ``pairwise``, ``ranking``
(tournaments from pairwise verdicts), ``concerns``."""
