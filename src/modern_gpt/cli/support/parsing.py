"""The parser every command shares (one-line errors, no abbreviations), and the hint for an option given
before its command."""

from __future__ import annotations

import argparse


class CommandParser(argparse.ArgumentParser):
    """One-line errors, and no abbreviated options: `--smok` is an error, not `--smoke`."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        # one line, no usage block: what was wrong and where to look
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def takes(parser: argparse.ArgumentParser, option: str) -> bool:
    """Whether `parser` has `option`: a parser built on it (parents=) refuses the option as a conflict."""
    probe = argparse.ArgumentParser(parents=[parser], add_help=False)
    try:
        probe.add_argument(option)
    except argparse.ArgumentError:
        return True
    return False


def command_hint(commands: dict[str, argparse.ArgumentParser], argv: list[str]) -> str | None:
    """An option given before any command (`modern_gpt.py --smoke`): which commands take it, as one line."""
    if not argv or not argv[0].startswith("-") or argv[0] in ("-h", "--help"):
        return None
    option = argv[0].split("=", 1)[0]
    owners = [name for name, p in commands.items() if takes(p, option)]
    if not owners:
        return None
    example = " or ".join(f"`modern-gpt {name} {option}`" for name in owners)
    book = " (the book's spelling: `python modern_gpt.py --ablate --smoke`)" if "ablate" in owners else ""
    return f"{option} is an option of {', '.join(owners)}, not of modern-gpt itself: {example}{book}"
