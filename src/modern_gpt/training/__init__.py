"""Training: batches, the loop, losses on fixed windows, and one run from config to run record."""
