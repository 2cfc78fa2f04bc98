"""Say which system package to install when Qt's shared libraries are missing.

PySide6 wheels bundle Qt itself but link against the desktop's X11/EGL/font libraries. A missing one fails
obscurely at window creation ("could not load the Qt platform plugin"), so `make` checks up front with `ldd`
and names the Debian/Ubuntu package. The same table feeds the .deb `Depends:` line.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

# Shared library soname -> Debian/Ubuntu package that ships it.
QT_SYSTEM_LIBRARIES = {
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libGLX.so.0": "libglx0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libX11.so.6": "libx11-6",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libxcb.so.1": "libxcb1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libwayland-client.so.0": "libwayland-client0",
    "libwayland-cursor.so.0": "libwayland-cursor0",
    "libwayland-egl.so.1": "libwayland-egl1",
    "libSM.so.6": "libsm6",
    "libICE.so.6": "libice6",
}


def qt_binaries(window: bool) -> list[Path]:
    """Qt's core GUI libraries, plus the X11 (xcb) platform plugin when a real window is wanted."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("PySide6 is not installed in this environment (pip install PySide6-Essentials).")
    root = Path(next(iter(spec.submodule_search_locations)))
    names = ["libQt6Widgets.so*", "libQt6Gui.so*"]
    if window:
        names += ["libQt6XcbQpa.so*", "plugins/platforms/libqxcb.so"]
    return [p for pattern in names for p in sorted((root / "Qt" / "lib").glob(pattern))
            + sorted((root / "Qt").glob(pattern))]


def missing_libraries(binaries: list[Path]) -> set[str]:
    missing: set[str] = set()
    for binary in binaries:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
        missing |= {line.split()[0] for line in out.splitlines() if "not found" in line}
    return missing


def main() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    window = "--window" in sys.argv[1:]  # without it: only what offscreen tests need
    missing = missing_libraries(qt_binaries(window))
    if not missing:
        print("Qt system libraries: all present.")
        return 0
    packages = sorted({QT_SYSTEM_LIBRARIES.get(lib, f"<the package providing {lib}>") for lib in missing})
    print("Qt needs system libraries that are missing: " + ", ".join(sorted(missing)), file=sys.stderr)
    print("Install them with:  sudo apt-get install " + " ".join(packages), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
