"""File → Open evaluation… with files that cannot be read: each is a message naming the file (and line), the
window keeps what it had, nothing escapes as an exception."""

import yaml


def write_config(tmp_path, config: dict):
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_broken_var_files_and_files_that_are_not_utf8_are_messages(window, tmp_path):
    (tmp_path / "vars.yaml").write_text("city: [Paris\n", encoding="utf-8")
    (tmp_path / "tests.csv").write_bytes("city\nMontr\xe9al\n".encode("cp1252"))
    config = {"prompts": ["{{city}}"], "providers": ["echo"],
              "tests": [{"vars": {"city": "file://vars.yaml"}}, "file://tests.csv"]}
    assert not window.evals.open_config(write_config(tmp_path, config), run=False)
    assert window.session.evaluation is None
    message = window.messages[-1]
    assert "vars.yaml: not valid YAML/JSON" in message and "tests.csv:2: not UTF-8 (byte 0xe9" in message, message
    assert message.endswith("Nothing was changed.")


def test_a_config_that_cannot_be_read_at_all_is_a_message(window, tmp_path):
    (tmp_path / "folder.yaml").mkdir()
    assert not window.evals.open_config(tmp_path / "folder.yaml", run=False)
    assert "folder.yaml" in window.messages[-1] and window.session.evaluation is None


def test_the_window_goes_on_while_a_config_fetches_its_dataset(window, tmp_path, monkeypatch):
    """A config naming a Hugging Face dataset is read on a worker thread: while the dataset server (a stand-in on
    127.0.0.1 serving the dataset viewer's rows, since the hub cannot be reached here) holds its answer, the
    window still handles its events; the server answers only once one of them has run (or after 20 s)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from PySide6.QtCore import QTimer

    order, released = [], threading.Event()

    class Rows(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802
            released.wait(20)
            order.append("served")
            body = json.dumps({"features": [], "rows": [{"row_idx": 0, "row": {"q": "Name a color."}}],
                               "num_rows_total": 1, "num_rows_per_page": 100}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Rows)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("CHORUS_HF_DATASETS_SERVER", f"http://127.0.0.1:{server.server_port}")

    def event():
        order.append("event")
        released.set()

    QTimer.singleShot(0, event)  # due as soon as the window handles events
    try:
        opened = window.evals.open_config(write_config(tmp_path, {
            "prompts": ["{{q}}"], "providers": ["echo"], "tests": "huggingface://datasets/org/qa"}), run=False)
    finally:
        server.shutdown()
        server.server_close()
    assert opened and len(window.session.evaluation.cases) == 1
    assert order == ["event", "served"]  # the event ran while the dataset was being fetched
