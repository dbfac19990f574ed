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
BEYOND = "beyond.md"             # written while beyond.ladder lists flags (off: left as it is)
CATALOGUE = "catalogue.md"       # written while catalogue.ladder lists changes (off: left as it is)
SCALE = "scale.md"               # written while scale.sizes lists sizes (off: these three left as they are)
SCALE_TABLE = "scale.csv"
SCALE_PLOT = "scale.png"
BEYOND_RUNS = "beyond_runs.csv"  # each off-by-default report's runs, as runs.csv lists the main job's
CATALOGUE_RUNS = "catalogue_runs.csv"
SCALE_RUNS = "scale_runs.csv"
OVERLAY_FILES = {"beyond": (BEYOND, BEYOND_RUNS), "catalogue": (CATALOGUE, CATALOGUE_RUNS),
                 "scale": (SCALE, SCALE_TABLE, SCALE_PLOT, SCALE_RUNS)}     # reports/overlays/<report>.yaml makes these
STAGE_OUTS = (MAIN, TABLE, RUNS, CURVES, SWEEP, CURVES_PLOT, SWEEP_PLOT, METRICS)   # dvc.yaml's, in its order
# OVERLAY_FILES are not among them: the stage writes them only while their overlay is on (dvc.yaml's comment)

OVERLAYS = "overlays"         # reports/overlays/<report>.yaml: what makes each off-by-default report
CSV_FLOAT = "%.6g"               # how every CSV of the report writes a float
