"""A STAND-IN reranking server, not a reranking model: no reranking model installs from PyPI here
(docs/rerank.md), so the rerank endpoint's client is tested against this. ``POST /v1/rerank``
scores each document by the cosine of its embedding with the query's, the embedding being
``tests/embed_fake.embed`` (words hashed into 64 dimensions). It answers both request shapes the
client sends: ``{model, query, documents, top_n}`` with ``{"results": [{index,
relevance_score}]}`` sorted by score (llama.cpp's server, vLLM, Jina, Cohere), and TEI's
``{query, texts}`` with a bare list of ``{index, score}``. Started on 127.0.0.1 on a free port.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from tests.embed_fake import embed

MODEL = "standin-bow-cosine"


def cosine(a: str, b: str) -> float:
    x, y = np.array(embed(a)), np.array(embed(b))
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


class StandinRerankServer:
    """``with StandinRerankServer() as url:`` the base URL (``.../v1``); ``bodies``: what came."""

    def __init__(self):
        self.bodies: list[dict] = []

    def __enter__(self) -> str:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append({"path": self.path, **body})
                if "texts" in body:  # TEI
                    scored = [
                        {"index": i, "score": cosine(body["query"], t)} for i, t in enumerate(body["texts"])
                    ]
                    reply: object = sorted(scored, key=lambda r: -r["score"])
                else:
                    docs = body["documents"]
                    scored = [
                        {"index": i, "relevance_score": cosine(body["query"], d)} for i, d in enumerate(docs)
                    ]
                    top = sorted(scored, key=lambda r: -r["relevance_score"])[: body.get("top_n", len(docs))]
                    reply = {"model": body.get("model", MODEL), "results": top}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
