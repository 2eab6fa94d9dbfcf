"""Routing: from a task's signals to the evaluator that fits it, with the whole trace.

Public: ``signals`` (``Signals``, ``extract``), ``policy`` (the policy protocol), ``route``
(``Route``, ``Vote``: the trace) and ``settings`` (each policy's typed, route-deciding settings,
which a policy's ``settings_type`` extends); the policies themselves are ``oracle.policies``.
Private, and free to change: the policy chain and its gates (``_chain``), the cue words and phrase
checks the signals read (``_text_cues``), prior hardness learned from finished evaluations
(``_history``), the summary of what the router did over a results file (``_summary``) and the
rounding of totals (``_rounding``).
"""
