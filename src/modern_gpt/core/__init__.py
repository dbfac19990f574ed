"""What every stage shares: errors, strict validation, params.yaml as DVC reads it, files, the run record."""
