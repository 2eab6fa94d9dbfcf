"""Which globals a test hands to the candidate by rebinding them: the rule, as a pure function.

Why its own module: the host computes it once per test (harness.build_plan puts the answer in the
test's spec) instead of every run parsing the test and the prompt again; the test process falls
back to it for a spec without one. Standard library only: the runtime package runs in the sandbox without the rest of
``oracle``.
"""

from __future__ import annotations

import ast


def declared_names(prompt_code: str | None) -> set[str]:
    """The module-level variables the task prompt's code assigns (``CONN = None``)."""
    try:
        tree = ast.parse(prompt_code or "")
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AnnAssign) and node.value is not None else []
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name):
                    names.add(sub.id)
    return names


def read_names(source: str | None, mode: str = "exec") -> set[str] | None:
    """Every name ``source`` reads anywhere (nested functions included; ``x += 1`` reads x), or
    None when it does not parse (then nothing is handed over implicitly)."""
    try:
        tree = ast.parse(source or "", mode=mode)
    except (SyntaxError, ValueError):
        return None
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def handed_over(spec: dict) -> set[str]:
    """The globals whose rebinding by the test is sent to the candidate (see module docstring)."""
    source, mode = (spec.get("call"), "eval") if spec.get("kind") == "call" else (spec.get("code"), "exec")
    reads = read_names(source, mode)
    if reads is None:
        return set()
    return declared_names(spec.get("prompt_code")) - reads - {spec.get("entry_point") or ""}
