"""The book's quick command: `python modern_gpt.py --ablate --smoke`.

A thin shim over the `modern_gpt` package in src/. Run from this folder, this file would shadow the
package of the same name (the script's folder comes first on sys.path), so it takes its own folder
off the path and puts src/ first: the command then runs this checkout's code, installed or not.
"""

import sys
from pathlib import Path

_here = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
sys.path.insert(0, str(_here / "src"))
if __name__ != "__main__":
    # imported as `modern_gpt` (e.g. `python -m pytest` from this folder): hand over to the package
    del sys.modules[__name__]
    sys.modules[__name__] = __import__("modern_gpt")
else:
    from modern_gpt.cli import main

    sys.exit(main())
