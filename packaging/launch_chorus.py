"""PyInstaller's entry script: the installed `chorus` is `python -m app`."""

import sys

from app.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
