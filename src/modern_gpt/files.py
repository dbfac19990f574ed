"""Small file helpers shared by the stage scripts: stable JSON, atomic writes, one-line errors."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from .errors import ConfigError, DataError


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write through a temporary file and rename, so a failure never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json(path: str | Path, obj: Any) -> None:
    """Keys in insertion order, a trailing newline, no NaN: the same object always gives the same bytes."""
    write_bytes(path, (json.dumps(obj, indent=1, allow_nan=False) + "\n").encode())


def read_json(path: str | Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: missing (run the stage that writes it: dvc repro)") from None


def stage_main(main: Callable[[], None]) -> None:
    """Run a stage: a bad setting or input prints one line and exits 2, with no traceback."""
    try:
        main()
    except (ConfigError, DataError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
