"""PyAV (videos: app/engine/vision/video.py): its Cython modules import one another from compiled code, which
PyInstaller's analysis does not read, so every submodule is listed; FFmpeg's libraries (the wheel's av.libs) are
found from the extensions' own dependencies."""

from PyInstaller.utils.hooks import collect_submodules

hiddenimports = collect_submodules("av")
