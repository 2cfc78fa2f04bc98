# Sourced by the platform build scripts: where things are and what is being built.
#   PY       the Python environment to freeze (PYTHON overrides; default .venv)
#   VERSION  app.__version__, the one place the version lives
#   BUILD    build/<platform>, emptied first; DIST  dist/, where installers land
# Usage: source packaging/common.sh <platform>
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
VERSION="$("$PY" -c 'import app; print(app.__version__)')"
ARCH="$(uname -m)"
BUILD="$ROOT/build/$1"
DIST="$ROOT/dist"
rm -rf "$BUILD"
mkdir -p "$BUILD" "$DIST"
