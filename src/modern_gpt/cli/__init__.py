"""`modern-gpt ablate|bench|sample|repro|reproduce|settle|levels|shard|review|explain|import-config|export|import`, also `python -m
modern_gpt` and the book's `python modern_gpt.py --ablate`.

The layout is the rule: every module directly in cli/ is a command module, and only those are. Each has an
add_parsers that registers its `modern-gpt` subcommands (one, or a pair that belong together: explain and
import-config, export and import), each with its own cmd_ function (set_defaults(func=...)), and is listed in
COMMANDS. What the commands share (the parser class, the quick command's profiles, a run folder's check, DVC and
its remote, Ray) lives in support/, which registers no command. This file only puts the commands together, in the
order `--help` lists them. tests/test_layout.py holds the rule.
"""

from __future__ import annotations

import argparse
import sys

from ..core.errors import ConfigError, DataError
from . import ablate, bench, explain, hf_io, repro, reproduce, review, sample, settle, shard
from .support.parsing import CommandParser, command_hint

COMMANDS = (ablate, bench, sample, repro, reproduce, settle, shard, review, explain, hf_io)
BOOK_SPELLING = ("ablate", "bench")             # `--ablate` and `--bench` as the first argument
# pyproject's extras, by the module a command imports: the base install is review's (no torch)
EXTRAS = {"torch": "train", "matplotlib": "train", "pandas": "train", "tokenizers": "train", "tqdm": "train",
          "transformers": "hf", "safetensors": "hf", "ray": "ray"}


def build_parser() -> tuple[CommandParser, dict[str, argparse.ArgumentParser]]:
    """The parser, and each command's own parser by name (for command_hint)."""
    parser = CommandParser(prog="modern-gpt", description="Measure what each piece of the modern transformer buys.",
                           epilog="The book's quick command, `python modern_gpt.py --ablate --smoke`, is `modern-gpt "
                                  "ablate --smoke`: --ablate and --bench are accepted as the first argument for ablate "
                                  "and bench. Each command has its own --help, e.g. `modern-gpt ablate --help`.")
    sub = parser.add_subparsers(dest="command", parser_class=CommandParser)
    for command in COMMANDS:
        command.add_parsers(sub)
    sub.metavar = "{" + ",".join(sub.choices) + "}"      # the registered names, as errors name the argument
    return parser, dict(sub.choices)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("--") and argv[0][2:] in BOOK_SPELLING:
        argv[0] = argv[0][2:]
    try:
        parser, commands = build_parser()            # its help shows params.yaml's values: a bad file stops here
    except ConfigError as e:
        print(f"modern-gpt: error: {e}", file=sys.stderr)
        return 2
    if hint := command_hint(commands, argv):
        print(f"modern-gpt: error: {hint}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        args.func(args)
    except (ConfigError, DataError) as e:
        print(f"modern-gpt: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as e:                 # an extra this environment was installed without
        module = (e.name or "").split(".")[0]
        if module not in EXTRAS:
            raise
        print(f"modern-gpt: error: {args.command} needs {module}, which is not installed here: pip install -e "
              f"'.[{EXTRAS[module]}]' (or pip install -r requirements.txt, which pins it)", file=sys.stderr)
        return 2
    return 0
