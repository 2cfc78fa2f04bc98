"""PyAV (videos: app/engine/vision/video.py): its Cython modules import one another, and `fractions` (every time
base is a Fraction), from compiled code, which PyInstaller's analysis does not read, so every submodule is listed,
and fractions with them (as pyinstaller-hooks-contrib's own hook for av, which this one replaces, does); FFmpeg's
libraries (the wheel's av.libs) are found from the extensions' own dependencies. The self-test's "video" part
(app/ui/self_test.py) decodes a video through them in the packaged app."""

from PyInstaller.utils.hooks import collect_submodules

hiddenimports = ["fractions", *collect_submodules("av")]
