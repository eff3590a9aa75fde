"""ITC on MinAtar on one GPU (issue #28): a larger world model and agent budget than the CPU benchmark, < 8 minutes.

The pipeline of ``benchmarks/itc_minatar.py`` (its pieces live in :mod:`lightning_icml26.tasks.itc_minatar`) for
Breakout and Freeway, with a world model of width 128 and 4 layers trained on twice the play (30 000 steps per
game) with batches of 128 on the GPU, and agents with 100 imagination updates of 64 trajectories x 10 steps
(the CPU benchmark: width 64, 2 layers, 15 000 steps, 40 updates of 32 trajectories), three seeds per decoder
(ITC with MinAtar's official alpha 0.2, tau 0.05; sampling; argmax), each played for 10 real episodes. Only the
world model runs on the GPU; the decoders (ITC's exact assignment), the agents and the games run on the CPU.

Order: both games' data, world models and rollouts first, then the agents seed by seed (each seed trains every
decoder), so that a run cut by ``--max-minutes`` (default 7.5, wall clock) still holds comparable figures. Each
(game, seed) gets an equal share of the time left: its ITC agent trains first, capped at 60 % of the share, and
the sampling and argmax agents then run the same number of updates (capped by the rest of the share). The
updates each agent ran are stored (``agents.<game>.updates``); ``budgets_equal`` says whether every agent of a
game ran the full ``--ac-updates`` and ``budgets_equal_within_seed`` whether the decoders of each seed matched.
The JSON is rewritten after every stage (``complete`` false until the end), with ``figures.targets`` (the
issue's targets, the CPU benchmark's keys, computed from what has finished).

    python -m benchmarks.gpu.itc_minatar_cuda                                   # one GPU, < 8 min
    python -m benchmarks.gpu.itc_minatar_cuda --device cpu --games breakout --train-steps 400 --val-steps 100 \\
        --max-episode-steps 100 --d-model 16 --layers 1 --heads 2 --wm-steps 5 --horizon 2 --rollout-starts 4 \\
        --ac-updates 1 --ac-batch 2 --imagine-horizon 2 --seeds 2 --eval-episodes 1 --eval-steps 20 --json /tmp/x.json
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from benchmarks._common import markdown_table, print_targets, write_json
from benchmarks.itc_minatar import summarise
from lightning_icml26.algorithms import ImaginationConfig
from lightning_icml26.tasks.itc_minatar import (
    DECODER_NAMES,
    fit_world_model,
    next_frame_fn,
    official_itc,
    prepare_minatar,
    random_return,
    rollout_figures,
    train_agent,
)

ROOT = Path(__file__).resolve().parents[2]
ITC_SHARE = 0.6  # of a part's time, the cap on its ITC agent (ITC's exact assignment makes it the slowest decoder)
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "itc_minatar_cuda.json"
POSITIVE = (
    "train_steps", "val_steps", "max_episode_steps", "floor_samples", "context", "d_model", "layers", "heads",
    "batch_size", "wm_steps", "val_every", "horizon", "rollout_starts", "imagine_horizon", "ac_updates", "ac_batch",
    "seeds", "eval_episodes", "eval_steps",
)  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring); ``SystemExit`` with a one-line reason on bad values."""
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH")
    p.add_argument("--device", default="cuda", help="device of the world model (cuda, cuda:N, or cpu)")
    p.add_argument("--games", nargs="+", default=["breakout", "freeway"], choices=["breakout", "freeway"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train-steps", type=int, default=30000)
    p.add_argument("--val-steps", type=int, default=3000)
    p.add_argument("--max-episode-steps", type=int, default=500)
    p.add_argument("--floor-samples", type=int, default=2)
    p.add_argument("--context", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--wm-steps", type=int, default=6000)
    p.add_argument("--val-every", type=int, default=250)
    p.add_argument("--wm-minutes", type=float, default=1.0, help="wall-clock cap on each world model's training")
    p.add_argument("--horizon", type=int, default=12)
    p.add_argument("--rollout-starts", type=int, default=256)
    p.add_argument("--imagine-horizon", type=int, default=10)
    p.add_argument("--ac-updates", type=int, default=100)
    p.add_argument("--ac-batch", type=int, default=64)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--eval-episodes", type=int, default=10)
    p.add_argument("--eval-steps", type=int, default=300)
    p.add_argument("--zero-neighbor", action="store_true", help="ITC's official use_zero_neighbor_distance option")
    p.add_argument("--max-minutes", type=float, default=7.5, help="wall-clock cap on the whole run")
    args = p.parse_args(argv)
    for name in POSITIVE:
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.d_model % args.heads:
        p.error(f"--d-model ({args.d_model}) must be divisible by --heads ({args.heads})")
    for name in ("lr", "wm_minutes", "max_minutes"):
        if not getattr(args, name) > 0:
            p.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        p.error(
            f"--device {args.device} needs a CUDA GPU and torch.cuda.is_available() is False here; this script is "
            "prepared for one GPU (use --device cpu only for a smoke run at tiny sizes)"
        )
    if not args.device.startswith(("cuda", "cpu")):
        p.error(f"--device must be cuda, cuda:N or cpu, got {args.device!r}")
    return args


def time_share(deadline: float, now: float, parts_left: int, reserve_s: float) -> float:
    """Seconds of training for the next part so that ``parts_left`` equal parts fit before ``deadline``.

    ``reserve_s`` is kept per part for its real-game evaluations. Never below one second (a part always starts).

    Example:
        >>> time_share(deadline=100.0, now=40.0, parts_left=5, reserve_s=2.0)
        10.0
    """
    if parts_left < 1:
        raise ValueError(f"parts_left must be >= 1, got {parts_left}")
    return max(1.0, (deadline - now) / parts_left - reserve_s)


def _targets(record: dict[str, Any], horizon: int) -> dict[str, Any]:
    """The CPU benchmark's targets from what has finished: a return not yet measured is ``nan`` (never met)."""
    view = {}
    for game, res in record["results"].items():
        agents = {key: (value or [math.nan]) if key != "updates" else value for key, value in res["agents"].items()}
        view[game] = {**res, "agents": agents}
    _, targets = summarise(view, horizon)
    return targets


def _write(record: dict[str, Any], args: argparse.Namespace) -> None:
    record["targets"] = _targets(record, args.horizon)
    record["wall_s"] = time.perf_counter() - record["_t0"]
    write_json(args.json, "itc_minatar_cuda", {k: v for k, v in record.items() if not k.startswith("_")}, args)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; return the JSON record (also written to ``--json`` after every stage)."""
    args = parse_args(argv)
    if args.device.startswith("cuda"):
        torch.set_float32_matmul_precision("high")
    t0 = time.perf_counter()
    deadline = t0 + 60 * args.max_minutes
    accelerator = "gpu" if args.device.startswith("cuda") else "cpu"
    gpu = torch.cuda.get_device_name(args.device) if accelerator == "gpu" else None
    record: dict[str, Any] = {"_t0": t0, "complete": False, "device": args.device, "gpu": gpu, "results": {}}
    itc = official_itc(args.zero_neighbor)
    prepared: dict[str, tuple[Any, Any]] = {}
    for game in args.games:
        data = prepare_minatar(game, train_steps=args.train_steps, val_steps=args.val_steps, context=args.context,
                               seed=args.seed, max_episode_steps=args.max_episode_steps,
                               floor_samples=args.floor_samples)  # fmt: skip
        print(f"{game}: {data.book.size} tokens, noise floor {data.floor:.4f} nats/cell", flush=True)
        model, wm = fit_world_model(data, d_model=args.d_model, num_layers=args.layers, num_heads=args.heads,
                                    lr=args.lr, batch_size=args.batch_size, max_steps=args.wm_steps,
                                    val_every=args.val_every, seed=args.seed, accelerator=accelerator,
                                    max_minutes=args.wm_minutes)  # fmt: skip
        logits_fn = next_frame_fn(model, args.device)
        rollouts = rollout_figures(logits_fn, data, itc, horizon=args.horizon, starts=args.rollout_starts,
                                   seed=args.seed)  # fmt: skip
        errors = ", ".join(f"{n} {rollouts[n]['persistence_error_rate'][-1]:.3f}" for n in DECODER_NAMES)
        print(f"{game}: world model val loss {wm['val_loss']:.4f} ({wm['val_loss'] / data.floor:.2f} x the floor, "
              f"{wm['steps']:.0f} steps); persistence error at h{args.horizon}: {errors}", flush=True)  # fmt: skip
        agents: dict[str, Any] = {name: [] for name in DECODER_NAMES}
        agents.update(random=[], updates={name: [] for name in DECODER_NAMES})
        params = sum(p.numel() for p in model.parameters())
        record["results"][game] = {"world_model": wm, "rollouts": rollouts, "agents": agents,
                                   "tokens": data.book.size, "agents_complete": False, "params": params}  # fmt: skip
        prepared[game] = (data, logits_fn)
        _write(record, args)
    config = ImaginationConfig(horizon=args.imagine_horizon, updates=args.ac_updates, batch_size=args.ac_batch)
    parts_left = len(args.games) * args.seeds  # a part: one seed of one game, every decoder
    reserve = 0.08 * args.eval_episodes * args.eval_steps / 100  # evaluation seconds per part, a rough allowance
    record["stopped_at_deadline"] = False
    for seed in range(args.seeds):
        for game, (data, logits_fn) in prepared.items():
            if time.perf_counter() >= deadline:
                record["stopped_at_deadline"] = True
                break
            agents = record["results"][game]["agents"]
            part_start = time.perf_counter()
            share = time_share(deadline, part_start, parts_left, reserve)
            part_config = config
            for name in DECODER_NAMES:  # ITC (the slowest decoder) first: the others then run as many updates
                limit = ITC_SHARE * share if name == "itc" else max(1.0, part_start + share - time.perf_counter())
                score, updates = train_agent(logits_fn, data, itc, part_config, name, seed,
                                             eval_episodes=args.eval_episodes, eval_steps=args.eval_steps,
                                             max_seconds=limit)  # fmt: skip
                agents[name].append(score)
                agents["updates"][name].append(updates)
                if name == "itc":
                    part_config = replace(config, updates=max(1, updates))
            parts_left -= 1
            agents["random"].append(random_return(data, seed, eval_episodes=args.eval_episodes,
                                                  eval_steps=args.eval_steps))  # fmt: skip
            print(f"{game} seed {seed}: real returns " + ", ".join(f"{n} {agents[n][-1]:.2f}" for n in DECODER_NAMES)
                  + f" (updates {[agents['updates'][n][-1] for n in DECODER_NAMES]})", flush=True)  # fmt: skip
            result = record["results"][game]
            result["agents_complete"] = seed == args.seeds - 1
            counts = {u for n in DECODER_NAMES for u in agents["updates"][n]}
            result["budgets_equal"] = counts == {args.ac_updates}
            result["budgets_equal_within_seed"] = all(
                len({agents["updates"][n][s] for n in DECODER_NAMES}) == 1 for s in range(len(agents["itc"]))
            )
            _write(record, args)
    record["complete"] = not record["stopped_at_deadline"]
    _write(record, args)
    rows = [{"game": game, "decoder": name, "real_return": statistics.fmean(res["agents"][name] or [math.nan]),
             "updates": statistics.fmean(res["agents"]["updates"][name] or [0]),
             f"persist_err_h{args.horizon}": res["rollouts"][name]["persistence_error_rate"][-1]}
            for game, res in record["results"].items() for name in DECODER_NAMES]  # fmt: skip
    print(markdown_table(rows))
    print_targets(record["targets"])
    return {k: v for k, v in record.items() if not k.startswith("_")}


if __name__ == "__main__":
    main()
