"""What both judges share: how candidate text is enclosed in a prompt, how a provider fault is
contained to the candidate that met it, and how their calls run together. Private to the evaluators."""
