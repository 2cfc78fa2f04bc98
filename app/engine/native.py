"""The loaded model and its vocabulary, through llama-cpp-python's low-level ctypes API.

Everything that touches a raw llama.cpp pointer for the model lives here, so the rest of the engine deals in
token ids and bytes. llama.cpp's log goes to Python `logging` (logger "chorus.llama").
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import llama_cpp

from app.engine.chat.template.builtin import utf8
from app.models import InvalidModelError, validate_gguf

log = logging.getLogger("chorus.llama")

# ggml_log_level in this vendor's ggml.h (llama-cpp-python's own _logger.py has these numbers wrong).
_LEVELS = {0: logging.DEBUG, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}
_last_level = logging.DEBUG


_capture = threading.local()  # .lines: a list while capture_log() is active on this thread


def _route_llama_log(level: int, text: bytes, _user_data) -> None:
    global _last_level
    lvl = _last_level if level == 5 else _LEVELS.get(level, logging.DEBUG)  # 5 = continue previous line
    _last_level = lvl
    message = text.decode("utf-8", "replace").rstrip()
    lines = getattr(_capture, "lines", None)
    if lines is not None and lvl >= logging.WARNING and message:
        lines.append(message)
    if message and log.isEnabledFor(lvl):
        # llama.cpp's INFO is a wall of load details: keep it at DEBUG so the app's log stays readable.
        log.log(logging.DEBUG if lvl == logging.INFO else lvl, "%s", message)


@contextlib.contextmanager
def capture_log():
    """Collect the warning and error lines llama.cpp logs on this thread during the block (through the log
    callback: other threads' lines and stderr are untouched)."""
    lines: list[str] = []
    _capture.lines = lines
    try:
        yield lines
    finally:
        _capture.lines = None


# Module-level reference: if the callback were garbage-collected, llama.cpp's next log line would crash.
_LOG_CALLBACK = llama_cpp.llama_log_callback(_route_llama_log)
_backend_lock = threading.Lock()
_backend_ready = False


def init_backend() -> None:
    """Once per process: route the log and initialise ggml's backends."""
    global _backend_ready
    with _backend_lock:
        if not _backend_ready:
            llama_cpp.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))
            llama_cpp.llama_backend_init()
            _backend_ready = True


def model_params(n_gpu_layers: int = -1):
    """llama.cpp's defaults with `n_gpu_layers` (-1 all; ignored by a CPU build), minus the AMX weight buffers
    where this build has them: on Sapphire Rapids-class CPUs they segfault in `ggml_backend_amx_mul_mat` at the
    first decode (ggml-org/llama.cpp#20824, unfixed upstream). A `-march=native` build on such a CPU compiles
    them in; portable builds do not."""
    params = llama_cpp.llama_model_default_params()
    params.n_gpu_layers = n_gpu_layers
    if amx_build():
        log.info("AMX build: weights stay in plain CPU buffers (llama.cpp#20824)")
        params.use_extra_bufts = False
    return params


@functools.cache
def amx_build() -> bool:
    """Whether this llama.cpp was compiled with AMX (a `-march=native` build on a Sapphire Rapids-class CPU). Its
    extra weight buffers must stay off here, and in llama.cpp's own tools built beside it (`--no-repack`), or the
    first decode segfaults."""
    return "AMX_INT8 = 1" in llama_cpp.llama_print_system_info().decode("utf-8", "replace")


@dataclass(frozen=True)
class ModelInfo:
    """What the window shows about the loaded model."""

    path: str
    name: str
    architecture: str
    description: str
    n_params: int
    file_size: int
    n_ctx_train: int
    has_chat_template: bool
    chat_format: str = ""  # how chat messages become a prompt, in a few words (set by the engine)
    chat_format_note: str = ""  # why, when it was chosen without a template in the GGUF
    tool_format: str = ""  # how tools are offered to the model, in words (set by the engine)
    offload: str = ""  # where the layers run, e.g. "CPU (CPU build)", "Apple M2: 30/30 layers" (set by the engine)
    kv_type: str = "f16"  # the KV cache's element type (set by the engine)

    @property
    def quantization(self) -> str:
        return self.description.split()[-1] if self.description else "?"

    @property
    def params_label(self) -> str:
        n = self.n_params
        return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"


class LlamaModel:
    """A loaded GGUF model: vocabulary, tokenizer, token pieces and metadata. Free with `close()`."""

    def __init__(self, path: str | Path, n_gpu_layers: int = -1):
        path = validate_gguf(path)
        init_backend()
        self.ptr = llama_cpp.llama_model_load_from_file(str(path).encode(), model_params(n_gpu_layers))
        if not self.ptr:
            raise InvalidModelError(
                f"llama.cpp could not load {path.name}: the file is truncated, damaged, or uses an "
                "architecture this llama.cpp build does not know (see the log for details)."
            )
        self.path = path
        self.vocab = llama_cpp.llama_model_get_vocab(self.ptr)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self.n_ctx_train = llama_cpp.llama_model_n_ctx_train(self.ptr)
        self.add_bos = bool(llama_cpp.llama_vocab_get_add_bos(self.vocab))
        self.add_eos = bool(llama_cpp.llama_vocab_get_add_eos(self.vocab))
        self.bos_id = llama_cpp.llama_vocab_bos(self.vocab)  # -1 when the model has none
        self.eos_id = llama_cpp.llama_vocab_eos(self.vocab)
        self._pieces: dict[int, bytes] = {}
        self._guidance = None
        self._guidance_lock = threading.Lock()
        self.eog_ids = [t for t in range(self.n_vocab) if llama_cpp.llama_vocab_is_eog(self.vocab, t)]
        self._eog = frozenset(self.eog_ids)

    def close(self) -> None:
        if self.ptr:
            llama_cpp.llama_model_free(self.ptr)
            self.ptr = None

    # --- text <-> tokens -------------------------------------------------------------------------------
    def tokenize(self, text: str, add_special: bool) -> list[int]:
        """Special tokens in the text (e.g. `<|im_start|>` from a chat template) are parsed as such; a lone
        surrogate (half a character, not text) is tokenized as U+FFFD."""
        data = utf8(text)
        capacity = len(data) + 8
        while True:
            buf = (llama_cpp.llama_token * capacity)()
            n = llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, capacity, add_special, True)
            if n >= 0:
                return list(buf[:n])
            if n == -(2**31):
                raise ValueError("the prompt is too long to tokenize")
            capacity = -n  # llama.cpp returns -needed when the buffer is too small

    def piece_text(self, token: int) -> str:
        """A token's piece as text (a piece ending inside a UTF-8 character shows U+FFFD)."""
        return self.piece(token).decode("utf-8", "replace")

    def special_piece(self, token: int) -> str:
        """A token as llama-server hands BOS/EOS to chat templates (special tokens spelled out); "" for -1."""
        if token < 0:
            return ""
        buf = ctypes.create_string_buffer(256)
        n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, True)
        return buf.raw[:max(n, 0)].decode("utf-8", "replace")

    def piece(self, token: int) -> bytes:
        """A token's bytes (control tokens render empty). Cached: the vocabulary never changes."""
        cached = self._pieces.get(token)
        if cached is None:
            buf = ctypes.create_string_buffer(64)
            n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, 64, 0, False)
            if n < 0:
                buf = ctypes.create_string_buffer(-n)
                n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, -n, 0, False)
            cached = self._pieces[token] = buf.raw[:n]
        return cached

    def guidance_tokenizer(self):
        """This vocabulary as llguidance sees it (JSON schemas), built on first use (about a second) and kept;
        safe from any thread. End-of-generation tokens are its EOS tokens."""
        with self._guidance_lock:
            if self._guidance is None:
                self._guidance = self._build_guidance_tokenizer()
            return self._guidance

    def _build_guidance_tokenizer(self):
        """llguidance.llamacpp.lltokenizer_from_vocab, with the vocabulary calls this llama.cpp does not warn
        about: every token's bytes (control tokens marked with a 0xff prefix, llguidance's convention for special
        tokens) and llama.cpp's own tokenizer for text."""
        from llguidance import LLTokenizer

        special = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
        buf = ctypes.create_string_buffer(1024)
        tokens = []
        for token in range(self.n_vocab):
            n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, True)
            piece = buf.raw[:n] if n >= 0 else b""
            attr = llama_cpp.llama_vocab_get_attr(self.vocab, token)
            looks_special = attr & llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED and piece[:1] == b"<" and piece[-1:] == b">"
            tokens.append(b"\xff" + piece if attr & special or looks_special else piece)
        tokenize = ctypes.cast(llama_cpp.llama_cpp._lib.llama_tokenize, ctypes.c_void_p).value
        return LLTokenizer.from_llamacpp(tokens=tokens, vocab_ptr=self.vocab, tokenize_fptr=tokenize,
                                         eos_token=list(self.eog_ids), slices=None)

    def is_eog(self, token: int) -> bool:
        return token in self._eog

    def token_text(self, token: int) -> str:
        """The vocabulary's own spelling of a token (e.g. "<|im_end|>", "Ġfruit"), for templates and tests."""
        raw = llama_cpp.llama_vocab_get_text(self.vocab, token)
        return raw.decode("utf-8", "replace") if raw else ""

    # --- metadata ------------------------------------------------------------------------------------------
    def meta(self, key: str) -> str:
        buf = ctypes.create_string_buffer(512)
        n = llama_cpp.llama_model_meta_val_str(self.ptr, key.encode(), buf, 512)
        return buf.value.decode("utf-8", "replace") if n >= 0 else ""

    def head_dims(self) -> tuple[int, int]:
        """(K, V) head size, as llama.cpp reads them: key_length / value_length, else n_embd / n_head."""
        arch = self.meta("general.architecture")
        n_head = max(1, llama_cpp.llama_model_n_head(self.ptr))
        fallback = llama_cpp.llama_model_n_embd(self.ptr) // n_head
        k, v = self.meta(f"{arch}.attention.key_length"), self.meta(f"{arch}.attention.value_length")
        return int(k) if k.isdigit() else fallback, int(v) if v.isdigit() else fallback

    def chat_template(self) -> str | None:
        raw = llama_cpp.llama_model_chat_template(self.ptr, None)
        return raw.decode("utf-8") if raw else None

    def info(self) -> ModelInfo:
        desc = ctypes.create_string_buffer(256)
        llama_cpp.llama_model_desc(self.ptr, desc, 256)
        return ModelInfo(
            path=str(self.path),
            name=self.meta("general.name") or self.path.stem,
            architecture=self.meta("general.architecture") or "?",
            description=desc.value.decode("utf-8", "replace"),
            n_params=int(llama_cpp.llama_model_n_params(self.ptr)),
            file_size=self.path.stat().st_size,
            n_ctx_train=self.n_ctx_train,
            has_chat_template=self.chat_template() is not None,
        )
