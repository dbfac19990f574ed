"""The committed dvc.lock and reports/ belong to the committed code, data and params.

Whoever changes model, training, data or params code must run `dvc repro` and commit the new
dvc.lock and reports/ with it. Outputs missing from a clean clone (DVC's cache is not in git) are
fine; a changed source file, param, command, or a hand-edited committed output is not. The check is
`modern-gpt review --check`'s (review/check.py); the rule itself is tested in tests/test_review.py.
"""

from pathlib import Path

from modern_gpt.review.check import check

ROOT = Path(__file__).resolve().parents[1]


def test_lock_and_reports_match_the_code_data_and_params():
    problems, _ = check(ROOT)
    if problems and "`dvc repro plan`" in problems[0]:
        raise AssertionError(problems[0])                       # the change folder moved: the plan alone reruns
    assert not problems, "dvc.lock is stale; run `dvc repro` and commit dvc.lock and reports/:\n" + "\n".join(problems)
