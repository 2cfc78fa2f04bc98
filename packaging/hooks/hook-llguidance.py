"""llguidance reads its own version with importlib.metadata at import (`llguidance/__init__.py`), so the frozen
app dies with PackageNotFoundError unless the package's metadata is bundled beside it. CI's installed-.deb smoke
test failed exactly so once JSON schemas went to llguidance."""

from PyInstaller.utils.hooks import collect_dynamic_libs, copy_metadata

datas = copy_metadata("llguidance")
binaries = collect_dynamic_libs("llguidance")
