"""From params.yaml to the runs: the ladder of rows, their labels, and the plan the run stages train."""
