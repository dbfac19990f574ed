"""Settling an open verdict, in one place (params.yaml settle:, `modern-gpt settle`; docs/statistics.md, "Settling an
open verdict"): the plan stage, the report stage and `modern-gpt settle` each call it.

- order.py: the order the looks take seeds in (a ladder row's, the learning-rate grid's), and settle.runs checked
  against it (the plan: each run's slug a planned row's, its seeds the order's next ones up to a look);
- looks.py: a ladder's looks (Design, made from the plan: design(), sweep_design()), each comparison judged at them
  (judge_looks, look_text), the level every look's interval uses read from the committed table (stats/levels.csv;
  check_levels: the plan refuses a design it lacks);

The statistics beneath (the paired rule, its simulations, the levels) are stats/'s, which imports no settling.
- asked.py: the seeds an open comparison asks for (the report's comparisons: reporting/comparisons.py);
- record.py: where they are recorded, params.yaml's settle.runs.
"""
