"""The files one stage writes and another reads, each typed once, with a strict from_dict: run.py the run record
(data/runs/<row>/<seed>/run.json), stages.py the plan (configs/plan.json) and the serve record
(data/serve/<row>.json). Above config/ (a record holds configs), below every stage that writes or reads one."""
