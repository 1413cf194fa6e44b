"""A tiny OpenAI-compatible chat server on 127.0.0.1 (stdlib http.server in a thread), whose
replies the test decides: streamed as server-sent events, or as one JSON body, or an error status,
or ``Raw`` bytes sent as told (a hostile server: any body, trickled, cut short)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Raw:
    """A reply sent as it is: ``chunks`` one after the other, ``pause`` seconds apart, then
    ``forever`` (if given) every ``pause`` seconds until the client hangs up (at most 30 s), and
    no Content-Length: the body ends when the connection closes."""

    chunks: Sequence[bytes] = ()
    content_type: str = "text/event-stream"
    status: int = 200
    pause: float = 0.0
    forever: bytes | None = None


def echo_block(body: dict) -> str:
    """The reply the tests can check on paper: the system block (the memories) when there is
    one, else a fixed sentence."""
    system = [m["content"] for m in body["messages"] if m["role"] == "system"]
    return system[0] if system else "I do not know."


class FakeChat:
    """``reply(body) -> str | (status, text)``; ``stream``: send server-sent events."""

    def __init__(
        self, reply: Callable[[dict], object] = echo_block, stream: bool = True, model: str = "fake-1"
    ):
        self.reply, self.stream, self.model = reply, stream, model
        self.listing: Raw | tuple[int, str] | None = None  # GET /models: None lists ``model``
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if isinstance(fake.listing, Raw):
                    self._raw(fake.listing)
                elif fake.listing is not None:
                    self._send(*fake.listing, "text/plain")
                else:
                    self._send(200, json.dumps({"data": [{"id": fake.model}]}), "application/json")

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.bodies.append(body)
                fake.headers.append(dict(self.headers))
                out = fake.reply(body)
                if isinstance(out, Raw):
                    self._raw(out)
                    return
                if isinstance(out, tuple):
                    self._send(out[0], out[1], "text/plain")
                    return
                if fake.stream and body.get("stream"):
                    events = [
                        {"model": fake.model, "choices": [{"delta": {"content": w}}]} for w in _pieces(out)
                    ]
                    events.append({"model": fake.model, "choices": [{"delta": {}, "finish_reason": "stop"}]})
                    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
                    self._send(200, text, "text/event-stream")
                    return
                reply = {
                    "model": fake.model,
                    "choices": [{"message": {"role": "assistant", "content": out}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 3},
                }
                self._send(200, json.dumps(reply), "application/json")

            def _raw(self, out: Raw):
                self.close_connection = True
                self.send_response(out.status)
                self.send_header("Content-Type", out.content_type)
                self.send_header("Connection", "close")
                self.end_headers()
                end = time.monotonic() + 30
                try:
                    for chunk in out.chunks:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        time.sleep(out.pause)
                    while out.forever is not None and time.monotonic() < end:
                        self.wfile.write(out.forever)
                        self.wfile.flush()
                        time.sleep(out.pause)
                except OSError:  # the client hung up: what a deadline does
                    pass

            def _send(self, status, text, kind):
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        serve = {"poll_interval": 0.02}  # shutdown waits one poll: 0.5 s by default
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs=serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-reply (a deadline, a replay stopped at an earlier error) is no
    error of the fake's: nothing printed (socketserver would print a traceback to stderr)."""

    def handle_error(self, request, client_address):
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
