"""Compute the .deb `Depends:` line for a PyInstaller bundle, the way dpkg-shlibdeps would.

PyInstaller copies most libraries into the bundle but deliberately leaves the desktop's own (glibc, X11/xcb,
EGL/GL, fontconfig, ...) to the system. This runs `ldd` on every ELF file in the bundle, keeps what resolves
outside it, and asks dpkg which package owns each file. Libraries this build machine lacks come from the same
soname table `make` uses to name missing packages (packaging/check_qt_deps.py).

    python packaging/linux/deb_depends.py BUNDLE_DIR   -> prints "libc6 (>= 2.36), libegl1, ..."
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from check_qt_deps import QT_SYSTEM_LIBRARIES  # noqa: E402

ELF_MAGIC = b"\x7fELF"


def elf_files(bundle: Path) -> list[Path]:
    found = []
    for path in bundle.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as handle:
                if handle.read(4) == ELF_MAGIC:
                    found.append(path)
    return found


def external_libraries(bundle: Path) -> tuple[set[str], set[str]]:
    """(paths outside the bundle that bundled binaries load, sonames no file on this machine provides)."""
    outside, missing = set(), set()
    root = str(bundle.resolve())
    binaries = elf_files(bundle)
    # ldd resolves through the system's search path, so a library the bundle carries may show up as a system
    # path; what the bundle carries under the same file name is what the frozen app actually loads.
    bundled = {path.name for path in bundle.rglob("*")}
    for binary in binaries:
        result = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
        for line in result.stdout.splitlines():
            parts = line.split()
            if "=>" not in parts:
                continue
            soname, target = parts[0], parts[parts.index("=>") + 1]
            if soname in bundled:
                continue
            if target == "not":
                missing.add(soname)
            elif not os.path.realpath(target).startswith(root):
                outside.add(target)
    return outside, missing


def owning_package(path: str) -> str | None:
    """dpkg knows a file by the path its package shipped, which on merged-/usr systems may differ from ldd's."""
    candidates = {path, os.path.realpath(path)}
    candidates |= {c.replace("/usr/lib/", "/lib/", 1) for c in list(candidates) if c.startswith("/usr/lib/")}
    candidates |= {c.replace("/lib/", "/usr/lib/", 1) for c in list(candidates) if c.startswith("/lib/")}
    for candidate in sorted(candidates):
        result = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if result.returncode == 0:
            return result.stdout.split(":", 1)[0].strip()  # "libx11-6:amd64: /usr/lib/..." -> libx11-6
    return None


def depends(bundle: Path) -> str:
    outside, missing = external_libraries(bundle)
    packages = {owning_package(path) for path in outside}
    packages.discard(None)
    unknown = sorted(lib for lib in missing if lib not in QT_SYSTEM_LIBRARIES)
    if unknown:
        print(f"warning: no package known for {', '.join(unknown)}", file=sys.stderr)
    packages |= {QT_SYSTEM_LIBRARIES[lib] for lib in missing if lib in QT_SYSTEM_LIBRARIES}
    glibc = platform.libc_ver()[1]
    entries = [f"libc6 (>= {glibc})" if name == "libc6" and glibc else name for name in sorted(packages)]
    return ", ".join(entries)


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit(__doc__)
    print(depends(Path(sys.argv[1])))
