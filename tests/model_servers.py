"""Local HTTP servers standing in for what ``grinta models`` and the model picker ask.

``ModelServer`` answers on 127.0.0.1, as a real server would:

- ``GET /api/tags``: Ollama's list of pulled models (``{"models": [{"name": ...}]}``);
- ``GET /v1/models`` (and ``/models``): an OpenAI-compatible server's list
  (``{"object": "list", "data": [{"id": ...}]}``).

With ``key`` set, a request whose ``Authorization: Bearer``, ``x-api-key`` or
``x-goog-api-key`` header is not that key gets 401, as a provider refusing a key.
``status`` answers every request with that HTTP status instead (a broken server);
``delay`` holds each answer that many seconds (a server too slow for the timeout).
Every request is recorded (path and lower-cased headers).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Seen:
    path: str
    headers: dict[str, str]


@dataclass
class ModelServer:
    ollama_models: list[str] = field(default_factory=list)
    openai_models: list[str] = field(default_factory=list)
    key: str | None = None
    status: int = 200
    delay: float = 0.0
    requests: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: Ollama's base (``OLLAMA_HOST``)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def api_base(self) -> str:
        """The OpenAI-compatible ``api_base`` (ends in ``/v1``)."""
        return self.url + "/v1"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.requests.append(Seen(self.path, headers))
            if server.delay:
                time.sleep(server.delay)
            if server.status != 200:
                self._send(server.status, {"error": {"message": "scripted failure"}})
                return
            if server.key is not None and server.key not in _keys(headers):
                self._send(401, {"error": {"message": "Incorrect API key provided"}})
                return
            path = self.path.split("?")[0].rstrip("/")
            if path == "/api/tags":
                self._send(200, {"models": [{"name": n, "size": 1} for n in server.ollama_models]})
            elif path in ("/v1/models", "/models"):
                data = [{"id": n, "object": "model"} for n in server.openai_models]
                self._send(200, {"object": "list", "data": data})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def _keys(headers: dict[str, str]) -> set[str]:
    found = {headers.get("x-api-key", ""), headers.get("x-goog-api-key", "")}
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        found.add(auth[7:])
    return found - {""}


@pytest.fixture(name="model_server")
def model_server_fixture() -> Iterator[ModelServer]:
    """A started ``ModelServer`` listing one Ollama model and two OpenAI-compatible ones."""
    with ModelServer(
        ollama_models=["qwen2.5-coder:7b"], openai_models=["local-coder", "local-small"]
    ) as server:
        yield server
