"""ChatTemplate renders every template llama.cpp ships (models/templates in the vendored source) as
`llama-server --jinja` does: a system message, a user turn, an assistant turn and a second user turn, with the
server's default thinking and with chat_template_kwargs {"enable_thinking": false}, compared with the prompt the
server's POST /apply-template returns.

The server takes its template at startup only, so each template gets its own server (`-np 1 -c 512`), asked
both questions. Where the server is provably wrong, the template is named in SERVER_BUGS with the bug; its test
asserts the difference is still there (a fixed bug fails it, so the entry gets removed).
"""

import ctypes
import os
import tarfile
from datetime import datetime
from pathlib import Path, PurePosixPath

import httpx
import llama_cpp
import pytest

from app.engine.chat_template import ChatTemplate
from app.engine.native import LlamaModel
from tests.servers import CACHE

pytestmark = pytest.mark.servers


def _templates() -> dict[str, str]:
    """name -> source of llama.cpp's models/templates, from the sdist `make llama-server` keeps in the cache (or
    a llama.cpp source tree named by CHORUS_LLAMA_CPP_SOURCE)."""
    tree = os.environ.get("CHORUS_LLAMA_CPP_SOURCE")
    if tree:
        return {p.stem: p.read_text() for p in sorted(Path(tree, "models", "templates").glob("*.jinja"))}
    sdist = CACHE / "src" / f"llama_cpp_python-{llama_cpp.__version__}.tar.gz"
    if not sdist.exists():
        return {}
    with tarfile.open(sdist) as tar:
        return {PurePosixPath(m.name).stem: tar.extractfile(m).read().decode() for m in tar.getmembers()
                if m.isfile() and "/models/templates/" in m.name and m.name.endswith(".jinja")}


TEMPLATES = _templates()
CONVERSATION = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hi there"},
    {"role": "user", "content": "How are you?"},
]
MODES = {"default": None, "thinking off": False}

# template -> the server's bug that makes its prompt differ from ours (kept in step with docs/engine.md).
SERVER_BUGS: dict[str, str] = {}


@pytest.fixture(scope="module")
def vocab(model_path):
    """BOS/EOS as llama-server passes them to templates (token pieces with special tokens shown), and whether
    the vocabulary adds them itself."""
    model = LlamaModel(model_path)
    try:
        def piece(token: int) -> str:
            if token < 0:
                return ""
            buf = ctypes.create_string_buffer(256)
            n = llama_cpp.llama_token_to_piece(model.vocab, token, buf, len(buf), 0, True)
            return buf.raw[:n].decode("utf-8", "replace")

        return dict(bos_token=piece(model.bos_id), eos_token=piece(model.eos_id), add_bos=model.add_bos,
                    add_eos=bool(llama_cpp.llama_vocab_get_add_eos(model.vocab)))
    finally:
        model.close()


def server_prompt(url: str, thinking: bool | None) -> str:
    body: dict = {"messages": CONVERSATION}
    if thinking is not None:
        body["chat_template_kwargs"] = {"enable_thinking": thinking}
    response = httpx.post(f"{url}/apply-template", json=body, timeout=30)
    response.raise_for_status()
    return response.json()["prompt"]


@pytest.mark.skipif(not TEMPLATES, reason="llama.cpp's templates come with its source: run `make llama-server`")
@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_prompt_matches_llama_server(name, start_llama_server, vocab, tmp_path):
    path = tmp_path / f"{name}.jinja"
    path.write_text(TEMPLATES[name])
    server = start_llama_server("--jinja", "--chat-template-file", str(path), "-np", "1", "-c", "512",
                                "--no-warmup")
    url = server.url.removesuffix("/v1")
    template = ChatTemplate(TEMPLATES[name], vocab["bos_token"], vocab["eos_token"], add_bos=vocab["add_bos"],
                            add_eos=vocab["add_eos"])
    differ = []
    for mode, thinking in MODES.items():
        theirs = server_prompt(url, thinking)
        ours = template.render(CONVERSATION, enable_thinking=thinking, now=datetime.now())
        if ours != theirs:
            differ.append(f"{mode}:\n  llama-server: {theirs!r}\n  Chorus:       {ours!r}")
    if name in SERVER_BUGS:
        assert differ, f"{name} now matches: the server bug ({SERVER_BUGS[name]}) is fixed, drop the exception"
    else:
        assert not differ, f"{name} renders differently\n" + "\n".join(differ)
