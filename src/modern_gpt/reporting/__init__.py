"""From run records to the report: statistics and verdicts, the Markdown pages, their plots and provenance.

Nothing here trains, measures or imports torch: every figure comes from the run records.
"""
