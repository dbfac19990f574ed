"""What the `modern-gpt` commands share, and no command of its own (cli/__init__.py states the rule): the parser
class and its hint (parsing.py), the quick command's profiles (profiles.py), a run folder's check (runs.py), DVC
and the unit of distributed work (work.py), and the runs as Ray tasks (ray_runs.py, imported only by `repro --ray`:
Ray is an extra)."""
