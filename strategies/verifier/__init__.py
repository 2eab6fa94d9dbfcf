"""Private: the test-running verifier (the evaluator ``verifier``; the Oracle builds
``strategy.VerifierStrategy`` by name). Its sandbox is ``oracle.sandbox``.

Nothing is imported here, so the verifier's modules importing each other through this package
form no cycle with it."""
