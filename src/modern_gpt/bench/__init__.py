"""The benches (a tool: run by hand through `modern-gpt bench`, imported by no stage).

training.py: training tokens/s of a plain reference and each ladder row, side by side in interleaved windows,
with the matmul peak of the same run. decode.py: generation tokens/s with the KV cache and by full recompute,
timed by serving's own timings.
"""
