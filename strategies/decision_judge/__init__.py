"""Private: the decision judge (the evaluator ``decision_judge``), typed fixed-option questions
with a probability per option.

One module per job: ``validation`` (reject bad input before any call), ``requests`` (which
questions are asked and which fields the model sees), ``readout`` (labels, prompts and parsing for
the logprob-readout and sampling backends), ``backends`` (native / readout / sampled, all returning
the same typed answers), ``scoring`` (pass rule, weighting, normalization, order reversal: all in
code, never in a prompt). Everything but ``backends`` is pure.
"""
