"""An OpenAI-compatible embedding server on 127.0.0.1 that embeds by words: each word of four
letters or more adds 1 to the dimension its CRC-32 names (``DIM`` of them), plus a small constant
on the last, so every text has a direction. Deterministic across processes and machines (no
Python hash seed), fast, and full of exact ties, as real score tables are: a stand-in model for
tests that run whole commands on embedded scores without loading a model.
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIM = 64
MODEL = "bow-64"


def embed(text: str) -> list[float]:
    out = [0.0] * DIM
    out[-1] = 0.05
    for word in re.findall(r"[a-z]{4,}", text.lower()):
        out[zlib.crc32(word.encode()) % (DIM - 1)] += 1.0
    return out


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": embed(t)} for i, t in enumerate(texts)]
        reply = json.dumps({"object": "list", "model": MODEL, "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


class EmbedServer:
    """``with EmbedServer() as url:`` the server's base URL (``.../v1``) while the block runs."""

    def __enter__(self) -> str:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
