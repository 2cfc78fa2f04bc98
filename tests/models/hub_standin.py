"""A stand-in for the Hugging Face hub on 127.0.0.1: no test machine can reach the real one.

It serves real files at the hub's URL layout, the part huggingface_hub's client uses:
- GET /api/models?search=&filter=gguf…           -> the repos (JSON list of {"id", "downloads", "likes"})
- GET /api/models/<org>/<name>/tree/main?recursive -> the files ({"type", "path", "size", "oid", "lfs"})
- HEAD/GET /<org>/<name>/resolve/main/<file>       -> the file, with X-Repo-Commit, ETag (the sha256, as for
  LFS files) and Content-Length; GET honours `Range: bytes=N-` with 206, as the hub's CDN does.
Point the client at it with HF_ENDPOINT. `requests` records (method, path, Range header) for the tests.
`served[local file] = bytes` makes GET send other bytes than the listing, HEAD, size and ETag describe: a
damaged transfer (a flipped byte, or more bytes than the hub lists).
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

COMMIT = "c0ffee" + "0" * 34


class HubStandIn:
    def __init__(self, repos: dict[str, dict[str, Path]]):
        """`repos`: repo id -> {path in repo: local file}."""
        self.repos = repos
        self.requests: list[tuple[str, str, str | None]] = []
        self.served: dict[Path, bytes] = {}
        self.chunk = 64 * 1024
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):  # noqa: N802
                standin.handle(self, head=True)

            def do_GET(self):  # noqa: N802
                standin.handle(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HubStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def json(self, handler, data, status: int = 200) -> None:
        body = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def handle(self, handler, head: bool) -> None:
        url = urlparse(handler.path)
        path = unquote(url.path)
        self.requests.append((handler.command, path, handler.headers.get("Range")))
        if path == "/api/models":
            query = (parse_qs(url.query).get("search") or [""])[0].lower()
            return self.json(handler, [{"id": r, "modelId": r, "downloads": 1000 - i, "likes": 3, "tags": ["gguf"]}
                                       for i, r in enumerate(self.repos) if query in r.lower()])
        if path.startswith("/api/models/") and "/tree/" in path:
            repo = path[len("/api/models/"):].split("/tree/")[0]
            if repo not in self.repos:
                return self.json(handler, {"error": "Repository not found"}, 404)
            return self.json(handler, [self.entry(name, f) for name, f in self.repos[repo].items()])
        for repo, files in self.repos.items():
            prefix = f"/{repo}/resolve/main/"
            if path.startswith(prefix) and path[len(prefix):] in files:
                return self.send_file(handler, files[path[len(prefix):]], head)
        self.json(handler, {"error": "Entry not found"}, 404)

    @staticmethod
    def entry(name: str, f: Path) -> dict:
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        return {"type": "file", "path": name, "size": f.stat().st_size, "oid": digest[:40],
                "lfs": {"oid": digest, "size": f.stat().st_size, "pointerSize": 134}}

    def send_file(self, handler, f: Path, head: bool) -> None:
        described = f.read_bytes()
        data = described if head else self.served.get(f, described)
        start = 0
        ranged = handler.headers.get("Range")
        if ranged and ranged.startswith("bytes=") and not head:
            start = int(ranged[len("bytes="):].split("-")[0] or 0)
        handler.send_response(206 if start else 200)
        handler.send_header("X-Repo-Commit", COMMIT)
        handler.send_header("ETag", f'"{hashlib.sha256(described).hexdigest()}"')
        handler.send_header("Accept-Ranges", "bytes")
        handler.send_header("Content-Length", str(len(data) - start))
        if start:
            handler.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        handler.end_headers()
        if head:
            return
        try:
            for offset in range(start, len(data), self.chunk):
                handler.wfile.write(data[offset:offset + self.chunk])
        except (BrokenPipeError, ConnectionResetError):  # the client cancelled mid-file
            pass
