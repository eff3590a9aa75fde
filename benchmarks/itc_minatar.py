"""ITC on MinAtar: world-model rollouts and an actor-critic trained purely in imagination (issue #28).

Per game (Breakout, Freeway; the ``minatar`` package, sticky actions 0.1):

1. Data: epsilon-greedy play (epsilon 0.5 around a simple game heuristic: track the ball / go up), tokenised as
   5 x 5 grids of 2 x 2 patches. The validation play also records the exact next-frame distribution of every step,
   from which the environment's noise floor (mean per-cell entropy of the next token given the full game state and
   the action) is computed and printed.
2. A :class:`~lightning_icml26.modules.itc.TokenWorldModel` is trained until its validation loss (on the same
   transitions as the floor) is within 10 % of the floor, or the step budget ends.
3. Free-running rollouts from held-out starts under the recorded actions, decoded with ITC (alpha 0.2, tau 0.05,
   MinAtar's official setting; exact assignment), plain sampling (same Gumbel noise) and argmax: persistence
   errors (duplications + disappearances + transmutations per true object), token accuracy and object motion by
   horizon.
4. A small actor-critic trained purely in imagination with each decoder (3 seeds each), evaluated in the real game.

Targets (same keys at ``--quick``): per game, ITC's mean real return >= sampling's; ITC's persistence error below
sampling's at every horizon; ITC's object motion within 20 % of the truth; world-model validation loss <= 1.1 x the
floor.

Run: ``python benchmarks/itc_minatar.py --quick`` (< 3 min) or the full size with ``--json PATH``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import benchmark_parser, markdown_table, print_targets, ratio, target, worst, write_json
from itc_rollouts import object_motion

from lightning_icml26.algorithms import ImaginationConfig, TokenPolicy, train_in_imagination
from lightning_icml26.data.rl.minatar import (
    FrameRules,
    MinAtarEpisodes,
    PatchCodebook,
    collect_minatar,
    noise_floor,
    patch_keys,
)
from lightning_icml26.metrics.functional import rollout_consistency
from lightning_icml26.modules.itc import TokenWorldModel, rollout
from lightning_icml26.ops import ITCDecoder

DECODER_NAMES = ("itc", "sample", "argmax")


def heuristic(game: str) -> Any:
    """The greedy part of the data policy: Breakout tracks the ball, Freeway goes up (action-set indices)."""

    def breakout(grid: np.ndarray) -> int:
        ball = np.argwhere(grid[:, :, 1])
        paddle = np.argwhere(grid[9, :, 0])
        if not len(ball) or not len(paddle):
            return 0
        diff = int(ball[0][1]) - int(paddle[0][0])
        return 0 if diff == 0 else (1 if diff < 0 else 2)  # action set [noop, left, right]

    return breakout if game == "breakout" else (lambda grid: 1)  # Freeway action set [noop, up, down]


def tokens_of(episodes: MinAtarEpisodes, book: PatchCodebook) -> list[torch.Tensor]:
    """Per episode, ``(T + 1, 5, 5)`` token frames."""
    return [torch.as_tensor(book.encode(patch_keys(s))) for s in episodes.states]


def windows(
    tokens: list[torch.Tensor], actions: list[np.ndarray], length: int
) -> tuple[torch.Tensor, torch.Tensor, list[tuple[int, int]]]:
    """Every run of ``length`` frames inside an episode, its ``length - 1`` actions and its (episode, start)."""
    frames, acts, where = [], [], []
    for e, (tok, act) in enumerate(zip(tokens, actions, strict=True)):
        for s in range(len(tok) - length + 1):
            frames.append(tok[s : s + length])
            acts.append(torch.as_tensor(act[s : s + length - 1]))
            where.append((e, s))
    return torch.stack(frames), torch.stack(acts), where


def train_world_model(game: str, data: dict[str, Any], args: Any) -> tuple[TokenWorldModel, dict[str, float]]:
    """Train until the validation loss of the last transition of each window is within 10 % of the floor."""
    torch.manual_seed(args.seed)
    ctx = args.context
    model = TokenWorldModel(data["book"].size, 5, 5, 3, context=ctx, d_model=args.d_model, num_layers=args.layers,
                            num_heads=4)  # fmt: skip
    train_f, train_a, _ = windows(data["train_tokens"], data["train"].actions, ctx + 1)
    val_f, val_a = data["val_windows"]
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(args.seed)
    goal = 1.1 * data["floor"]
    start, val_loss, step = time.perf_counter(), float("nan"), 0

    def validate() -> float:
        model.eval()
        with torch.no_grad():
            total = 0.0
            for i in range(0, len(val_f), 512):
                logits = model(val_f[i : i + 512, :ctx], val_a[i : i + 512])
                target_ = val_f[i : i + 512, ctx].long()
                total += float(
                    torch.nn.functional.cross_entropy(logits[:, -1].reshape(-1, model.vocab_size),
                                                      target_.reshape(-1), reduction="sum")
                )  # fmt: skip
        model.train()
        return total / (len(val_f) * 25)

    model.train()
    while step < args.wm_steps:
        idx = torch.randint(0, len(train_f), (args.batch_size,), generator=gen)
        loss, _ = model._next_frame_loss(train_f[idx], train_a[idx])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % args.val_every == 0 or step == args.wm_steps:
            val_loss = validate()
            print(f"  {game} wm step {step}: train {loss.item():.4f} val {val_loss:.4f} (goal <= {goal:.4f})",
                  flush=True)  # fmt: skip
            if val_loss <= goal:
                break
    model.eval()
    return model, {"val_loss": val_loss, "floor": data["floor"], "steps": float(step),
                   "train_s": time.perf_counter() - start, "train_windows": float(len(train_f))}  # fmt: skip


def rollout_figures(model: TokenWorldModel, data: dict[str, Any], itc: ITCDecoder, args: Any) -> dict[str, Any]:
    """Free-running rollouts with every decoder from the same held-out starts (shared Gumbel noise)."""
    frames, actions, _ = windows(data["val_tokens"], data["val"].actions, args.context + args.horizon)
    frames, actions = frames[: args.rollout_starts], actions[: args.rollout_starts]
    start, truth = frames[:, : args.context], frames[:, args.context :]
    objects = list(range(1, data["book"].size))
    out: dict[str, Any] = {"starts": len(frames)}
    first: dict[str, torch.Tensor] = {}
    for name in DECODER_NAMES:
        preds = rollout(model, start, actions, args.horizon, name, itc=itc,
                        generator=torch.Generator().manual_seed(args.seed + 17))  # fmt: skip
        first[name] = preds[:, 0]
        figures = rollout_consistency(preds, truth, data["book"].size, objects)
        out[name] = {key: [float(v) for v in value] for key, value in figures.items()}
        out[name]["object_motion"] = object_motion(torch.cat([start[:, -1:], preds], 1), objects)
    # share of first imagined cells where ITC keeps the sample (same context, same Gumbel noise)
    out["itc_equals_sample_h1"] = float((first["itc"] == first["sample"]).float().mean())
    print(f"  ITC frame equals the sampled frame on {out['itc_equals_sample_h1']:.4f} of cells at h1", flush=True)
    out["truth"] = {"object_motion": object_motion(torch.cat([start[:, -1:], truth], 1), objects)}
    return out


def real_return(game: str, policy: TokenPolicy, book: PatchCodebook, args: Any, seed: int) -> float:
    """Mean undiscounted return of ``policy`` (sampling its actions) over ``eval_episodes`` real episodes."""
    gen = torch.Generator().manual_seed(seed)

    def act(grid: np.ndarray) -> int:
        tokens = torch.as_tensor(book.encode(patch_keys(grid)))[None]
        with torch.no_grad():
            logits, _ = policy(tokens)
        return int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen))

    played = collect_minatar(game, args.eval_episodes * args.eval_steps, seed=seed, epsilon=0.0, policy=act,
                             max_episode_steps=args.eval_steps)  # fmt: skip
    returns = [float(r.sum()) for r in played.rewards][: args.eval_episodes]
    return statistics.fmean(returns)


def run_game(game: str, args: Any) -> dict[str, Any]:
    """All four stages for one game."""
    t0 = time.perf_counter()
    policy = heuristic(game)
    train = collect_minatar(game, args.train_steps, seed=args.seed, epsilon=0.5, policy=policy,
                            max_episode_steps=args.max_episode_steps)  # fmt: skip
    val = collect_minatar(game, args.val_steps, seed=args.seed + 1, epsilon=0.5, policy=policy,
                          max_episode_steps=args.max_episode_steps, floor_samples=args.floor_samples)  # fmt: skip
    book = PatchCodebook.fit(np.concatenate([patch_keys(s).ravel() for s in train.states]))
    data: dict[str, Any] = {"train": train, "val": val, "book": book}
    data["train_tokens"], data["val_tokens"] = tokens_of(train, book), tokens_of(val, book)
    val_f, val_a, where = windows(data["val_tokens"], val.actions, args.context + 1)
    data["val_windows"] = (val_f, val_a)
    # the floor over exactly the validated transitions: step s + context - 1 of each window
    chosen = MinAtarEpisodes(game, [], [], [], [], train.action_set,
                             branches=[[val.branches[e][s + args.context - 1] for e, s in where]])  # fmt: skip
    data["floor"] = noise_floor(chosen, book)
    print(f"{game}: {train.num_steps} train / {val.num_steps} val steps, {book.size} tokens, noise floor "
          f"{data['floor']:.4f} nats/cell over {len(where)} validation transitions "
          f"({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
    model, record = train_world_model(game, data, args)
    itc = ITCDecoder(alpha=0.2, trash_cost=0.05, solver="hungarian")
    rollouts = rollout_figures(model, data, itc, args)
    rules = FrameRules(game, book)
    starts_f, starts_a, _ = windows(data["train_tokens"], train.actions, args.context)
    config = ImaginationConfig(horizon=args.imagine_horizon, updates=args.ac_updates, batch_size=args.ac_batch)
    agents: dict[str, list[float]] = {}
    for name in DECODER_NAMES:
        agents[name] = []
        for seed in range(args.seeds):
            torch.manual_seed(1000 + seed)
            agent = TokenPolicy(book.size, 25, 3)
            train_in_imagination(agent, model.next_frame_logits, (starts_f, starts_a), name, rules, config,
                                 itc=itc, seed=seed)  # fmt: skip
            agents[name].append(real_return(game, agent, book, args, seed=10_000 + seed))
        print(f"  {game} agent[{name}] real returns {agents[name]}", flush=True)
    agents["random"] = [real_return(game, TokenPolicy(book.size, 25, 3), book, args, seed=10_000 + s)
                        for s in range(args.seeds)]  # fmt: skip
    return {"world_model": record, "rollouts": rollouts, "agents": agents, "tokens": book.size,
            "wall_s": time.perf_counter() - t0}  # fmt: skip


def summarise(results: dict[str, dict[str, Any]], horizon: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Table rows and targets."""
    rows, targets = [], {}
    for game, res in results.items():
        ro, ag, wm = res["rollouts"], res["agents"], res["world_model"]
        truth_motion = statistics.fmean(ro["truth"]["object_motion"])
        for name in DECODER_NAMES:
            pe = ro[name]["persistence_error_rate"]
            motion = statistics.fmean(ro[name]["object_motion"])
            returns = ag[name]
            rows.append({
                "game": game, "decoder": name,
                "persist_err_h1": pe[0], f"persist_err_h{horizon}": pe[-1],
                "ratio_to_sample_h_last": ratio(pe[-1], ro["sample"]["persistence_error_rate"][-1]),
                "token_acc_h1": ro[name]["token_accuracy"][0], f"token_acc_h{horizon}": ro[name]["token_accuracy"][-1],
                "motion/truth": ratio(motion, truth_motion),
                "real_return": statistics.fmean(returns),
                "return_sd": statistics.stdev(returns) if len(returns) > 1 else float("nan"),
            })  # fmt: skip
        rows.append({"game": game, "decoder": "random policy", "real_return": statistics.fmean(ag["random"])})
        itc_pe, sample_pe = ro["itc"]["persistence_error_rate"], ro["sample"]["persistence_error_rate"]
        targets[f"{game}_itc_minus_sample_return"] = target(
            statistics.fmean(ag["itc"]) - statistics.fmean(ag["sample"]), ">=", 0.0
        )
        targets[f"{game}_itc_over_sample_persistence_worst_h"] = target(
            worst([ratio(a, b) for a, b in zip(itc_pe, sample_pe, strict=True)], "max"), "<", 1.0
        )
        targets[f"{game}_itc_motion_rel_error"] = target(
            abs(ratio(statistics.fmean(ro["itc"]["object_motion"]), truth_motion) - 1.0), "<=", 0.2
        )
        targets[f"{game}_wm_val_loss_over_floor"] = target(ratio(wm["val_loss"], wm["floor"]), "<=", 1.1)
    return rows, targets


def main() -> None:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=["breakout", "freeway"])
    parser.add_argument("--wm-steps", type=int, default=None, help="override the world-model step budget")
    parser.add_argument("--ac-updates", type=int, default=None, help="override the imagination updates per agent")
    args = parser.parse_args()
    overrides = {"wm_steps": args.wm_steps, "ac_updates": args.ac_updates}
    size = {
        "train_steps": 3000, "val_steps": 500, "floor_samples": 2, "max_episode_steps": 300, "context": 4,
        "d_model": 48, "layers": 2, "lr": 2e-3, "batch_size": 32, "wm_steps": 250, "val_every": 125,
        "horizon": 6, "rollout_starts": 48, "imagine_horizon": 6, "ac_updates": 10, "ac_batch": 16, "seeds": 3,
        "eval_episodes": 3, "eval_steps": 100,
    } if args.quick else {
        "train_steps": 15000, "val_steps": 2000, "floor_samples": 2, "max_episode_steps": 500, "context": 4,
        "d_model": 64, "layers": 2, "lr": 2e-3, "batch_size": 32, "wm_steps": 1500, "val_every": 250,
        "horizon": 12, "rollout_starts": 128, "imagine_horizon": 10, "ac_updates": 40, "ac_batch": 32, "seeds": 3,
        "eval_episodes": 6, "eval_steps": 300,
    }  # fmt: skip
    for key, value in size.items():
        setattr(args, key, value if overrides.get(key) is None else overrides[key])
    torch.set_num_threads(max(1, torch.get_num_threads()))
    results = {game: run_game(game, args) for game in args.games}
    rows, targets = summarise(results, args.horizon)
    print()
    print(markdown_table(rows))
    for game, res in results.items():
        wm = res["world_model"]
        print(f"\n{game}: world model val loss {wm['val_loss']:.4f} vs noise floor {wm['floor']:.4f} nats/cell "
              f"({wm['steps']:.0f} steps, {wm['train_s']:.0f} s); game total {res['wall_s']:.0f} s")  # fmt: skip
        for name in DECODER_NAMES:
            print(f"  {name:7s} persistence error by horizon: "
                  + " ".join(f"{v:.3f}" for v in res["rollouts"][name]["persistence_error_rate"]))  # fmt: skip
    print_targets(targets)
    write_json(args.json, "itc_minatar", {"results": results, "rows": rows, "targets": targets}, args)


if __name__ == "__main__":
    main()
