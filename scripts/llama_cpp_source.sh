#!/usr/bin/env bash
# llama.cpp's reference chat templates for the tests, from the source the pinned llama-cpp-python vendors: its
# sdist (pip download takes it from pip's cache, which kept it when llama-cpp-python was built; no build here),
# kept in CHORUS_CACHE (default ~/.cache/chorus)/src, and its models/templates/*.jinja unpacked beside it in
# llama.cpp-VERSION/ (app/bench/model_files.py reads them there). Once per version; prints the unpacked tree.
set -euo pipefail
PY=${PYTHON:-.venv/bin/python}
VERSION=$($PY -c "import llama_cpp; print(llama_cpp.__version__)")
CACHE=${CHORUS_CACHE:-$HOME/.cache/chorus}
SDIST="$CACHE/src/llama_cpp_python-$VERSION.tar.gz"
TREE="$CACHE/llama.cpp-$VERSION"
mkdir -p "$CACHE/src"
if [ ! -f "$SDIST" ]; then
  FETCH=$(mktemp -d "$CACHE/src/fetch.XXXXXX")
  $PY -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$FETCH" >&2
  mv "$FETCH/llama_cpp_python-$VERSION.tar.gz" "$SDIST"  # whole or not at all
  rmdir "$FETCH"
fi
if [ ! -f "$TREE/.unpacked" ]; then
  WORK=$(mktemp -d "$CACHE/unpack.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  tar -xzf "$SDIST" -C "$WORK" --strip-components=3 --wildcards \
    "llama_cpp_python-$VERSION/vendor/llama.cpp/models/templates/*"
  touch "$WORK/.unpacked"
  rm -rf "$TREE"
  mv -T "$WORK" "$TREE"
fi
echo "$TREE"
