"""Files the stages write and read: atomic writes, stable JSON, token arrays."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from array import array
from pathlib import Path
from typing import Any, Iterable

from .errors import DataError

assert sys.byteorder == "little" and array("i").itemsize == 4, "token files are little-endian int32"


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
    except ValueError as e:                             # not JSON, or not UTF-8 text
        raise DataError(f"{path}: not readable JSON ({e})") from None


def token_bytes(ids: Iterable[int]) -> bytes:
    """Token ids as little-endian int32: a plain, stable file format (training reads it back)."""
    return array("i", ids).tobytes()
