#!/usr/bin/env bash
# Build llama-server, llama-perplexity and llama-quantize from the llama.cpp that the pinned llama-cpp-python sdist
# vendors, once, into a cache outside the source tree (CHORUS_CACHE, default ~/.cache/chorus). Prints
# llama-server's path; the other two sit beside it.
# The server tests (tests/backends) start llama-server on 127.0.0.1 with the embedded model; the quantization
# parity tests (tests/quant) requantize it with llama-quantize and compare with llama-perplexity.
set -euo pipefail
PY=${PYTHON:-.venv/bin/python}
VERSION=$($PY -c "import llama_cpp; print(llama_cpp.__version__)")
CACHE=${CHORUS_CACHE:-$HOME/.cache/chorus}
OUT="$CACHE/llama-server-$VERSION"
TOOLS="llama-server llama-perplexity llama-quantize"
MISSING=""
for tool in $TOOLS; do [ -x "$OUT/$tool" ] || MISSING="$MISSING $tool"; done
if [ -z "$MISSING" ]; then echo "$OUT/llama-server"; exit 0; fi
PYTHON=$PY CHORUS_CACHE=$CACHE bash "$(dirname "$0")/llama_cpp_source.sh" >/dev/null  # the sdist, in $CACHE/src
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
tar -xzf "$CACHE/src/llama_cpp_python-$VERSION.tar.gz" -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
# The prebuilt web UI would be downloaded; OpenSSL is not needed on 127.0.0.1.
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF >&2
# shellcheck disable=SC2086  # one word per target
cmake --build "$WORK/build" --target $MISSING -j "$(nproc)" >&2
mkdir -p "$OUT"
for tool in $MISSING; do  # a copy then a rename: a binary another process runs is never overwritten in place
  cp "$WORK/build/bin/$tool" "$OUT/.$tool.new"
  mv "$OUT/.$tool.new" "$OUT/$tool"
done
echo "$OUT/llama-server"
