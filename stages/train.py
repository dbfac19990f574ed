"""Stage train@<row>-<seed>: train one row's config on one seed.

Writes model.pt (the weights) and train.json (the loss curve, parameter counts, seconds,
tokens per second, whether it diverged) into the run's folder.
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
from modern_gpt.files import read_json, stage_main, write_json
from modern_gpt.train import train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("config", help="configs/<row>.json")
    ap.add_argument("seed", type=int)
    ap.add_argument("out", help="the run's folder, data/runs/<row>/<seed>")
    ap.add_argument("--data", default="data/tokenized")
    args = ap.parse_args()
    spec = read_json(args.config)
    model_cfg = ModelConfig.from_dict(spec["model"])
    train_cfg = TrainConfig.from_dict(spec["train"])
    data = Path(args.data)
    model, result = train(model_cfg, train_cfg, load_tokens(data / "train.bin"), load_tokens(data / "val.bin"),
                          args.seed, label=f"{spec['row']} seed {args.seed}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out / "model.pt")
    write_json(out / "train.json", {"row": spec["row"], "torch": torch.__version__, **result})


if __name__ == "__main__":
    stage_main(main)
