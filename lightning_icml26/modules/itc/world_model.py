"""A block-causal transformer over frames of discrete cell tokens plus actions (next-frame cross-entropy)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule
from torch import nn

from lightning_icml26.metrics.itc import RolloutConsistency
from lightning_icml26.modules.itc.rollout import rollout
from lightning_icml26.modules.itc.vq import VQTokenizer
from lightning_icml26.ops import DECODERS, ITCDecoder

__all__ = ["TokenWorldModel"]

OptimizerFactory = Callable[[Iterable[Any]], torch.optim.Optimizer]
SchedulerFactory = Callable[[torch.optim.Optimizer], Any]


def _default_optimizer(params: Iterable[Any]) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=1e-3)


class TokenWorldModel(LightningModule):
    """Token world model: predicts every cell token of frame ``t + 1`` from frames ``<= t`` and actions ``<= t``.

    The sequence is ``[frame_0 cells, a_0, frame_1 cells, a_1, ...]`` (``H * W + 1`` tokens per block) with a
    block-causal mask (a token sees its own block and earlier ones), as in the TWM base model of the ITC
    paper; the output at cell ``j`` of block ``t`` gives the logits of cell ``j`` of frame ``t + 1``. Each
    token embeds its value, its in-frame position (learned absolute embedding) and its block index. Trained
    with next-frame cross-entropy. With a ``tokenizer``, batches hold images ``(B, S, C, H_img, W_img)`` that
    are tokenised first and the tokenizer loss is added.

    Batches are ``(frames, actions)``: frames ``(B, S, H, W)`` int64 with ``2 <= S <= context + 1`` during
    training and validation, actions ``(B, S - 1)``; in ``test_step`` longer sequences
    ``(B, context + horizon, H, W)`` are also rolled out with every decoder in ``eval_decoders`` and scored
    with :class:`~lightning_icml26.metrics.RolloutConsistency` (needs ``object_tokens``).

    Args:
        vocab_size: number of cell tokens.
        height: frame height in cells.
        width: frame width in cells.
        num_actions: number of discrete actions.
        context: frames the model attends to (block count).
        d_model: transformer width.
        num_layers: transformer layers.
        num_heads: attention heads.
        dropout: dropout rate.
        optimizer: optimizer factory (default ``AdamW(lr=1e-3)``).
        lr_scheduler: optional scheduler factory.
        tokenizer: optional :class:`VQTokenizer` for image observations.
        object_tokens: token ids counted as objects by the rollout metrics of ``test_step``.
        eval_decoders: decoders compared in ``test_step``.
        itc: ITC configuration for rollouts (default :class:`ITCDecoder()`).
        eval_seed: seed of the rollout noise in ``test_step``.

    Example:
        >>> model = TokenWorldModel(vocab_size=5, height=3, width=4, num_actions=2, context=3, d_model=16, num_heads=2)
        >>> frames = torch.randint(0, 5, (2, 3, 3, 4))
        >>> model(frames, torch.zeros(2, 3, dtype=torch.long)).shape
        torch.Size([2, 3, 3, 4, 5])
        >>> model.next_frame_logits(frames, torch.zeros(2, 3, dtype=torch.long)).shape
        torch.Size([2, 3, 4, 5])
    """

    def __init__(
        self,
        vocab_size: int,
        height: int,
        width: int,
        num_actions: int,
        context: int = 2,
        d_model: int = 64,
        num_layers: int = 2,
        num_heads: int = 4,
        dropout: float = 0.0,
        optimizer: OptimizerFactory | None = None,
        lr_scheduler: SchedulerFactory | None = None,
        tokenizer: VQTokenizer | None = None,
        object_tokens: Sequence[int] | None = None,
        eval_decoders: Sequence[str] = DECODERS,
        itc: ITCDecoder | None = None,
        eval_seed: int = 0,
    ) -> None:
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("height", height),
            ("width", width),
            ("num_actions", num_actions),
            ("context", context),
            ("d_model", d_model),
            ("num_layers", num_layers),
            ("num_heads", num_heads),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be at least 2, got {vocab_size}")
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
        bad = [d for d in eval_decoders if d not in DECODERS]
        if bad:
            raise ValueError(f"eval_decoders must be drawn from {DECODERS}, got {list(eval_decoders)}")
        if tokenizer is not None and tokenizer.codebook_size != vocab_size:
            raise ValueError(f"vocab_size={vocab_size} must equal tokenizer.codebook_size={tokenizer.codebook_size}")
        self.save_hyperparameters(ignore=["optimizer", "lr_scheduler", "tokenizer", "itc"])
        self.vocab_size, self.height, self.width = vocab_size, height, width
        self.num_actions, self.context = num_actions, context
        self.cells = height * width
        self.optimizer_factory = optimizer or _default_optimizer
        self.scheduler_factory = lr_scheduler
        self.tokenizer = tokenizer
        self.itc = itc or ITCDecoder()
        self.eval_decoders = tuple(eval_decoders)
        self.eval_seed = eval_seed
        self.object_tokens = None if object_tokens is None else [int(t) for t in object_tokens]

        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.action_embedding = nn.Embedding(num_actions, d_model)
        self.position_embedding = nn.Parameter(torch.zeros(self.cells + 1, d_model))
        self.block_embedding = nn.Parameter(torch.zeros(context, d_model))
        nn.init.normal_(self.position_embedding, std=0.02)
        nn.init.normal_(self.block_embedding, std=0.02)
        layer = nn.TransformerEncoderLayer(
            d_model, num_heads, 4 * d_model, dropout, activation="gelu", batch_first=True, norm_first=True
        )
        self.transformer = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        block = torch.arange(context).repeat_interleave(self.cells + 1)
        self.block_mask: torch.Tensor
        self.register_buffer("block_mask", block.unsqueeze(1) < block.unsqueeze(0), persistent=False)
        self.rollout_metrics = nn.ModuleDict()

    # ------------------------------------------------------------------ model
    def _check_inputs(self, frames: torch.Tensor, actions: torch.Tensor) -> None:
        if not isinstance(frames, torch.Tensor) or frames.dim() != 4:
            shape = tuple(frames.shape) if isinstance(frames, torch.Tensor) else type(frames).__name__
            raise ValueError(f"frames must be a (B, T, H, W) tensor of tokens, got {shape}")
        if tuple(frames.shape[2:]) != (self.height, self.width):
            raise ValueError(
                f"frames have cells {tuple(frames.shape[2:])} but the model expects (H, W) = ({self.height}, "
                f"{self.width})"
            )
        if not 1 <= frames.shape[1] <= self.context:
            raise ValueError(f"frames must hold 1..context={self.context} frames, got T={frames.shape[1]}")
        if frames.is_floating_point():
            raise TypeError(f"frames must hold integer tokens, got dtype {frames.dtype}")
        if int(frames.min()) < 0 or int(frames.max()) >= self.vocab_size:
            raise ValueError(f"frame tokens must lie in [0, {self.vocab_size}), got [{frames.min()}, {frames.max()}]")
        if not isinstance(actions, torch.Tensor) or tuple(actions.shape) != tuple(frames.shape[:2]):
            shape = tuple(actions.shape) if isinstance(actions, torch.Tensor) else type(actions).__name__
            raise ValueError(f"actions must have shape (B, T) = {tuple(frames.shape[:2])}, got {shape}")
        if actions.numel() and (int(actions.min()) < 0 or int(actions.max()) >= self.num_actions):
            raise ValueError(f"actions must lie in [0, {self.num_actions}), got [{actions.min()}, {actions.max()}]")

    def forward(self, frames: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Next-frame logits ``(B, T, H, W, V)``: entry ``t`` predicts frame ``t + 1``.

        Args:
            frames: ``(B, T, H, W)`` int64 tokens, ``1 <= T <= context``.
            actions: ``(B, T)`` int64, ``actions[:, t]`` taken after frame ``t``.
        """
        self._check_inputs(frames, actions)
        batch, steps = frames.shape[:2]
        cells = self.token_embedding(frames.reshape(batch, steps, self.cells).long())
        acts = self.action_embedding(actions.long()).unsqueeze(2)
        x = torch.cat([cells, acts], dim=2) + self.position_embedding + self.block_embedding[:steps, None]
        size = steps * (self.cells + 1)
        x = self.transformer(x.reshape(batch, size, -1), mask=self.block_mask[:size, :size])
        x = x.reshape(batch, steps, self.cells + 1, -1)[:, :, : self.cells]
        return self.head(self.norm(x)).reshape(batch, steps, self.height, self.width, self.vocab_size)

    def next_frame_logits(self, frames: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, H, W, V)`` of the frame after the last of ``frames`` (the last ``context`` are used)."""
        return self(frames[:, -self.context :], actions[:, -self.context :])[:, -1]

    # --------------------------------------------------------------- training
    def _tokens(self, frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.tokenizer is None:
            return frames, None
        batch, steps = frames.shape[:2]
        images = frames.reshape(batch * steps, *frames.shape[2:]).float()
        loss = self.tokenizer.loss(images)
        with torch.no_grad():
            tokens = self.tokenizer.encode(images)
        return tokens.reshape(batch, steps, *tokens.shape[1:]), loss

    def _next_frame_loss(self, frames: torch.Tensor, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self(frames[:, :-1], actions[:, : frames.shape[1] - 1])
        target = frames[:, 1:].long()
        loss = F.cross_entropy(logits.reshape(-1, self.vocab_size), target.reshape(-1))
        accuracy = (logits.argmax(-1) == target).float().mean()
        return loss, accuracy

    def _window(self, batch: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        frames, actions = batch[0], batch[1]
        tokens, tok_loss = self._tokens(frames)
        if tokens.shape[1] < 2:
            raise ValueError(f"a batch needs at least 2 frames, got {tokens.shape[1]}")
        return tokens, actions, tok_loss

    def training_step(self, batch: Sequence[torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Next-frame cross-entropy (plus the tokenizer loss when there is one)."""
        tokens, actions, tok_loss = self._window(batch)
        if tokens.shape[1] > self.context + 1:
            raise ValueError(
                f"training sequences may hold at most context + 1 = {self.context + 1} frames, got {tokens.shape[1]}"
            )
        loss, accuracy = self._next_frame_loss(tokens, actions)
        self.log("train_loss", loss, prog_bar=True, batch_size=len(tokens))
        self.log("train_token_acc", accuracy, batch_size=len(tokens))
        if tok_loss is not None:
            self.log("train_tokenizer_loss", tok_loss, batch_size=len(tokens))
            loss = loss + tok_loss
        return loss

    def validation_step(self, batch: Sequence[torch.Tensor], batch_idx: int) -> None:
        """One-step loss and token accuracy (teacher forcing) on the first ``context + 1`` frames.

        Also logs ``val_last_loss``: the cross-entropy per cell of the last of those frames only (the prediction
        made with the longest context), the figure to hold against an environment's next-frame noise floor.
        """
        tokens, actions, _ = self._window(batch)
        window = tokens[:, : self.context + 1]
        logits = self(window[:, :-1], actions[:, : window.shape[1] - 1])
        target = window[:, 1:].long()
        loss = F.cross_entropy(logits.reshape(-1, self.vocab_size), target.reshape(-1))
        last = F.cross_entropy(logits[:, -1].reshape(-1, self.vocab_size), target[:, -1].reshape(-1))
        accuracy = (logits.argmax(-1) == target).float().mean()
        self.log("val_loss", loss, prog_bar=True, batch_size=len(tokens))
        self.log("val_last_loss", last, batch_size=len(tokens))
        self.log("val_token_acc", accuracy, prog_bar=True, batch_size=len(tokens))

    def test_step(self, batch: Sequence[torch.Tensor], batch_idx: int) -> None:
        """One-step metrics, and free-running rollouts with every decoder on sequences longer than the context."""
        tokens, actions, _ = self._window(batch)
        loss, accuracy = self._next_frame_loss(tokens[:, : self.context + 1], actions)
        self.log("test_loss", loss, batch_size=len(tokens))
        self.log("test_token_acc", accuracy, batch_size=len(tokens))
        horizon = tokens.shape[1] - self.context
        if self.object_tokens is None or horizon < 1:
            return
        for name in self.eval_decoders:
            if name not in self.rollout_metrics:
                self.rollout_metrics[name] = RolloutConsistency(self.vocab_size, self.object_tokens, horizon).to(
                    self.device
                )
            generator = torch.Generator().manual_seed(self.eval_seed + batch_idx)
            imagined = rollout(
                self, tokens[:, : self.context], actions, horizon, name, itc=self.itc, generator=generator
            )
            metric = self.rollout_metrics[name]
            assert isinstance(metric, RolloutConsistency)  # internal invariant, not user input
            metric.update(imagined, tokens[:, self.context :])

    def on_test_epoch_end(self) -> None:
        """Log the rollout consistency figures per decoder: at horizon 1, at the last horizon and averaged."""
        for name, module in self.rollout_metrics.items():
            metric = module if isinstance(module, RolloutConsistency) else None
            if metric is None:
                continue
            figures = metric.compute()
            for key, values in figures.items():
                self.log(f"test_{name}_{key}_h1", values[0])
                self.log(f"test_{name}_{key}_last", values[-1])
                self.log(f"test_{name}_{key}_mean", values.nanmean())
            metric.reset()

    def configure_optimizers(self) -> Any:
        """Build the optimizer (and scheduler) from the factories."""
        optimizer = self.optimizer_factory(self.parameters())
        if self.scheduler_factory is None:
            return optimizer
        return {"optimizer": optimizer, "lr_scheduler": self.scheduler_factory(optimizer)}
