"""What is wrong with a ladder's runs, found once by the report's thresholds (params.yaml's report: section) and
worded twice: as the report's bold paragraphs above its table, and as the quick command's plain lines under its
table. Both come from one Findings, so the two cannot disagree on which row memorised, overfitted, diverged or
is unequal in parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from .results import RowResult
from .settings import Settings
from . import wording as W

VAL_GAP = 1.25        # the quick command: val above this × train (mean over a row's seeds) gets a line of its own


def memorised(rows: list[RowResult], s: Settings) -> list[str]:
    """Rows whose train and val loss per character are both under the threshold, or whose train
    loss is under the corpus's floor: no model can do that without having memorised the text."""
    out = []
    for r in rows:
        for run in r.runs:
            if run.train_loss is None:
                continue
            train, val = run.train_loss / s.train_chars_per_token, run.val_loss / s.val_chars_per_token
            if (train < s.memorised_below and val < s.memorised_below) or (s.floor is not None and train < s.floor):
                out.append(r.label)
                break
    return out


def overfitting(rows: list[RowResult], s: Settings) -> list[str]:
    """'label (seed …)' for runs whose final val loss ended more than overfit_rise above its minimum."""
    out = []
    for r in rows:
        seeds = [run.seed for run in r.runs if run.curve and not run.diverged
                 and run.curve[-1].val > (1 + s.overfit_rise) * min(p.val for p in run.curve)]
        if seeds:
            out.append(f"{r.label} (seed {', '.join(map(str, seeds))})")
    return out


def val_gap(rows: list[RowResult]) -> tuple[float, float] | None:
    """(smallest, largest) val / train over the rows, when some row's val is above VAL_GAP × its train."""
    ratios = [r.val.mean / r.train.mean for r in rows if r.val.mean is not None and r.train.mean]
    return (min(ratios), max(ratios)) if ratios and max(ratios) > VAL_GAP else None


@dataclass(frozen=True)
class Findings:
    """A ladder's findings; an empty list (or None) is nothing to say."""
    s: Settings                           # the thresholds they were found by, which the wording states
    one_seed: bool                        # no verdicts
    memorised: list[str]                  # row labels
    overfitting: list[str]                # 'label (seed …)'
    unequal: list[str]                    # rows whose non-embedding parameters differ from their reference's
    diverged: list[str]                   # 'label (k/n)'
    gap: tuple[float, float] | None       # val_gap(): the quick command's only

    def report(self) -> list[str]:
        """The report's paragraphs above its table, in Markdown."""
        s, out = self.s, []
        if self.one_seed:
            out.append(W.ONE_SEED)
        if self.memorised:
            out.append(W.MEMORISED.format(rows=", ".join(self.memorised), below=s.memorised_below,
                                          floor=W.MEMORISED_FLOOR.format(floor=s.floor) if s.floor is not None else ""))
        if self.overfitting:
            out.append(W.OVERFITTING.format(rise=s.overfit_rise, runs="; ".join(self.overfitting)))
        if self.unequal:
            out.append(W.UNEQUAL.format(rows=", ".join(self.unequal), tolerance=s.param_tolerance))
        if self.diverged:
            out.append(W.DIVERGED.format(rows=", ".join(self.diverged)))
        return out

    def quick(self, train_chars: int) -> list[str]:
        """The quick command's lines under its table, in plain text: the same findings, then val far above train,
        the units, and where to go next."""
        s, out = self.s, []
        if self.memorised:
            out.append(W.Q_MEMORISED.format(rows=", ".join(self.memorised), below=s.memorised_below,
                                            floor=W.Q_MEMORISED_FLOOR.format(floor=s.floor) if s.floor is not None
                                            else ""))
        if self.overfitting:
            out.append(W.Q_OVERFITTING.format(rise=s.overfit_rise, runs="; ".join(self.overfitting)))
        if self.gap:
            out.append(W.Q_GAP.format(low=self.gap[0], high=self.gap[1], chars=train_chars))
        if self.unequal:
            out.append(W.Q_UNEQUAL.format(rows=", ".join(self.unequal), tolerance=s.param_tolerance))
        if self.diverged:
            out.append(W.Q_DIVERGED.format(rows=", ".join(self.diverged)))
        if self.one_seed:
            out.append(W.Q_ONE_SEED)
        out.append(W.Q_UNITS)
        out.append(W.Q_NEXT_ONE_SEED if self.one_seed else W.Q_NEXT)
        return out


def findings(rows: list[RowResult], s: Settings) -> Findings:
    """Each check run once over the rows (row 0 first), by the thresholds in s."""
    return Findings(s, one_seed=len(rows[0].runs) == 1, memorised=memorised(rows, s), overfitting=overfitting(rows, s),
                    unequal=[r.label for r in rows if r.unequal],
                    diverged=[f"{r.label} ({r.val.n_diverged}/{r.val.n})" for r in rows if r.val.n_diverged],
                    gap=val_gap(rows))


def quick_warnings(rows: list[RowResult], s: Settings, train_chars: int) -> list[str]:
    """The quick command's lines under its table (Findings.quick), from its rows as they stand."""
    return findings(rows, s).quick(train_chars)
