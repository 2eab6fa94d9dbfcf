"""What both judges share: how candidate text is enclosed in a prompt, and how a provider fault is
contained to the candidate that met it. Private to the evaluators."""
