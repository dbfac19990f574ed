"""Reading a corpus (UTF-8, NFC; a file or a folder of .txt files) and the contiguous train/val split."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from ..core.errors import DataError


def read_corpus(path: str | Path) -> str:
    """A UTF-8 text file, or a folder of .txt files (sorted by name, joined by newlines), as NFC."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.txt") if p.is_file())
        if not files:
            raise DataError(f"corpus {path}: folder has no .txt files")
    elif path.is_file():
        files = [path]
    else:
        raise DataError(f"corpus {path}: no such file or folder")
    texts = []
    for f in files:
        raw = f.read_bytes()
        try:
            texts.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            line = raw[: e.start].count(b"\n") + 1
            raise DataError(
                f"corpus {f}: not UTF-8 at byte {e.start} (line {line}): {raw[e.start:e.start + 4]!r}"
            ) from None
    text = unicodedata.normalize("NFC", "\n".join(texts))
    if not text.strip():
        raise DataError(f"corpus {path}: is empty")
    return text


def split_text(text: str, val_fraction: float) -> tuple[str, str]:
    """Contiguous split: the first (1 - val_fraction) of the text trains, the rest validates.

    The cut moves forward to the next line break (or space), so no word or syllable is cut in two.
    """
    if not 0.0 < val_fraction < 1.0:
        raise DataError(f"val_fraction={val_fraction}: must be between 0 and 1 (exclusive)")
    cut = int(round(len(text) * (1.0 - val_fraction)))
    for sep in ("\n", " "):
        at = text.find(sep, max(cut - 1, 0), cut + 1000)   # a cut right after sep stays
        if at != -1 and at + 1 < len(text):
            cut = at + 1
            break
    return text[:cut], text[cut:]
