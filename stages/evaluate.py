"""Stage evaluate@<row>-<seed>: score a trained run on the fixed validation windows.

Writes the run's metrics (data/results/<row>/<seed>.json): val and train loss (nats per token),
val bits per character, parameter counts, seconds and tokens per second of training, whether it
diverged, and its loss curve, so the report reads one small file per run.
"""

import sys
from pathlib import Path

# Run the code dvc.yaml hashes (src/ of this checkout), and keep stages/ off the path, where
# tokenize.py would shadow the standard library module of that name.
sys.path[0] = str(Path(__file__).resolve().parents[1] / "src")

import argparse

import torch

from modern_gpt.config import ModelConfig, TrainConfig
from modern_gpt.data import load_tokens
from modern_gpt.evaluate import score
from modern_gpt.files import read_json, stage_main, write_json
from modern_gpt.model import GPT


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("config", help="configs/<row>.json")
    ap.add_argument("run", help="the run's folder, data/runs/<row>/<seed>")
    ap.add_argument("out", help="the metrics file, data/results/<row>/<seed>.json")
    ap.add_argument("--data", default="data/tokenized")
    args = ap.parse_args()
    spec = read_json(args.config)
    run = Path(args.run)
    trained = read_json(run / "train.json")
    model = GPT(ModelConfig.from_dict(spec["model"]))
    model.load_state_dict(torch.load(run / "model.pt", map_location="cpu", weights_only=True))
    data = Path(args.data)
    meta = read_json(data / "meta.json")
    metrics = score(model, TrainConfig.from_dict(spec["train"]), load_tokens(data / "train.bin"),
                    load_tokens(data / "val.bin"), val_chars=meta["val"]["chars"], diverged=trained["diverged"])
    keep = ("seed", "steps", "params", "params_non_embedding", "secs", "tokens_per_sec", "device", "torch", "curve")
    write_json(args.out, {"row": spec["row"], **{k: trained[k] for k in keep}, **metrics})


if __name__ == "__main__":
    stage_main(main)
