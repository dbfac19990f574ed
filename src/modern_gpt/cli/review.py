"""`modern-gpt review [BASE]`: what this working tree did to each slug's runs against BASE's committed runs, paired
by seed and judged once (one look at report.confidence, on the seeds both sides ran), as Markdown for a pull-request
comment (or `--json`);
`modern-gpt review --check`: whether the committed reports are what the committed lock and runs give.

Both read only what git tracks (reports/runs.csv, reports/ablation.csv, configs/, params.yaml, dvc.lock): no DVC
cache, no remote, nothing trained.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.errors import DataError


def add_parsers(sub) -> None:
    s = sub.add_parser("review", help="a pull request's effect on each run, paired by seed against BASE (git "
                                      "only: no DVC cache); --check: are the committed reports honest")
    s.add_argument("base", nargs="?", default="main", metavar="BASE",
                   help="the commit to compare against: a branch, tag or commit (default: main)")
    s.add_argument("--json", action="store_true", help="the same review as JSON")
    s.add_argument("--check", action="store_true",
                   help="exit 1, one line per problem, when a committed report is not what dvc.lock and "
                        "reports/runs.csv give (BASE is not read)")
    s.set_defaults(func=cmd_review)


def cmd_review(args) -> None:
    from ..review.sides import repo_root
    root = repo_root(Path("."))
    if args.check:
        from ..review.check import check
        try:
            problems, checked = check(root)
        except RuntimeError as e:
            raise DataError(str(e)) from None
        for line in problems:
            print(f"review --check: {line}", file=sys.stderr)
        if problems:
            raise SystemExit(1)
        print(f"review --check: the committed reports are what dvc.lock and the runs give ({checked})")
        return
    from ..review.diff import review
    from ..review.render import data, markdown
    from ..review.sides import commit_side, tree_side
    result = review(commit_side(root, args.base), tree_side(root))
    print(json.dumps(data(result), indent=1) if args.json else markdown(result), end="" if not args.json else "\n")
