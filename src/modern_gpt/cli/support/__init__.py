"""What the `modern-gpt` commands share, and no command of its own (cli/__init__.py states the rule): the parser
class and its hint for a misplaced option (parsing.py), the quick command's profiles (profiles.py), a run folder's
check (run_folder.py), `dvc` as a subprocess and the mend of an empty dvc.lock (dvc_calls.py), the runs shared
through the DVC remote and the unit of distributed work (shared_runs.py), and the runs as Ray tasks (ray_runs.py,
imported only by `repro --ray`: Ray is an extra)."""
