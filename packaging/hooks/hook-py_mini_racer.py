"""mini-racer (V8, for the configs' javascript checks) loads libmini_racer and icudtl.dat from
`sys._MEIPASS/py_mini_racer/` when frozen (py_mini_racer/_dll.py): both must be bundled there."""

from PyInstaller.utils.hooks import collect_data_files, collect_dynamic_libs

binaries = collect_dynamic_libs("py_mini_racer")
datas = collect_data_files("py_mini_racer", includes=["*.dat"])
