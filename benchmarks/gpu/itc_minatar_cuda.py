"""ITC on MinAtar on one GPU: the ``itc_minatar`` recipe at a larger size, its world model on ``--device``.

The CPU benchmark (``benchmarks/itc_minatar.py``, same targets) with ``GPU`` overrides (wider, deeper world model
on twice the play, capped at ``--wm-minutes``; 100 imagination updates of 64 trajectories, each seed's ITC agent
capped at ``--agent-seconds``, the other decoders then run as many updates). ``--set key=value``: any task key.

    python -m benchmarks.gpu.itc_minatar_cuda                                   # one GPU
    python -m benchmarks.gpu.itc_minatar_cuda --device cpu --set train_steps=300 wm_steps=4  # plumbing (+ tiny sizes)
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import torch

from benchmarks._common import markdown_table, print_targets, write_json
from benchmarks.itc_minatar import run_game, summarise

GPU = {"train_steps": 30000, "val_steps": 3000, "d_model": 128, "num_layers": 4, "lr": 0.001, "batch_size": 128,
       "wm_steps": 6000, "rollout_starts": 256, "ac_updates": 100, "ac_batch": 64, "eval_episodes": 10}  # fmt: skip
JSON = Path(__file__).resolve().parents[1] / "results" / "itc_minatar_cuda.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--json", type=Path, default=JSON, metavar="PATH")
    p.add_argument("--device", default="cuda", help="device of the world model: cuda, cuda:N or cpu")
    p.add_argument("--games", nargs="+", default=["breakout", "freeway"], choices=["breakout", "freeway"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--wm-minutes", type=float, default=1.0, help="wall-clock cap on each world model's training")
    p.add_argument("--agent-seconds", type=float, default=30.0, help="wall-clock cap on each seed's ITC agent")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="more itc_minatar task keys")
    args = p.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        p.error(f"--device {args.device} needs a CUDA GPU and torch.cuda.is_available() is False here")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    sizes = {**GPU, "device": args.device, "wm_minutes": args.wm_minutes, "agent_seconds": args.agent_seconds}
    sizes.update(dict(item.split("=", 1) for item in args.set))
    with tempfile.TemporaryDirectory() as tmp:
        results = {game: run_game(game, sizes, args.seed, Path(tmp)) for game in args.games}
    rows, targets = summarise(results, int(sizes.get("horizon", 12)))
    print(markdown_table(rows))
    print_targets(targets)
    gpu = torch.cuda.get_device_name(args.device) if args.device != "cpu" else None
    figures = {"device": args.device, "gpu": gpu, "results": results, "rows": rows, "targets": targets}
    write_json(args.json, "itc_minatar_cuda", figures, args)
    return figures


if __name__ == "__main__":
    main()
