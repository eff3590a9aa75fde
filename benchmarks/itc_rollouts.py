"""ITC vs plain sampling vs argmax: long imagined rollouts of one trained token world model.

One :class:`~lightning_icml26.modules.itc.TokenWorldModel` is trained (next-frame cross-entropy, AdamW) on
episodes of the generated grid world (persistent random-walking objects, ``lightning_icml26.data.gridworld``)
and, with ``--envs minigrid``, on MiniGrid Dynamic-Obstacles symbolic frames. The trained weights are cached under
``--cache`` (default ``outputs/itc_rollouts/``, git-ignored) so a rerun only rolls out. Then the same model is
rolled out ``--horizon`` steps from real context frames of held-out episodes under the true actions, once per
decoder:

* ``sample``: plain sampling at temperature 1 from the model's distribution (Gumbel-max), the baseline;
* ``argmax``: the most probable token per cell;
* ``itc[<solver>]``: ITC copy-or-generate decoding (``ITCDecoder``) at the paper's Craftax settings
  (alpha 0.6, tau 0.3) with each ``--solvers`` entry, ``p_j`` = softmax of the Gumbel-perturbed logits as in the
  official code; ``--plain-probs`` adds ``itc[hungarian,plain-p]`` (``p_j`` = softmax of the plain logits, the
  paper text's reading) and ``--extra-tau`` adds copy-bonus sensitivity rows (not the paper's values).

``sample`` and every ITC variant share the same Gumbel noise at every step (paired comparison). Each rollout is
scored against the true frames with :func:`~lightning_icml26.metrics.functional.rollout_consistency`:
duplication, disappearance and transmutation rates (per true object, position-free counts) and token accuracy,
by horizon, plus ``object motion`` (object cells vacated per step, per object; the ``truth`` row gives the
environment's own rate), which exposes decoders that keep objects only by freezing the world.

The target (issue #11): ITC at most half the persistence errors (duplication + disappearance + transmutation)
of plain sampling at horizon 50, without lower token accuracy at horizon 1.

    python -m benchmarks.itc_rollouts --quick
    nice -n 10 python -m benchmarks.itc_rollouts --plain-probs --extra-tau 0.6 1.0 --test-episodes 96
    nice -n 10 python -m benchmarks.itc_rollouts --json outputs/itc_rollouts.json
    nice -n 10 python -m benchmarks.itc_rollouts --envs gridworld minigrid --json outputs/itc_rollouts.json
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks._common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json
from lightning_icml26.data.gridworld import make_gridworld_rollouts
from lightning_icml26.metrics.functional import object_motion, rollout_consistency
from lightning_icml26.modules.itc import TokenWorldModel, rollout
from lightning_icml26.ops import ITCDecoder
from lightning_icml26.optional import is_available

REPORT_HORIZONS = (1, 2, 5, 10, 20, 30, 40, 50, 75, 100)
FIGURES = ("duplication_rate", "disappearance_rate", "transmutation_rate", "persistence_error_rate", "token_accuracy")


def _episodes(env: dict[str, Any], num: int, length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    if env["kind"] == "gridworld":
        return make_gridworld_rollouts(
            num, length, env["height"], env["width"], env["num_objects"], env["num_object_types"], env["move_prob"],
            seed,
        )  # fmt: skip
    from lightning_icml26.data.minigrid import make_minigrid_rollouts

    return make_minigrid_rollouts(num, length, env["env_id"], seed)


def _windows(frames: torch.Tensor, actions: torch.Tensor, window: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All windows of ``window`` frames (and ``window - 1`` actions) of every episode, stacked."""
    f = frames.unfold(1, window, 1).permute(0, 1, 4, 2, 3).reshape(-1, window, *frames.shape[2:])
    a = actions.unfold(1, window - 1, 1).reshape(-1, window - 1)
    return f, a


def train_world_model(env: dict[str, Any], args: Any) -> tuple[TokenWorldModel, dict[str, Any]]:
    """Train (or load from the cache) the world model of ``env``; return it with its training record."""
    trained_on = {k: v for k, v in env.items() if k not in ("alpha", "trash_cost")}  # decoding settings: not keyed
    spec = {
        "env": trained_on, "train_episodes": args.train_episodes, "episode_length": args.episode_length,
        "context": args.context, "d_model": args.d_model, "layers": args.layers, "heads": args.heads,
        "steps": args.steps, "batch_size": args.batch_size, "lr": args.lr, "seed": args.seed,
    }  # fmt: skip
    key = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
    torch.manual_seed(args.seed)  # the initial weights depend on the seed only
    model = TokenWorldModel(
        env["vocab_size"], env["height"], env["width"], env["num_actions"], context=args.context,
        d_model=args.d_model, num_layers=args.layers, num_heads=args.heads,
    )  # fmt: skip
    path = args.cache / f"{env['name']}-{key}.pt"
    if path.is_file() and not args.retrain:
        saved = torch.load(path, weights_only=True)
        model.load_state_dict(saved["state_dict"])
        record = {key_: float(value) for key_, value in saved["record"].items()}
        record["cached"] = 1.0
        print(f"  loaded {path}", flush=True)
        return model.eval(), record
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    frames, actions = _episodes(env, args.train_episodes, args.episode_length, args.seed)
    data_s = time.perf_counter() - start
    train_f, train_a = _windows(frames, actions, args.context + 1)
    val_f, val_a = _windows(*_episodes(env, max(args.train_episodes // 8, 4), args.episode_length, args.seed + 1),
                            args.context + 1)  # fmt: skip
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps, pct_start=0.1)
    gen = torch.Generator().manual_seed(args.seed)
    model.train()
    start = time.perf_counter()
    for step in range(args.steps):
        idx = torch.randint(0, train_f.shape[0], (args.batch_size,), generator=gen)
        loss, acc = model._next_frame_loss(train_f[idx], train_a[idx])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if (step + 1) % max(args.steps // 5, 1) == 0:
            print(
                f"  {env['name']} step {step + 1}/{args.steps} loss {loss.item():.4f} acc {acc.item():.4f}", flush=True
            )
    train_s = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        losses, accs = [], []
        for i in range(0, val_f.shape[0], 256):
            loss, acc = model._next_frame_loss(val_f[i : i + 256], val_a[i : i + 256])
            losses.append(float(loss))
            accs.append(float(acc))
    record = {
        "val_loss": sum(losses) / len(losses), "val_token_acc": sum(accs) / len(accs), "train_s": train_s,
        "data_s": data_s, "train_windows": float(train_f.shape[0]), "cached": 0.0,
    }  # fmt: skip
    args.cache.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": model.state_dict(), "record": record, "spec": json.dumps(spec)}, path)
    print(f"  {env['name']}: val loss {record['val_loss']:.4f}, one-step token acc {record['val_token_acc']:.4f}, "
          f"{train_s:.0f} s; saved {path}", flush=True)  # fmt: skip
    return model, record


def _itc(alpha: float, tau: float, solver: str, perturbed: bool, args: Any) -> ITCDecoder:
    return ITCDecoder(alpha=alpha, trash_cost=tau, solver=solver, reg=args.reg, num_iters=args.sinkhorn_iters,
                      perturbed_probs=perturbed)  # fmt: skip


def evaluate(model: TokenWorldModel, env: dict[str, Any], args: Any) -> dict[str, dict[str, list[float]]]:
    """Roll the model out with every decoder from the same held-out starts; figures by horizon per decoder."""
    frames, actions = _episodes(env, args.test_episodes, args.context + args.horizon, args.seed + 2)
    start_frames, truth = frames[:, : args.context], frames[:, args.context :]
    decoders: dict[str, tuple[str, ITCDecoder]] = {
        "sample": ("sample", ITCDecoder()),
        "argmax": ("argmax", ITCDecoder()),
    }
    for solver in args.solvers:  # the paper's configuration, p_j = softmax of the perturbed logits (official code)
        decoders[f"itc[{solver}]"] = ("itc", _itc(env["alpha"], env["trash_cost"], solver, True, args))
    if args.plain_probs:  # the paper text's reading, p_j = softmax of the unperturbed logits
        decoders["itc[hungarian,plain-p]"] = ("itc", _itc(env["alpha"], env["trash_cost"], "hungarian", False, args))
    for tau in args.extra_tau:  # sensitivity to the copy bonus (not the paper's value)
        decoders[f"itc[hungarian,tau={tau:g}]"] = ("itc", _itc(env["alpha"], tau, "hungarian", True, args))
    results: dict[str, dict[str, list[float]]] = {}
    for name, (decoder, config) in decoders.items():
        start = time.perf_counter()
        imagined = []
        for i in range(0, args.test_episodes, args.eval_batch):
            generator = torch.Generator().manual_seed(args.seed * 1000 + i)  # same noise for sample and ITC
            imagined.append(
                rollout(model, start_frames[i : i + args.eval_batch], actions[i : i + args.eval_batch], args.horizon,
                        decoder, itc=config, generator=generator)
            )  # fmt: skip
        preds = torch.cat(imagined)
        figures = rollout_consistency(preds, truth, env["vocab_size"], env["object_tokens"])
        results[name] = {key: [float(v) for v in value] for key, value in figures.items()}
        results[name]["object_motion"] = object_motion(
            torch.cat([start_frames[:, -1:], preds], 1), env["object_tokens"]
        ).tolist()
        results[name]["wall_s"] = [time.perf_counter() - start]
        h = args.horizon
        out = results[name]
        print(f"  {env['name']} {name:16s} persistence err h1 {out['persistence_error_rate'][0]:.4f} "
              f"h{h} {out['persistence_error_rate'][h - 1]:.4f}  token acc h1 {out['token_accuracy'][0]:.4f} "
              f"({out['wall_s'][0]:.0f} s)", flush=True)  # fmt: skip
    results["truth"] = {key: [0.0] * args.horizon for key in FIGURES}
    results["truth"]["token_accuracy"] = [1.0] * args.horizon
    results["truth"]["object_motion"] = object_motion(
        torch.cat([start_frames[:, -1:], truth], 1), env["object_tokens"]
    ).tolist()
    return results


def horizon_rows(name: str, results: dict[str, dict[str, list[float]]], horizon: int) -> list[dict[str, Any]]:
    """Rows of the by-horizon table: every decoder at every report horizon, with ratios to ``sample``."""
    rows = []
    for h in [h for h in REPORT_HORIZONS if h <= horizon] + ([horizon] if horizon not in REPORT_HORIZONS else []):
        for decoder, figures in results.items():
            row: dict[str, Any] = {"env": name, "h": h, "decoder": decoder}
            for key in FIGURES:
                row[key.replace("_rate", "")] = figures[key][h - 1]
            row["object motion"] = figures["object_motion"][h - 1]
            row["persist / sample"] = ratio(figures["persistence_error_rate"][h - 1],
                                            results["sample"]["persistence_error_rate"][h - 1])  # fmt: skip
            rows.append(row)
    return rows


def verdict(results: dict[str, dict[str, list[float]]], horizon: int) -> list[dict[str, Any]]:
    """The target per ITC variant: persistence errors at the last horizon <= 1/2 of sample's, token acc h1 >=."""
    base = results["sample"]
    rows = []
    for decoder, figures in results.items():
        if not decoder.startswith("itc"):
            continue
        persist = figures["persistence_error_rate"][horizon - 1] / max(base["persistence_error_rate"][horizon - 1],
                                                                         1e-12)  # fmt: skip
        acc_gap = figures["token_accuracy"][0] - base["token_accuracy"][0]
        rows.append({
            "decoder": decoder, f"persist err ratio h{horizon} (itc/sample)": persist,
            "token acc h1 itc - sample": acc_gap, "halves errors": persist <= 0.5,
            "token acc h1 not lower": acc_gap >= 0.0, "target met": persist <= 0.5 and acc_gap >= 0.0,
        })  # fmt: skip
    return rows


def build_targets(
    results_by_env: dict[str, dict[str, dict[str, list[float]]]], horizon: int, decoder: str = "itc[hungarian]"
) -> dict[str, Any]:
    """The targets for ITC with the paper's settings (``decoder``: the exact solver by default), worst over envs.

    ``persistence_ratio_max``: ITC / sampling persistence errors at the last horizon (<= 0.5);
    ``token_acc_h1_gap_min``: ITC minus sampling token accuracy at horizon 1 (>= 0).
    """
    persist, acc_gap = [], []
    for results in results_by_env.values():
        base, ours = results["sample"], results[decoder]
        persist.append(ratio(ours["persistence_error_rate"][horizon - 1], base["persistence_error_rate"][horizon - 1]))
        acc_gap.append(ours["token_accuracy"][0] - base["token_accuracy"][0])
    return {
        "persistence_ratio_max": target(worst(persist, "max"), "<=", 0.5),
        "token_acc_h1_gap_min": target(worst(acc_gap, "min"), ">=", 0.0),
    }


def environments(args: Any) -> list[dict[str, Any]]:
    """The environments named by ``--envs`` with their vocabulary, object tokens and ITC settings."""
    envs = []
    if "gridworld" in args.envs:
        envs.append({
            "name": "gridworld", "kind": "gridworld", "height": args.size, "width": args.size,
            "num_objects": args.num_objects, "num_object_types": 3, "move_prob": args.move_prob, "num_actions": 5,
            "vocab_size": 6, "object_tokens": [2, 3, 4, 5], "alpha": args.alpha, "trash_cost": args.trash_cost,
        })  # fmt: skip
    if "minigrid" in args.envs:
        if not is_available("minigrid"):
            raise SystemExit("--envs minigrid needs the 'rl' extra (gymnasium, minigrid)")
        from lightning_icml26.data.minigrid import MINIGRID_VOCAB, minigrid_token

        envs.append({
            "name": "minigrid", "kind": "minigrid", "env_id": "MiniGrid-Dynamic-Obstacles-8x8-v0", "height": 8,
            "width": 8, "num_actions": 3, "vocab_size": MINIGRID_VOCAB, "object_tokens": [minigrid_token(6, 2, 0)],
            "alpha": args.alpha, "trash_cost": args.trash_cost,
        })  # fmt: skip
    return envs


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument(
        "--envs",
        nargs="+",
        default=["gridworld"],
        choices=["gridworld", "minigrid"],
        help="minigrid: MiniGrid-Dynamic-Obstacles-8x8 symbolic frames (needs the 'rl' extra)",
    )
    parser.add_argument("--horizon", type=int, default=50)
    parser.add_argument("--test-episodes", type=int, default=128)
    parser.add_argument("--eval-batch", type=int, default=64)
    parser.add_argument("--train-episodes", type=int, default=1024)
    parser.add_argument("--episode-length", type=int, default=24)
    parser.add_argument("--size", type=int, default=8, help="grid world side, border included")
    parser.add_argument("--num-objects", type=int, default=4)
    parser.add_argument("--move-prob", type=float, default=0.5)
    parser.add_argument("--context", type=int, default=1)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--alpha", type=float, default=0.6, help="ITC distance coefficient (paper, Craftax: 0.6)")
    parser.add_argument("--trash-cost", type=float, default=0.3, help="ITC trash cost tau (paper, Craftax: 0.3)")
    parser.add_argument("--solvers", nargs="+", default=["hungarian", "sinkhorn"])
    parser.add_argument(
        "--plain-probs",
        action="store_true",
        help="also ITC with p_j = softmax of the unperturbed logits (the paper text's reading)",
    )
    parser.add_argument(
        "--extra-tau",
        type=float,
        nargs="*",
        default=[],
        help="also ITC (hungarian) with these trash costs: a sensitivity check, not the paper's value",
    )
    parser.add_argument("--reg", type=float, default=0.05, help="Sinkhorn regularisation")
    parser.add_argument("--sinkhorn-iters", type=int, default=100)
    parser.add_argument("--cache", type=Path, default=Path("outputs/itc_rollouts"))
    parser.add_argument("--retrain", action="store_true", help="ignore the cached weights")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.quick:
        args.steps, args.train_episodes, args.test_episodes, args.horizon = 150, 128, 16, 20
        args.d_model, args.eval_batch, args.solvers = 32, 16, ["hungarian"]
    for name in ("horizon", "test_episodes", "eval_batch", "train_episodes", "steps", "batch_size"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    start = time.perf_counter()
    figures: dict[str, Any] = {"training": {}, "by_horizon": {}, "verdict": {}}
    all_rows, all_verdicts = [], []
    for env in environments(args):
        print(f"\n# {env['name']}", flush=True)
        model, record = train_world_model(env, args)
        figures["training"][env["name"]] = record
        results = evaluate(model, env, args)
        figures["by_horizon"][env["name"]] = results
        all_rows += horizon_rows(env["name"], results, args.horizon)
        rows = verdict(results, args.horizon)
        figures["verdict"][env["name"]] = rows
        all_verdicts += [{"env": env["name"], **row} for row in rows]
    print(f"\n## Imagined rollouts, {args.test_episodes} held-out episodes, horizon {args.horizon} "
          f"(rates per true object; token accuracy per cell)\n")  # fmt: skip
    print(markdown_table(all_rows))
    print("\n## World models (one-step teacher-forced validation figures)\n")
    print(markdown_table([{"env": k, **v} for k, v in figures["training"].items()]))
    print(f"\n## Target: ITC persistence errors at h{args.horizon} <= 1/2 of plain sampling's, token accuracy at h1 "
          f"not lower\n")  # fmt: skip
    print(markdown_table(all_verdicts))
    print(f"\ntotal wall time {time.perf_counter() - start:.0f} s")
    figures["total_s"] = time.perf_counter() - start
    figures["nan_safe"] = not any(math.isnan(r["persistence_error"]) for r in all_rows)
    solver = "hungarian" if "hungarian" in args.solvers else args.solvers[0]
    figures["targets"] = build_targets(figures["by_horizon"], args.horizon, f"itc[{solver}]")
    print_targets(figures["targets"])
    write_json(args.json, "itc_rollouts", figures, args)


if __name__ == "__main__":
    main()
