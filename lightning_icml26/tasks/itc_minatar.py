"""``itc_minatar``: ITC on MinAtar, from played frames to an agent trained purely in imagination (issue #28).

The pipeline of one game (Breakout or Freeway, the ``minatar`` package of the ``rl`` extra), run by
:func:`itc_minatar_task` with one :class:`ItcMinatarConfig` (the ``itc_minatar`` recipe; the CPU and GPU
benchmarks run that recipe), in named steps:

1. :func:`prepare_minatar`: epsilon-greedy play around :func:`~lightning_icml26.data.rl.heuristic_policy`,
   5 x 5 patch tokens, and the environment's next-frame noise floor over exactly the validation transitions.
2. :func:`fit_world_model`: a :class:`~lightning_icml26.modules.itc.TokenWorldModel` trained with Lightning until
   its validation loss of the last transition per window (``val_last_loss``) falls below ``goal_ratio`` x the
   floor, or the step budget (or the wall-clock cap) ends.
3. :func:`rollout_figures`: free-running rollouts from held-out starts under the recorded actions with ITC
   (MinAtar's official alpha 0.2, tau 0.05), sampling (the same Gumbel noise) and argmax: persistence errors,
   token accuracy and object motion by horizon.
4. :func:`train_agents`: a small actor-critic trained in imagination with each decoder over several seeds,
   played in the real game (:func:`real_return`), with a random policy as the reference.

Each step takes the settings object and what it works on: a :class:`MinAtarData` (the played game), or a
:class:`MinAtarWorld` (that game, its world model's next-frame logits and the ITC decoder).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import EarlyStopping

from lightning_icml26._requirements import Requirement, declare_requirements
from lightning_icml26.algorithms import ImaginationConfig, TokenPolicy, train_in_imagination
from lightning_icml26.data.rl.minatar import (
    GAMES,
    FrameRules,
    MinAtarEpisodes,
    PatchCodebook,
    collect_minatar,
    noise_floor,
    patch_keys,
)
from lightning_icml26.data.rl.minatar_windows import (
    TokenWindowDataModule,
    episode_tokens,
    episode_windows,
    heuristic_policy,
)
from lightning_icml26.metrics.functional import object_motion, rollout_consistency
from lightning_icml26.modules.itc import TokenWorldModel, rollout
from lightning_icml26.ops import DECODERS, ITCDecoder
from lightning_icml26.tasks._config import TaskConfig

__all__ = [
    "DECODER_NAMES",
    "ItcMinatarConfig",
    "MinAtarData",
    "MinAtarWorld",
    "fit_world_model",
    "itc_minatar_task",
    "minatar_summary",
    "next_frame_fn",
    "official_itc",
    "prepare_minatar",
    "random_return",
    "real_return",
    "rollout_figures",
    "train_agent",
    "train_agents",
    "window_loss",
]

DECODER_NAMES = ("itc", "sample", "argmax")
LogitsFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def official_itc(use_zero_neighbor_distance: bool = False) -> ITCDecoder:
    """MinAtar's official ITC setting: alpha 0.2, tau 0.05, exact (Hungarian) assignment.

    Example:
        >>> itc = official_itc()
        >>> itc.alpha, itc.trash_cost, itc.solver
        (0.2, 0.05, 'hungarian')
    """
    return ITCDecoder(alpha=0.2, trash_cost=0.05, solver="hungarian",
                      use_zero_neighbor_distance=use_zero_neighbor_distance)  # fmt: skip


@dataclass
class MinAtarData:
    """Played and tokenised episodes of one game, with the validation windows and their noise floor.

    Attributes:
        game: the game.
        train: training episodes.
        val: validation episodes (with next-frame branches).
        book: the patch codebook fitted on the training play.
        train_tokens: per training episode, ``(T + 1, 5, 5)`` tokens.
        val_tokens: per validation episode, ``(T + 1, 5, 5)`` tokens.
        val_frames: ``(N, context + 1, 5, 5)`` validation windows.
        val_actions: ``(N, context)`` their actions.
        floor: noise floor (nats per cell) over the last transition of every validation window.
        context: frames of context of the windows.
    """

    game: str
    train: MinAtarEpisodes
    val: MinAtarEpisodes
    book: PatchCodebook
    train_tokens: list[torch.Tensor]
    val_tokens: list[torch.Tensor]
    val_frames: torch.Tensor
    val_actions: torch.Tensor
    floor: float
    context: int


@dataclass(frozen=True)
class MinAtarWorld:
    """What the rollout and agent steps work on: one prepared game, its world model's next-frame logits, ITC.

    Attributes:
        data: the prepared game (:func:`prepare_minatar`).
        logits_fn: next-frame logits of its world model (:func:`next_frame_fn`).
        itc: the ITC decoder of the rollouts and of the ITC agents (:func:`official_itc` in the task).

    Example:
        >>> world = MinAtarWorld(data=None, logits_fn=None, itc=official_itc())  # a prepared game and model in use
        >>> world.itc.alpha
        0.2
    """

    data: MinAtarData
    logits_fn: LogitsFn
    itc: ITCDecoder


def _positive(**values: Any) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def prepare_minatar(config: ItcMinatarConfig, *, epsilon: float = 0.5) -> MinAtarData:
    """Play ``config.game`` (training and validation, seeds ``seed`` and ``seed + 1``), tokenise it, get the floor.

    The floor is taken over exactly the transitions that :func:`window_loss` scores: the last of every
    ``context + 1``-frame validation window.

    Args:
        config: the settings; read are ``game``, ``train_steps``, ``val_steps`` (played transitions),
            ``context``, ``seed``, ``max_episode_steps`` and ``floor_samples`` (re-seeded game copies per executed
            action when enumerating the next frame).
        epsilon: probability of a random action around the heuristic.
    """
    c, policy = config, heuristic_policy(config.game)
    train = collect_minatar(c.game, c.train_steps, seed=c.seed, epsilon=epsilon, policy=policy,
                            max_episode_steps=c.max_episode_steps)  # fmt: skip
    val = collect_minatar(c.game, c.val_steps, seed=c.seed + 1, epsilon=epsilon, policy=policy,
                          max_episode_steps=c.max_episode_steps, floor_samples=c.floor_samples)  # fmt: skip
    book = PatchCodebook.fit(np.concatenate([patch_keys(s).ravel() for s in train.states]))
    train_tokens, val_tokens = episode_tokens(train, book), episode_tokens(val, book)
    val_frames, val_actions, where = episode_windows(val_tokens, val.actions, c.context + 1)
    chosen = MinAtarEpisodes(c.game, [], [], [], [], train.action_set,
                             branches=[[val.branches[e][s + c.context - 1] for e, s in where]])  # fmt: skip
    return MinAtarData(c.game, train, val, book, train_tokens, val_tokens, val_frames, val_actions,
                       noise_floor(chosen, book), c.context)  # fmt: skip


def next_frame_fn(model: TokenWorldModel, device: str | torch.device = "cpu") -> LogitsFn:
    """``(frames, actions) -> logits`` on CPU, computed by ``model`` on ``device`` (moved there, eval mode).

    Decoding, the agent and the metrics stay on the CPU; only the world model's forward pass runs on ``device``.
    """
    model.to(device).eval()

    def logits(frames: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return model.next_frame_logits(frames.to(device), actions.to(device)).float().cpu()

    return logits


def window_loss(logits_fn: LogitsFn, frames: torch.Tensor, actions: torch.Tensor, batch_size: int = 512) -> float:
    """Cross-entropy per cell (nats) of the last frame of every window given the frames and actions before it.

    Args:
        logits_fn: next-frame logits of a world model (see :func:`next_frame_fn`).
        frames: ``(N, S, H, W)`` windows.
        actions: ``(N, S - 1)`` their actions.
        batch_size: windows per forward pass.
    """
    total = 0.0
    for i in range(0, len(frames), batch_size):
        logits = logits_fn(frames[i : i + batch_size, :-1], actions[i : i + batch_size])
        target = frames[i : i + batch_size, -1].long()
        total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1), reduction="sum"))
    return total / frames[:, -1].numel()


def fit_world_model(
    config: ItcMinatarConfig, data: MinAtarData, *, goal_ratio: float = 1.1, verbose: bool = True
) -> tuple[TokenWorldModel, dict[str, float]]:
    """Train a :class:`TokenWorldModel` with Lightning until ``val_last_loss < goal_ratio * floor`` or the budget ends.

    AdamW (weight decay 0.01), gradient norm clipped at 1, ``batch_size`` windows of ``context + 1`` frames per
    step drawn with replacement; validation every ``val_every`` steps. The returned model is in eval mode on the
    CPU; the record holds ``val_loss`` (:func:`window_loss` on the validation windows), ``floor``, ``steps``,
    ``train_s`` and ``train_windows``.

    Args:
        config: the settings; read are the model's ``d_model``, ``num_layers``, ``num_heads``, its ``lr`` and
            ``batch_size`` (windows per step), ``wm_steps`` (the step budget), ``val_every``, ``seed`` (of the
            initialisation and of the batch draws), ``device`` (``"cpu"``: Lightning's CPU accelerator, else its
            GPU one) and ``wm_minutes`` (an optional wall-clock cap).
        data: the prepared game (its ``context`` is the model's).
        goal_ratio: stop once the validation loss is below this multiple of the floor.
        verbose: print the validation losses.

    Example:
        >>> fit_world_model(ItcMinatarConfig(), None, goal_ratio=0.0)
        Traceback (most recent call last):
        ...
        ValueError: goal_ratio must be positive, got 0.0
    """
    if not goal_ratio > 0:
        raise ValueError(f"goal_ratio must be positive, got {goal_ratio!r}")
    c = config
    torch.manual_seed(c.seed)
    model = TokenWorldModel(data.book.size, 5, 5, 3, context=data.context, d_model=c.d_model, num_layers=c.num_layers,
                            num_heads=c.num_heads,
                            optimizer=lambda params: torch.optim.AdamW(params, lr=c.lr, weight_decay=0.01))  # fmt: skip
    train_f, train_a, _ = episode_windows(data.train_tokens, data.train.actions, data.context + 1)
    dm = TokenWindowDataModule(train_f, train_a, data.val_frames, data.val_actions, batch_size=c.batch_size,
                               num_steps=c.wm_steps, seed=c.seed)  # fmt: skip
    trainer = _world_model_trainer(c, data, goal_ratio * data.floor, verbose)
    start = time.perf_counter()
    trainer.fit(model, datamodule=dm)
    train_s = time.perf_counter() - start
    model.cpu().eval()
    val_loss = window_loss(next_frame_fn(model), data.val_frames, data.val_actions)
    record = {"val_loss": val_loss, "floor": data.floor, "steps": float(trainer.global_step), "train_s": train_s,
              "train_windows": float(len(train_f))}  # fmt: skip
    return model, record


def _world_model_trainer(config: ItcMinatarConfig, data: MinAtarData, goal: float, verbose: bool) -> pl.Trainer:
    """The world model's Trainer: early stop once ``val_last_loss`` is below ``goal``, clip at 1, no logger."""
    stop = EarlyStopping("val_last_loss", mode="min", patience=10**9, stopping_threshold=goal,
                         check_on_train_epoch_end=False)  # fmt: skip
    callbacks: list[pl.Callback] = [stop]
    if verbose:
        callbacks.append(_PrintValidation(data.game, goal))
    max_minutes = config.wm_minutes
    return pl.Trainer(
        accelerator="cpu" if config.device == "cpu" else "gpu", devices=1, max_epochs=1, max_steps=config.wm_steps,
        val_check_interval=min(config.val_every, config.wm_steps),
        gradient_clip_val=1.0, callbacks=callbacks, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
        max_time=None if max_minutes is None else {"seconds": int(60 * max_minutes)},
    )  # fmt: skip


class _PrintValidation(pl.Callback):
    """Print the validation losses against the goal (the benchmarks' progress lines)."""

    def __init__(self, game: str, goal: float) -> None:
        self.game, self.goal = game, goal

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        metrics = trainer.callback_metrics
        print(f"  {self.game} wm step {trainer.global_step}: val {float(metrics['val_last_loss']):.4f} "
              f"(goal < {self.goal:.4f})", flush=True)  # fmt: skip


def rollout_figures(
    config: ItcMinatarConfig, world: MinAtarWorld, *, decoders: Sequence[str] = DECODER_NAMES
) -> dict[str, Any]:
    """Free-running rollouts with every decoder from the same held-out starts (the same Gumbel noise).

    ``config.rollout_starts`` validation windows of ``context + horizon`` frames are rolled out over
    ``config.horizon`` steps under their recorded actions; the noise is seeded with ``config.seed + 17``.

    Returns, per decoder, the lists of :func:`~lightning_icml26.metrics.functional.rollout_consistency` and
    ``object_motion`` by horizon; ``truth`` (the true frames' motion); ``starts``; and ``itc_equals_sample_h1``,
    the share of first imagined cells where ITC keeps the sampled token (when both decoders are run).

    Example:
        >>> rollout_figures(ItcMinatarConfig(), None, decoders=["beam"])
        Traceback (most recent call last):
        ...
        ValueError: decoders must be drawn from ('itc', 'sample', 'argmax'), got ['beam']
    """
    _check_decoders(decoders)
    data, horizon, ctx = world.data, config.horizon, world.data.context
    frames, actions, _ = episode_windows(data.val_tokens, data.val.actions, ctx + horizon)
    frames, actions = frames[: config.rollout_starts], actions[: config.rollout_starts]
    start, truth = frames[:, :ctx], frames[:, ctx:]
    objects = list(range(1, data.book.size))
    out: dict[str, Any] = {"starts": len(frames)}
    first: dict[str, torch.Tensor] = {}
    for name in decoders:
        preds = rollout(world.logits_fn, start, actions, horizon, name, itc=world.itc, context=ctx,
                        generator=torch.Generator().manual_seed(config.seed + 17))  # fmt: skip
        first[name] = preds[:, 0]
        figures = rollout_consistency(preds, truth, data.book.size, objects)
        out[name] = {key: [float(v) for v in value] for key, value in figures.items()}
        out[name]["object_motion"] = object_motion(torch.cat([start[:, -1:], preds], 1), objects).tolist()
    if "itc" in first and "sample" in first:
        out["itc_equals_sample_h1"] = float((first["itc"] == first["sample"]).float().mean())
    out["truth"] = {"object_motion": object_motion(torch.cat([start[:, -1:], truth], 1), objects).tolist()}
    return out


def _check_decoders(decoders: Sequence[str]) -> None:
    bad = [d for d in decoders if d not in DECODERS]
    if bad:
        raise ValueError(f"decoders must be drawn from {DECODERS}, got {list(decoders)}")


def real_return(config: ItcMinatarConfig, data: MinAtarData, policy: TokenPolicy, seed: int) -> float:
    """Mean undiscounted real return of ``policy`` (sampling its actions, seed ``seed``) in ``data``'s game.

    ``config.eval_episodes`` episodes are played, each cut at ``config.eval_steps`` steps; the frames are
    tokenised with ``data.book``.
    """
    episodes, max_steps, gen = config.eval_episodes, config.eval_steps, torch.Generator().manual_seed(seed)

    def act(grid: np.ndarray) -> int:
        tokens = torch.as_tensor(data.book.encode(patch_keys(grid)))[None]
        with torch.no_grad():
            logits, _ = policy(tokens)
        return int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen))

    played = collect_minatar(data.game, episodes * max_steps, seed=seed, epsilon=0.0, policy=act,
                             max_episode_steps=max_steps)  # fmt: skip
    return statistics.fmean(float(r.sum()) for r in played.rewards[:episodes])


def train_agent(
    config: ItcMinatarConfig, world: MinAtarWorld, decoder: str, seed: int, *, max_seconds: float | None = None
) -> tuple[float, int]:
    """One actor-critic trained purely in imagination with ``decoder``, then played in the real game.

    The agent (initialised from seed ``1000 + seed``) starts its imagined trajectories from real training
    windows of ``context`` frames and trains with :meth:`ItcMinatarConfig.imagination` (``imagine_horizon``,
    ``ac_updates``, ``ac_batch``); it is evaluated with :func:`real_return` (seed ``10000 + seed``).

    Returns:
        ``(mean real return, imagination updates run)``; fewer updates than ``config.ac_updates`` only when
        ``max_seconds`` cut the training.
    """
    data = world.data
    rules = FrameRules(data.game, data.book)
    starts = episode_windows(data.train_tokens, data.train.actions, data.context)[:2]
    torch.manual_seed(1000 + seed)
    agent = TokenPolicy(data.book.size, 25, 3)
    curve = train_in_imagination(agent, world.logits_fn, starts, decoder, rules, config.imagination(),
                                 itc=world.itc, seed=seed, max_seconds=max_seconds)  # fmt: skip
    return real_return(config, data, agent, 10_000 + seed), len(curve)


def random_return(config: ItcMinatarConfig, data: MinAtarData, seed: int) -> float:
    """Real return of an untrained policy (the reference an agent must beat), seeded like :func:`train_agent`."""
    return real_return(config, data, TokenPolicy(data.book.size, 25, 3), 10_000 + seed)


def train_agents(
    config: ItcMinatarConfig, world: MinAtarWorld, *, decoders: Sequence[str] = DECODER_NAMES, verbose: bool = True
) -> dict[str, Any]:
    """Per decoder, ``config.seeds`` agents from :func:`train_agent`, each played in the real game.

    Seed by seed, the decoders train in the order given. With ``config.agent_seconds``, the first decoder's agent
    (ITC by default, the slowest) trains for at most that long, and the other decoders of the same seed then
    run exactly as many updates as it did, so that the decoders of a seed always share one budget.

    Returns:
        Per decoder, the list of real returns (one per seed); ``random`` (:func:`random_return`, same seeds);
        ``updates`` (per decoder, the imagination updates each agent ran); ``budgets_equal`` (every agent ran
        ``config.ac_updates``).

    Example:
        >>> train_agents(ItcMinatarConfig(), None, decoders=["itc", "greedy"])
        Traceback (most recent call last):
        ...
        ValueError: decoders must be drawn from ('itc', 'sample', 'argmax'), got ['itc', 'greedy']
    """
    _check_decoders(decoders)
    out: dict[str, Any] = {name: [] for name in decoders}
    out["updates"] = {name: [] for name in decoders}
    for seed in range(config.seeds):
        budget = config
        for i, name in enumerate(decoders):
            cap = config.agent_seconds if i == 0 else None
            score, updates = train_agent(budget, world, name, seed, max_seconds=cap)
            out[name].append(score)
            out["updates"][name].append(updates)
            if cap is not None:
                budget = replace(config, ac_updates=max(1, updates))
        if verbose:
            print(f"  {world.data.game} seed {seed}: real returns "
                  + ", ".join(f"{n} {out[n][-1]:.2f}" for n in decoders)
                  + f" (updates {[out['updates'][n][-1] for n in decoders]})", flush=True)  # fmt: skip
    out["random"] = [random_return(config, world.data, s) for s in range(config.seeds)]
    out["budgets_equal"] = {u for n in decoders for u in out["updates"][n]} == {config.ac_updates}
    return out


_DEVICE_HELP = "device must be 'cpu', 'cuda' or 'cuda:N'"


@declare_requirements([Requirement("minatar", "rl", "the MinAtar games")])
@dataclass(frozen=True)
class ItcMinatarConfig(TaskConfig):
    """Settings of :func:`itc_minatar_task` (the ``itc_minatar`` recipe's ``task`` node; same keys).

    Defaults are the CPU benchmark's full size (``benchmarks/itc_minatar.py``); the GPU benchmark sets larger
    sizes and ``device="cuda"``. ITC uses MinAtar's official alpha 0.2, tau 0.05 and the exact assignment.

    Attributes:
        game: ``"breakout"`` or ``"freeway"``.
        out_dir: folder of ``itc_minatar.json`` (nothing written when ``None``).
        train_steps: played training transitions.
        val_steps: played validation transitions (with next-frame branches for the noise floor).
        max_episode_steps: episode cut of the play.
        floor_samples: re-seeded game copies per action when enumerating the next frame.
        context: frames the world model sees.
        d_model: world-model width.
        num_layers: world-model layers.
        num_heads: world-model attention heads.
        lr: world-model learning rate (AdamW).
        batch_size: world-model windows per step.
        wm_steps: world-model step budget (training stops early at 1.1 x the noise floor).
        val_every: world-model steps between validations.
        horizon: rollout horizon of the figures.
        rollout_starts: held-out starts rolled out.
        imagine_horizon: imagined steps per agent trajectory.
        ac_updates: imagination updates per agent.
        ac_batch: imagined trajectories per update.
        seeds: agents per decoder.
        eval_episodes: real episodes per agent.
        eval_steps: step cut of a real episode.
        use_zero_neighbor_distance: ITC's official option of that name (no move cost to the four neighbours).
        device: where the world model trains and predicts (``"cpu"``, ``"cuda"``, ``"cuda:N"``); decoding, the
            agents and the games stay on the CPU.
        wm_minutes: optional wall-clock cap on the world model's training.
        agent_seconds: optional wall-clock cap on each seed's ITC agent (see :func:`train_agents`).
        seed: seed of the play, the world model and the rollouts.

    Example:
        >>> ItcMinatarConfig(game="pong")
        Traceback (most recent call last):
        ...
        ValueError: game must be one of ('breakout', 'freeway'), got 'pong'
        >>> ItcMinatarConfig(device="tpu")
        Traceback (most recent call last):
        ...
        ValueError: device must be 'cpu', 'cuda' or 'cuda:N', got 'tpu'
    """

    game: str = "breakout"
    out_dir: str | None = "outputs/itc_minatar"
    train_steps: int = 15000
    val_steps: int = 2000
    max_episode_steps: int = 500
    floor_samples: int = 2
    context: int = 4
    d_model: int = 64
    num_layers: int = 2
    num_heads: int = 4
    lr: float = 2e-3
    batch_size: int = 32
    wm_steps: int = 1500
    val_every: int = 250
    horizon: int = 12
    rollout_starts: int = 128
    imagine_horizon: int = 10
    ac_updates: int = 40
    ac_batch: int = 32
    seeds: int = 3
    eval_episodes: int = 6
    eval_steps: int = 300
    use_zero_neighbor_distance: bool = False
    device: str = "cpu"
    wm_minutes: float | None = None
    agent_seconds: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.game not in GAMES:
            raise ValueError(f"game must be one of {GAMES}, got {self.game!r}")
        if not re.fullmatch(r"cpu|cuda(:\d+)?", self.device):
            raise ValueError(f"{_DEVICE_HELP}, got {self.device!r}")
        _positive(**{name: getattr(self, name) for name in _POSITIVE_FIELDS})
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by num_heads={self.num_heads}")
        for name in ("lr", "wm_minutes", "agent_seconds"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be positive, got {value!r}")

    def imagination(self) -> ImaginationConfig:
        """The agents' imagination settings: ``imagine_horizon``, ``ac_updates`` and ``ac_batch``.

        Example:
            >>> budget = ItcMinatarConfig(imagine_horizon=6, ac_updates=10, ac_batch=16).imagination()
            >>> budget.horizon, budget.updates, budget.batch_size
            (6, 10, 16)
        """
        return ImaginationConfig(horizon=self.imagine_horizon, updates=self.ac_updates, batch_size=self.ac_batch)

    def run(self) -> dict[str, Any]:
        """Run :func:`itc_minatar_task` with these settings."""
        return itc_minatar_task(self)


_POSITIVE_FIELDS = (
    "train_steps", "val_steps", "max_episode_steps", "floor_samples", "context", "d_model", "num_layers",
    "num_heads", "batch_size", "wm_steps", "val_every", "horizon", "rollout_starts", "imagine_horizon",
    "ac_updates", "ac_batch", "seeds", "eval_episodes", "eval_steps",
)  # fmt: skip


def itc_minatar_task(config: ItcMinatarConfig) -> dict[str, Any]:
    """The MinAtar pipeline for one game; writes ``itc_minatar.json`` in ``config.out_dir``, returns the headlines.

    Steps: :func:`prepare_minatar`, :func:`fit_world_model` (on ``config.device``), :func:`rollout_figures`
    and :func:`train_agents`; :func:`minatar_summary` condenses them.

    Returns:
        ``game``, ``tokens``, ``noise_floor``, ``wm_val_loss``, ``wm_val_over_floor``, ``wm_steps``, per decoder
        the persistence error at the first and last horizon and the object motion over the truth's, per decoder
        (and ``random``) the mean real return, and ``itc_equals_sample_h1``; the JSON holds every figure
        (``summary``, ``world_model``, ``rollouts``, ``agents``).

    Example:
        >>> itc_minatar_task({"game": "breakout"})
        Traceback (most recent call last):
        ...
        TypeError: config must be an ItcMinatarConfig, got dict
    """
    if not isinstance(config, ItcMinatarConfig):
        raise TypeError(f"config must be an ItcMinatarConfig, got {type(config).__name__}")
    c, t0 = config, time.perf_counter()
    data = prepare_minatar(c)
    print(f"{c.game}: {data.train.num_steps} train / {data.val.num_steps} val steps, {data.book.size} tokens, "
          f"noise floor {data.floor:.4f} nats/cell over {len(data.val_frames)} validation transitions",
          flush=True)  # fmt: skip
    model, record = fit_world_model(c, data)
    print(f"{c.game}: world model val loss {record['val_loss']:.4f} = {record['val_loss'] / data.floor:.2f} x the "
          f"noise floor ({record['steps']:.0f} steps)", flush=True)  # fmt: skip
    record["params"] = float(sum(p.numel() for p in model.parameters()))
    itc = official_itc(c.use_zero_neighbor_distance)
    world = MinAtarWorld(data, next_frame_fn(model, c.device), itc)
    rollouts = rollout_figures(c, world)
    agents = train_agents(c, world)
    summary = minatar_summary(c.game, data.book.size, record, rollouts, agents)
    summary["wall_s"] = time.perf_counter() - t0
    if c.out_dir is not None:
        out = Path(c.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        full = {"summary": summary, "world_model": record, "rollouts": rollouts, "agents": agents}
        (out / "itc_minatar.json").write_text(json.dumps(full, indent=2))
    print(json.dumps(summary, indent=2), flush=True)
    return summary


def minatar_summary(
    game: str, tokens: int, record: dict[str, float], rollouts: dict[str, Any], agents: dict[str, Any]
) -> dict[str, Any]:
    """The headline figures of one game from the world model's record (with its ``floor``), rollouts and agents.

    Example:
        >>> figures = {"persistence_error_rate": [0.1, 0.3], "object_motion": [0.4, 0.4]}
        >>> rollouts = {n: figures for n in DECODER_NAMES} | {"truth": {"object_motion": [0.5, 0.5]}}
        >>> agents = {n: [1.0, 3.0] for n in (*DECODER_NAMES, "random")}
        >>> out = minatar_summary("breakout", 9, {"val_loss": 0.6, "floor": 0.5, "steps": 10.0}, rollouts, agents)
        >>> out["wm_val_over_floor"], out["itc_persistence_h2"], out["itc_motion_over_truth"], out["itc_real_return"]
        (1.2, 0.3, 0.8, 2.0)
    """
    truth_motion = statistics.fmean(rollouts["truth"]["object_motion"])
    summary: dict[str, Any] = {
        "game": game, "tokens": tokens, "noise_floor": record["floor"], "wm_val_loss": record["val_loss"],
        "wm_val_over_floor": record["val_loss"] / record["floor"], "wm_steps": record["steps"],
        "itc_equals_sample_h1": rollouts.get("itc_equals_sample_h1", float("nan")),
    }  # fmt: skip
    for name in DECODER_NAMES:
        pe = rollouts[name]["persistence_error_rate"]
        summary[f"{name}_persistence_h1"], summary[f"{name}_persistence_h{len(pe)}"] = pe[0], pe[-1]
        motion = statistics.fmean(rollouts[name]["object_motion"])
        summary[f"{name}_motion_over_truth"] = motion / truth_motion if truth_motion else float("nan")
        summary[f"{name}_real_return"] = statistics.fmean(agents[name])
    summary["random_real_return"] = statistics.fmean(agents["random"])
    return summary
