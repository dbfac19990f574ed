"""Reviewing a change in its pull request: each row paired by seed across two commits (`modern-gpt review`), and
whether the committed reports are what the committed lock and runs give (`modern-gpt review --check`).

A tool beside the pipeline: no stage imports it, and it reads only what git tracks.
"""
