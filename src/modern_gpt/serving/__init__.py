"""What a model costs to serve: the KV-cache arithmetic (and, later, generation measurements)."""
