#!/usr/bin/env bash
# Install the built .deb, run the installed `chorus --self-test` offscreen, then do the same from the .tar.gz
# unpacked into a temporary folder. Fails unless both frozen apps generate text with their bundled model.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DEB="$(ls "$ROOT"/dist/chorus_*.deb | head -n1)"
TARBALL="$(ls "$ROOT"/dist/chorus-*-linux-*.tar.gz | head -n1)"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export QT_QPA_PLATFORM=offscreen
unset PYTHONPATH PYTHONHOME VIRTUAL_ENV

check() {  # $1: what, $2: expected bundle dir, rest: command. The JSON must say ok, frozen, model inside.
    local what="$1" where="$2"; shift 2
    local out log="$SCRATCH/stderr.log"
    out="$(cd "$SCRATCH" && "$@" 2>"$log")" || { echo "FAIL ($what): $out"; tail -n 40 "$log"; return 1; }
    echo "$what: $out"
    python3 - "$where" "$out" <<'EOF'
import json, sys
where, line = sys.argv[1], sys.argv[2].strip().splitlines()[-1]
report = json.loads(line)
assert report["ok"] and report["frozen"], report
assert report["model_path"].startswith(where), (report["model_path"], where)
assert all(p["state"] == "done" and p["tokens"] > 0 for p in report["panes"]), report["panes"]
assert all(v == "ok" for v in report["parts"].values()), report["parts"]  # V8, audio and video decoding, the MCP client
EOF
}

SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

echo "== install $(basename "$DEB") =="
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$DEB" >/dev/null
test -x /usr/bin/chorus && test -f /usr/share/applications/chorus.desktop
test -f /usr/share/icons/hicolor/256x256/apps/chorus.png
check "installed .deb" /opt/chorus chorus --self-test

echo "== unpack $(basename "$TARBALL") =="
tar -C "$SCRATCH" -xzf "$TARBALL"
APPDIR="$(ls -d "$SCRATCH"/chorus-*)"
check "unpacked .tar.gz" "$APPDIR" "$APPDIR/chorus" --self-test

if [ "${CHORUS_KEEP_INSTALLED:-0}" != "1" ]; then
    $SUDO apt-get remove -y -q chorus >/dev/null
fi
echo "smoke test passed"
