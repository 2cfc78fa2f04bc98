"""A process of its own that parses one GBNF grammar with llama.cpp and prints why the parser refused it.

llama.cpp's grammar parser reports with fprintf(stderr) and returns NULL; reading that in the app would mean
redirecting the whole process's stderr while other threads write to it. Here nothing else runs: stdin is the
grammar, argv[1] the model (loaded vocabulary only: token references in a grammar need it); stdout is the reason
(nothing when the grammar parses). `grammar.parser_message` runs it only after the app's own parse failed.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile


def reason(printed: str, source: str) -> str:
    """The parser's sentence from what it printed (`parse: error parsing grammar: <reason>\\n\\n<source>`)."""
    text = printed.replace(source, "") if source.strip() else printed
    marker = "error parsing grammar:"
    if marker in text:
        text = text.split(marker, 1)[1]
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def main(argv: list[str]) -> int:
    import llama_cpp

    source = sys.stdin.read()
    silent = llama_cpp.llama_log_callback(lambda *_: None)
    llama_cpp.llama_log_set(silent, ctypes.c_void_p(0))
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(argv[0].encode(), params) if argv else None
    vocab = llama_cpp.llama_model_get_vocab(model) if model else None
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)  # this process runs nothing else: the parser's fprintf is all that lands here
        try:
            sampler = llama_cpp.llama_sampler_init_grammar(vocab, source.encode("utf-8"), b"root")
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        printed = sink.read().decode("utf-8", "replace")
    if sampler:
        llama_cpp.llama_sampler_free(sampler)
    print(reason(printed, source))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
