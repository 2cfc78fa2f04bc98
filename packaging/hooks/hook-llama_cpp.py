"""PyInstaller has no hook for llama_cpp: without this the frozen app dies with
"Shared library with base name 'llama' not found". llama_cpp loads its libraries from `<package>/lib/`,
so they are collected to that same place inside the bundle.

The wheel stores each Linux library three times (libllama.so, .so.0, .so.0.5.0: copies, not symlinks). ctypes
opens `libX.so` and the loader follows the `libX.so.N` sonames, so the fully versioned copies are left out.
The multimodal library (libmtmd, `llama_cpp.mtmd_cpp`) is kept: the engine loads it for vision projectors
(app/engine/vision/projector.py). The old llava bindings and the server are left out: Chorus never loads them.
"""

from PyInstaller.utils.hooks import collect_dynamic_libs

_PATTERNS = ["lib*.so", "lib*.so.[0-9]", "lib*.so.[0-9][0-9]", "*.dylib", "*.dll"]
binaries = [
    (src, dest) for src, dest in collect_dynamic_libs("llama_cpp", search_patterns=_PATTERNS)
    if "llava" not in src
]
excludedimports = ["llama_cpp.server", "llama_cpp.llava_cpp"]
