"""Latency of the embedded local model (llama.cpp + SmolLM2) through the sync chat client.

    python benchmarks/local_model_latency.py [--runs 5]

Measures (1) a ~300-token decision prompt answered with one token and top_logprobs, each run with
a different question after a fixed rubric (so the rubric prefix is reused as in a real judge, the
tail is new), plus the same prompt cold (distinct rubric each run); and (2) generating 120 tokens:
tokens per second over the whole call. Prints server startup time too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oracle.local_model import LocalModelServer
from oracle.providers import ChatMessage, ChatRequest, make_chat_client

RUBRIC = ("You are grading an answer to a question. Read the question, the reference answer and the "
          "candidate answer. Decide whether the candidate answer is correct: it must state the same "
          "fact as the reference, may use different words, must not add claims that contradict the "
          "reference, and must answer the question that was asked rather than a nearby one. Ignore "
          "spelling, formatting, politeness and length. A partially correct answer is not correct. "
          "An answer that hedges between several options is not correct. Reply with exactly one "
          "word: yes if the candidate answer is correct, no otherwise. ") * 2


def decision_prompt(i: int, cold: bool) -> str:
    head = f"[grader {i}] " if cold else ""
    return (head + RUBRIC + f"\nQuestion {i}: What is {i} plus {i + 3}?\nReference: {2 * i + 3}\n"
            f"Candidate: The sum is {2 * i + 3 + (i % 2)}.\nIs the candidate answer correct?")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with LocalModelServer() as server:
        print(f"server ready in {server.startup_s:.2f} s; load average {os.getloadavg()[0]:.2f} "
              f"on {os.cpu_count()} cores")
        settings_kw = dict(base_url=server.base_url, model=server.model, timeout_s=300, concurrency=1)
        from oracle.config.model import ProviderSettings

        with make_chat_client(ProviderSettings(**settings_kw)) as client:
            for label, cold in (("shared rubric prefix", False), ("cold (no shared prefix)", True)):
                times, tokens = [], []
                for i in range(args.runs + 1):
                    req = ChatRequest(messages=[ChatMessage(role="user", content=decision_prompt(i, cold))],
                                      max_tokens=1, logprobs=True, top_logprobs=5)
                    t0 = time.perf_counter()
                    reply = client.complete(req)
                    if i:  # run 0 warms the prefix
                        times.append(time.perf_counter() - t0)
                        tokens.append(reply.usage.input_tokens)
                print(f"decision prompt ({label}): {statistics.mean(tokens):.0f} prompt tokens, 1 token out, "
                      f"top_logprobs=5: median {statistics.median(times):.2f} s "
                      f"(min {min(times):.2f}, max {max(times):.2f}) over {len(times)} runs")
            rates = []
            for i in range(max(2, args.runs // 2)):
                req = ChatRequest(messages=[ChatMessage(role="user", content=
                                  f"Write a long, detailed story about a lighthouse keeper number {i}.")],
                                  max_tokens=120)
                t0 = time.perf_counter()
                reply = client.complete(req)
                elapsed = time.perf_counter() - t0
                rates.append((reply.usage.output_tokens or 0) / elapsed)
                print(f"generation: {reply.usage.output_tokens} tokens in {elapsed:.2f} s "
                      f"= {rates[-1]:.1f} tokens/s")
            print(f"generation median: {statistics.median(rates):.1f} tokens/s")


if __name__ == "__main__":
    main()
