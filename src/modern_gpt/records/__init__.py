"""The files one stage writes and another reads, each typed once, written by its type's `to_dict` and read by its
`from_dict` (typed.py's strict `build`: a file of another version is a one-line DataError): run.py the run record
(data/runs/<row>/<seed>/run.json); inputs.py what every run reads (configs/<row>.json, data/tokenized/meta.json);
stages.py the plan (configs/plan.json), the serve record (data/serve/<row>.json) and the floor
(data/generated/floor.json). Above config/ (a record holds configs), below every stage that writes or reads one."""
