"""Routing internals: the policy chain and its gates (``chain``), the cue words and phrase checks
the signals read (``text_cues``), prior hardness learned from finished evaluations (``history``),
and the summary of what the router did over a results file (``summary``).

These modules are internal and may change without notice. The public routing types live in
``oracle.routing.signals`` (``Signals``), ``oracle.routing.policy`` (the policy protocol), ``oracle.routing.route`` (the
trace) and ``oracle.policies``; ``oracle/__init__.py`` names the rest of the public API.
"""
