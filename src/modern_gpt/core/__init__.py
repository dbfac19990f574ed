"""What every stage shares and that imports nothing of the project: errors (errors.py), files written whole
(files.py), a stage script's one-line errors and code hash (stage.py), core and GPU slots (slots.py)."""
