"""What a stage script needs around the library call: one-line errors, and the hash of the code it ran."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Callable

from .errors import ConfigError, DataError

PACKAGE = "modern_gpt"


def stage_main(main: Callable[[], None]) -> None:
    """Run a stage: a bad setting or input prints one line and exits 2, with no traceback."""
    try:
        main()
    except (ConfigError, DataError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


def code_files(script: str | Path, root: str | Path) -> list[str]:
    """The stage script and every module of this package loaded so far, relative to root, sorted."""
    root = Path(root).resolve()
    files = {Path(script).resolve()}
    for name, module in list(sys.modules.items()):
        if (name == PACKAGE or name.startswith(PACKAGE + ".")) and getattr(module, "__file__", None):
            files.add(Path(module.__file__).resolve())
    return sorted(str(f.relative_to(root)) for f in files)


def code_md5(paths: list[str], root: str | Path = ".") -> str:
    """One short md5 over each file's path and md5: changes when any of the files does."""
    h = hashlib.md5()
    for p in paths:
        h.update(f"{p} {hashlib.md5((Path(root) / p).read_bytes()).hexdigest()}\n".encode())
    return h.hexdigest()[:12]
