"""Small task builders shared by the core tests (hand-written, not from any reserved record)."""

from __future__ import annotations

from typing import Any


def code_task(**task: Any) -> dict[str, Any]:
    base = {"id": "add", "prompt": "def add(a, b):\n    \"\"\"Return the sum of a and b.\"\"\"\n",
            "entry_point": "add", "tests": [{"kind": "call", "call": "add(2, 3)", "expected": 5}]}
    base.update(task)
    return {"task": base, "trajectories": [{"id": "good", "answer": "    return a + b\n"},
                                           {"id": "bad", "answer": "    return a - b\n"}]}


def question_task(**task: Any) -> dict[str, Any]:
    base = {"id": "support-1", "prompt": "Customer: my card was charged twice for order 1182.",
            "questions": [{"id": "team", "type": "choice", "instructions": "Which team should handle it?",
                           "options": {"billing": "payments, refunds", "technical": "bugs, outages"},
                           "scores": {"billing": 5, "technical": 1}}]}
    base.update(task)
    return {"task": base, "trajectories": [{"id": "r1", "answer": "Sorry! Billing will refund you."}]}


def open_task(**task: Any) -> dict[str, Any]:
    base = {"id": "essay", "prompt": "Write a short, persuasive and friendly email asking a neighbour "
                                     "to keep their dog quiet at night. Explain why your version works."}
    base.update(task)
    return {"task": base, "trajectories": [{"id": "a", "answer": "Dear neighbour, ..."},
                                           {"id": "b", "answer": "Hi! Hope you're well ..."}]}
