"""The report stage's files, each name defined once: the report stage writes them under its --out folder (dvc.yaml:
reports/), `modern-gpt review` reads them from git, and tests/test_stage_deps.py holds dvc.yaml's outs equal to
these. Light on purpose (no pandas, no plotting): review imports it."""

MAIN = "ablation.md"             # the main ladder's report
TABLE = "ablation.csv"           # its table, raw numbers
RUNS = "runs.csv"                # one line per run: what review pairs
METRICS = "metrics.json"
CURVES = "val_curves.csv"
CURVES_PLOT = "val_curves.png"
SWEEP = "lr_sweep.csv"           # the learning-rate grid
SWEEP_PLOT = "lr_sweep.png"
BEYOND = "beyond.md"             # written while beyond.ladder lists flags (git alone tracks it)
CATALOGUE = "catalogue.md"       # written while catalogue.ladder lists changes (git alone tracks it)
SCALE = "scale.md"               # written while scale.sizes lists sizes (git alone tracks these three)
SCALE_TABLE = "scale.csv"
SCALE_PLOT = "scale.png"
STAGE_OUTS = (MAIN, TABLE, RUNS, CURVES, SWEEP, CURVES_PLOT, SWEEP_PLOT, METRICS)   # dvc.yaml's, in its order

CSV_FLOAT = "%.6g"               # how every CSV of the report writes a float
