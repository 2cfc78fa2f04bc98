#!/usr/bin/env bash
# Build Chorus.app and a drag-to-Applications DMG for the CPU this runs on (arm64 or x86_64: build each on its
# own runner; PyInstaller does not cross-build and llama.cpp is compiled per architecture):
#   dist/Chorus-<version>-macos-<arch>.dmg
# Needs a Python environment with Chorus, the default model wheel and PyInstaller (`make package-macos`).
# Optional signing and notarization, driven by the environment:
#   CODESIGN_IDENTITY   "Developer ID Application: Name (TEAMID)" -> deep-sign the app (hardened runtime) and DMG
#   NOTARY_PROFILE      a `xcrun notarytool store-credentials` profile -> notarize the DMG and staple the ticket
# This script cannot run on the Linux development machines; it was written against Apple's tool documentation.
source "$(dirname "$0")/../common.sh" macos

echo "== icon =="
"$PY" packaging/make_icons.py iconset "$BUILD/chorus.iconset"
iconutil -c icns "$BUILD/chorus.iconset" -o "$BUILD/chorus.icns"

echo "== PyInstaller (Chorus.app) =="
CHORUS_ICNS="$BUILD/chorus.icns" "$PY" -m PyInstaller --noconfirm --log-level WARN \
    --distpath "$BUILD/pyinstaller" --workpath "$BUILD/work" packaging/chorus.spec
APP="$BUILD/pyinstaller/Chorus.app"
test -x "$APP/Contents/MacOS/chorus"

if [ -n "${CODESIGN_IDENTITY:-}" ]; then
    echo "== codesign =="
    codesign --force --deep --options runtime --timestamp --sign "$CODESIGN_IDENTITY" "$APP"
    codesign --verify --deep --strict --verbose=2 "$APP"
fi

echo "== DMG =="
STAGE="$BUILD/dmg"
mkdir -p "$STAGE"
cp -R "$APP" "$STAGE/"
ln -s /Applications "$STAGE/Applications"
DMG="$DIST/Chorus-$VERSION-macos-$ARCH.dmg"
rm -f "$DMG"
# hdiutil fails now and then with "Resource busy" while Spotlight or XProtect scans the new volume: retry.
for attempt in 1 2 3 4 5; do
    if hdiutil create -volname "Chorus $VERSION" -srcfolder "$STAGE" -fs HFS+ -format UDZO -ov "$DMG"; then
        break
    fi
    [ "$attempt" -eq 5 ] && { echo "hdiutil failed 5 times" >&2; exit 1; }
    echo "hdiutil failed (attempt $attempt), retrying in $((attempt * 5)) s" >&2
    sleep $((attempt * 5))
done

if [ -n "${CODESIGN_IDENTITY:-}" ]; then
    codesign --force --timestamp --sign "$CODESIGN_IDENTITY" "$DMG"
fi
if [ -n "${NOTARY_PROFILE:-}" ]; then
    echo "== notarize =="
    xcrun notarytool submit "$DMG" --keychain-profile "$NOTARY_PROFILE" --wait
    xcrun stapler staple "$DMG"
fi

echo "== sizes =="
echo "Chorus.app: $(du -sh "$APP" | cut -f1)"
ls -lh "$DMG" | awk '{print $5, $9}'
