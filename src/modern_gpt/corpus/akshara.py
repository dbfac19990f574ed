"""Akṣara segmentation: Devanagari text split into orthographic syllables (a tokenizer)."""

from __future__ import annotations

import re

__all__ = ["aksharas"]

_CONS = "[\u0915-\u0939\u0958-\u095F\u0978-\u097F]\u093C?"  # consonant (+ nukta)
_HAL = f"{_CONS}\u094D[\u200C\u200D]?"  # consonant + virama (+ ZWNJ/ZWJ)
_VSIGN = "[\u093A\u093B\u093E-\u094C\u094E\u094F\u0955-\u0957\u0962\u0963]"
_MOD = "[\u0900-\u0903\u0951-\u0954]*"  # candrabindu, anusvara, visarga, accents
_IND = "[\u0904-\u0914\u0960\u0961\u0972-\u0977]"
_AKSHARA = re.compile(
    f"(?P<live>(?:{_HAL})*{_CONS}(?!\u094D){_VSIGN}?{_MOD}|{_IND}{_MOD})"
    f"|(?P<dead>(?:{_HAL})+{_MOD})|.", re.DOTALL)


def _check(ok: bool, message: str) -> None:
    """Raise ValueError(message) unless ok."""
    if not ok:
        raise ValueError(message)


def aksharas(text: str) -> list[str]:
    """Split text into Devanagari orthographic syllables: (consonant+virama)* consonant
    [vowel sign], or an independent vowel, each with any anusvara/visarga/candrabindu; a
    cluster ending in virama (word-final consonant) joins the preceding syllable. Every
    other character is its own token, so "".join(aksharas(t)) == t for any string."""
    _check(isinstance(text, str), f"text must be a str, got {type(text).__name__}")
    out: list[str] = []
    prev_syllable = False
    for m in _AKSHARA.finditer(text):
        if m.lastgroup == "dead" and prev_syllable:
            out[-1] += m.group()
        else:
            out.append(m.group())
        prev_syllable = m.lastgroup is not None
    return out
