#!/usr/bin/env bash
# Build the Linux installers from a Python environment that has Chorus, its dependencies, the default model
# wheel and PyInstaller installed (`make package-linux` prepares .venv and calls this):
#   dist/chorus-<version>-linux-<arch>.tar.gz   unpack anywhere, run ./chorus
#   dist/chorus_<version>_<debarch>.deb         /opt/chorus, /usr/bin/chorus, menu entry, hicolor icons
# llama-cpp-python is bundled as it is installed: for binaries that run on other CPUs, build it with
# CMAKE_ARGS="-DGGML_NATIVE=OFF" first (the release workflow does).
source "$(dirname "$0")/../common.sh" linux
DEBARCH="$(dpkg --print-architecture 2>/dev/null || echo amd64)"

echo "== PyInstaller (onedir) =="
"$PY" -m PyInstaller --noconfirm --log-level WARN \
    --distpath "$BUILD/pyinstaller" --workpath "$BUILD/work" packaging/chorus.spec
BUNDLE="$BUILD/pyinstaller/chorus"
# A Python built from source carries ~18 MB of debug symbols in libpython. Strip only that: stripping wheel-
# vendored libraries (numpy's patchelf'd OpenBLAS) makes them unloadable.
strip --strip-debug "$BUNDLE"/_internal/libpython3*.so*
"$PY" packaging/make_icons.py hicolor "$BUILD/icons"

echo "== tar.gz =="
NAME="chorus-$VERSION-linux-$ARCH"
STAGE="$BUILD/tar/$NAME"
mkdir -p "$STAGE"
cp -a "$BUNDLE/." "$STAGE/"
cp resources/chorus.desktop "$STAGE/"
cp "$BUILD/icons/256x256/apps/chorus.png" "$STAGE/chorus.png"
cat > "$STAGE/README.txt" <<EOF
Chorus $VERSION - run many prompts at once against one local GGUF model.
Start it with ./chorus (the default model is inside; no network needed).
Menu entry: edit Exec= in chorus.desktop to this folder's chorus and copy it to ~/.local/share/applications/.
EOF
tar -C "$BUILD/tar" -czf "$DIST/$NAME.tar.gz" "$NAME"

echo "== .deb =="
PKG="$BUILD/deb/chorus"
mkdir -p "$PKG/DEBIAN" "$PKG/opt" "$PKG/usr/bin" "$PKG/usr/share/applications" "$PKG/usr/share/icons"
cp -a "$BUNDLE" "$PKG/opt/chorus"
ln -s /opt/chorus/chorus "$PKG/usr/bin/chorus"
install -m 644 resources/chorus.desktop "$PKG/usr/share/applications/chorus.desktop"
cp -a "$BUILD/icons" "$PKG/usr/share/icons/hicolor"
DEPENDS="$("$PY" packaging/linux/deb_depends.py "$BUNDLE")"
INSTALLED_KB="$(du -sk "$PKG" | cut -f1)"
cat > "$PKG/DEBIAN/control" <<EOF
Package: chorus
Version: $VERSION
Architecture: $DEBARCH
Maintainer: Chorus developers <chorus@users.noreply.github.com>
Installed-Size: $INSTALLED_KB
Depends: $DEPENDS
Section: devel
Priority: optional
Homepage: https://github.com/chorus-playground/chorus
Description: desktop playground for concurrent LLM generation
 Add many prompt panes and run them at the same time against one local GGUF
 model: a continuous-batching engine generates for all panes together.
 Ships with SmolLM2-135M-Instruct so it works offline on first launch.
EOF
dpkg-deb --root-owner-group -Zxz --build "$PKG" "$DIST/chorus_${VERSION}_${DEBARCH}.deb" >/dev/null

echo "== sizes =="
echo "bundle (unpacked): $(du -sh "$BUNDLE" | cut -f1)"
ls -lh "$DIST/$NAME.tar.gz" "$DIST/chorus_${VERSION}_${DEBARCH}.deb" | awk '{print $5, $9}'
echo "Depends: $DEPENDS"
