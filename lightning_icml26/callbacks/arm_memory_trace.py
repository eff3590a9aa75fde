"""``ARMMemoryTrace``: trace what the routed memory of every ARM layer does along training, on a fixed probe batch."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.fabric.utilities.apply_func import apply_to_collection, move_data_to_device
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_warn
from torch import Tensor, nn

from lightning_icml26._checks import check_int
from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention, ARMCache

__all__ = ["ARMMemoryTrace"]

ProbeForward = Callable[[pl.LightningModule, Any], Any]

#: Figures of the probe forward, in the order they are logged.
MEMORY_FIGURES = ("occupied", "overwritten", "usage", "slots_read", "aux_loss")
#: Gradient norms of the traced optimizer step (``grad_norm_policy`` only with a learned read policy).
GRAD_FIGURES = ("grad_norm_router", "grad_norm_gate", "grad_norm_policy")


def _default_probe_forward(pl_module: pl.LightningModule, batch: Any) -> Any:
    """``pl_module(x)`` with ``x`` the batch's ``"input_ids"``, the batch itself (a tensor) or its first element."""
    if isinstance(batch, Mapping) and "input_ids" in batch:
        return pl_module(batch["input_ids"])
    if isinstance(batch, Tensor):
        return pl_module(batch)
    if isinstance(batch, list | tuple) and batch and isinstance(batch[0], Tensor):
        return pl_module(batch[0])
    raise TypeError(
        f"ARMMemoryTrace cannot feed a training batch of type {type(batch).__name__} to the module; give "
        "probe_forward=lambda module, batch: ... (a batch that is a tensor, a list/tuple starting with the input "
        "tensor or a mapping with 'input_ids' is fed as is)"
    )


def _grad_norm(params: list[nn.Parameter]) -> float:
    """L2 norm of the parameters' gradients taken together (a parameter without a gradient counts as zero)."""
    grads = [p.grad.detach().float().flatten() for p in params if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.cat(grads))) if grads else 0.0


class ARMMemoryTrace(Callback):
    """Every ``every_n_steps`` optimizer steps, run a fixed probe batch and log what each ARM layer's memory holds.

    The probe is the first ``probe_batch_size`` samples of the first training batch, kept fixed for the whole run
    (and in the checkpoint), so the figures of successive traces differ by the weights alone. At a trace step the
    callback runs the probe through the module in eval mode without autograd (argmax routing, as evaluated; no
    random number is drawn) and, for every :class:`ARMAttention` it calls, the layer's :meth:`ARMAttention.prefill`
    on the same inputs, whose :class:`ARMCache` is the memory at the end of each probe sequence. Each module's
    train/eval mode and each layer's ``last_aux_loss`` / ``last_slots_read`` are restored afterwards. Per layer,
    as means over the probe's sequences and heads:

    * ``occupied``: fraction of the ``M`` slots written at least once (the distinct slots the writes went to).
    * ``overwritten``: fraction of the writes that went to a slot already written in the same sequence (a
      ``T``-token sequence makes ``T - lag`` writes, ``lag`` the window with ``"on_eviction"`` writes, 0 with
      ``"every_token"``; ``overwritten = 1 - occupied slots / writes``, 0 when nothing is written).
    * ``usage``: mean write mass ``u = 1 - prod(1 - g)`` of the occupied slots (:attr:`ARMCache.usage`; it
      grows with the write gates ``g`` of the tokens merged into a slot).
    * ``slots_read``: mean slots read per query (``last_slots_read``; every slot of the chosen clusters).
    * ``aux_loss``: the layer's auxiliary loss on the probe (read cost plus load balancing, ``last_aux_loss``).

    and, from the gradients of the traced optimizer step itself (its training batch, taken in
    ``on_before_optimizer_step``: after gradient accumulation and AMP unscaling, before clipping), the L2 norms
    ``grad_norm_router`` (``w_cluster`` and ``w_slot``), ``grad_norm_gate`` (``gate_w`` and ``gate_b``) and, for
    layers with a learned read policy, ``grad_norm_policy``.

    A trace follows optimizer steps ``n, 2 n, ...`` (``n = every_n_steps``): its ``step`` is
    ``trainer.global_step`` after the update, its memory figures are those of the updated weights and its gradient
    norms those of that update. Each figure is logged as ``arm_trace/<figure>`` (mean over the layers; with
    ``per_layer=True`` also ``arm_trace/layer<i>/<figure>``, ``i`` in ``modules()`` order) with ``on_step=True``;
    Lightning hands step metrics to the logger every ``log_every_n_steps`` batches, so take ``every_n_steps`` a
    multiple of it (a warning says so otherwise). Lightning also hands a step metric's last value to the logger at
    the later logging steps of the same epoch, so a trace repeats there until the next one; :attr:`history` holds
    each trace once, at its step. Between traces the callback does one modulo per hook; a trace costs one probe
    forward plus one more pass of each ARM layer. With several processes each keeps its own probe (its first
    batch) and history, and the logger shows rank zero's.

    Args:
        every_n_steps: optimizer steps between traces (>= 1).
        probe_batch_size: samples of the first training batch kept as the probe (>= 1; a smaller first batch is
            kept whole).
        per_layer: also log and keep each layer's figures.
        probe_forward: ``f(pl_module, probe)`` running the probe through the module, or ``None``: ``pl_module(x)``
            with ``x`` the batch's ``"input_ids"`` (a mapping), the batch (a tensor) or its first element (a
            list/tuple).

    Attributes:
        history: one dict per trace: ``"step"`` and the figures (layer means; ``"layer<i>/<figure>"`` too with
            ``per_layer``).
        probe: the probe batch (``None`` until the first training batch or a checkpoint provides it).

    Raises:
        ValueError: an argument out of range (naming it), or a module without an ARM layer (when fitting starts).

    Example:
        >>> from lightning_icml26.data import RecallDataModule
        >>> from lightning_icml26.modules import ARMDecoder
        >>> _ = torch.manual_seed(0)
        >>> model = ARMDecoder(d_model=16, num_layers=1, num_heads=2, budget=8, attention_kwargs={"num_clusters": 2})
        >>> data = RecallDataModule(seq_len=24, num_pairs=4, num_train=16, num_val=4, batch_size=4)
        >>> trace = ARMMemoryTrace(every_n_steps=2, probe_batch_size=2)
        >>> trainer = pl.Trainer(max_steps=4, callbacks=[trace], log_every_n_steps=2, logger=False,
        ...                      enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        ...                      num_sanity_val_steps=0, limit_val_batches=0)
        >>> trainer.fit(model, data)
        >>> [entry["step"] for entry in trace.history], trace.probe["input_ids"].shape
        ([2, 4], torch.Size([2, 24]))
        >>> sorted(trace.history[-1])
        ['aux_loss', 'grad_norm_gate', 'grad_norm_router', 'occupied', 'overwritten', 'slots_read', 'step', 'usage']
        >>> 0 < trace.history[-1]["occupied"] <= 1
        True
    """

    def __init__(
        self,
        every_n_steps: int = 100,
        probe_batch_size: int = 8,
        per_layer: bool = False,
        probe_forward: ProbeForward | None = None,
    ) -> None:
        self.every_n_steps = check_int("every_n_steps", every_n_steps, 1)
        self.probe_batch_size = check_int("probe_batch_size", probe_batch_size, 1)
        if not isinstance(per_layer, bool):
            raise ValueError(f"per_layer must be a bool, got {per_layer!r}")
        if probe_forward is not None and not callable(probe_forward):
            raise ValueError(f"probe_forward must be None or a callable (pl_module, batch), got {probe_forward!r}")
        self.per_layer = per_layer
        self.probe_forward: ProbeForward = probe_forward or _default_probe_forward
        self.history: list[dict[str, float]] = []
        self.probe: Any = None
        self._grads: dict[str, float] | None = None

    @staticmethod
    def arm_layers(pl_module: nn.Module) -> list[ARMAttention]:
        """The module's ARM layers in ``modules()`` order; ``ValueError`` when there is none."""
        layers = [m for m in pl_module.modules() if isinstance(m, ARMAttention)]
        if not layers:
            raise ValueError(
                f"{type(pl_module).__name__} has no ARMAttention layer for ARMMemoryTrace: there is no ARM memory "
                "to trace (use attention='arm' or drop the callback)"
            )
        return layers

    def set_probe(self, batch: Any) -> None:
        """Keep the first ``probe_batch_size`` samples of ``batch`` (every tensor in it, detached copies) as the probe.

        Example:
            >>> trace = ARMMemoryTrace(probe_batch_size=2)
            >>> trace.set_probe({"input_ids": torch.arange(12).view(4, 3)})
            >>> trace.probe["input_ids"].tolist()
            [[0, 1, 2], [3, 4, 5]]
        """
        size = self.probe_batch_size
        self.probe = apply_to_collection(batch, Tensor, lambda t: (t[:size] if t.dim() else t).detach().clone())

    def probe_figures(self, pl_module: nn.Module) -> dict[str, float]:
        """The memory figures of the probe for the module's current weights (modes and layer attributes restored).

        Returns:
            The layer means of ``MEMORY_FIGURES`` and, with ``per_layer``, ``"layer<i>/<figure>"``.

        Raises:
            ValueError: no probe yet, no ARM layer, or a probe forward that calls no ARM layer.

        Example:
            >>> from lightning_icml26.modules import ARMDecoder
            >>> model = ARMDecoder(d_model=16, num_layers=2, num_heads=2, budget=8,
            ...                    attention_kwargs={"num_clusters": 2, "window": 4})
            >>> trace = ARMMemoryTrace(probe_batch_size=2)
            >>> trace.set_probe({"input_ids": torch.randint(0, 256, (2, 10))})
            >>> figures = trace.probe_figures(model)
            >>> list(figures), figures["slots_read"]  # 4 slots; a fixed read of every cluster reads them all
            (['occupied', 'overwritten', 'usage', 'slots_read', 'aux_loss'], 4.0)
            >>> model.training  # the mode it had
            True
        """
        if self.probe is None:
            raise ValueError("ARMMemoryTrace has no probe batch yet: it takes one from the first training batch")
        layers = self.arm_layers(pl_module)
        probe = move_data_to_device(self.probe, next(iter(pl_module.parameters())).device)
        modes = [(m, m.training) for m in pl_module.modules()]
        kept = [(layer.last_aux_loss, layer.last_slots_read) for layer in layers]
        seen: dict[int, list[dict[str, float]]] = {i: [] for i in range(len(layers))}
        index = {id(layer): i for i, layer in enumerate(layers)}

        def record(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
            assert isinstance(module, ARMAttention)
            read, aux = float(module.last_slots_read), float(module.last_aux_loss)
            _, cache = module.prefill(*args, **kwargs)
            seen[index[id(module)]].append({**self._cache_figures(module, cache), "slots_read": read, "aux_loss": aux})

        handles = [layer.register_forward_hook(record, with_kwargs=True) for layer in layers]
        try:
            pl_module.eval()
            with torch.no_grad():
                self.probe_forward(pl_module, probe)  # type: ignore[arg-type]
        finally:
            for handle in handles:
                handle.remove()
            for module, mode in modes:
                module.training = mode
            for layer, (aux, read) in zip(layers, kept, strict=True):
                layer.last_aux_loss, layer.last_slots_read = aux, read
        per_layer = {i: self._mean(calls) for i, calls in seen.items() if calls}
        if not per_layer:
            raise ValueError(
                f"the probe forward of {type(pl_module).__name__} called none of its {len(layers)} ARMAttention "
                "layer(s); give ARMMemoryTrace(probe_forward=...) that runs the batch through them"
            )
        figures = self._mean(list(per_layer.values()))
        if self.per_layer:
            figures |= {f"layer{i}/{k}": v for i, row in per_layer.items() for k, v in row.items()}
        return figures

    @staticmethod
    def _cache_figures(layer: ARMAttention, cache: ARMCache) -> dict[str, float]:
        """``occupied``, ``overwritten`` and ``usage`` of one prefill's cache (means over sequences and heads)."""
        occ = cache.occupied.float()  # (B, H, M)
        lag = 0 if layer.write_mode == "every_token" else layer.window
        writes = max(cache.position - lag, 0)
        count = occ.sum(-1)  # distinct slots written, per sequence and head
        overwritten = float((1.0 - count / writes).mean()) if writes else 0.0
        total = occ.sum()
        usage = float((cache.usage.float() * occ).sum() / total) if total > 0 else 0.0
        return {"occupied": float(occ.mean()), "overwritten": overwritten, "usage": usage}

    @staticmethod
    def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
        """Key-wise mean of dicts with the same keys (in the first one's order)."""
        return {key: sum(row[key] for row in rows) / len(rows) for key in rows[0]}

    def grad_figures(self, pl_module: nn.Module) -> dict[str, float]:
        """Gradient norms of the ARM layers' router, gate and (learned read) policy, means over the layers.

        Example:
            >>> attn = ARMAttention(num_heads=1, head_dim=4, num_slots=4, num_clusters=2, window=0)
            >>> attn(*torch.randn(3, 1, 6, 1, 4).unbind(0)).sum().backward()
            >>> sorted(ARMMemoryTrace().grad_figures(attn))
            ['grad_norm_gate', 'grad_norm_router']
        """
        layers = self.arm_layers(pl_module)
        rows = [
            {
                "grad_norm_router": _grad_norm([layer.w_cluster, layer.w_slot]),
                "grad_norm_gate": _grad_norm([layer.gate_w, layer.gate_b]),
            }
            for layer in layers
        ]
        policies = [_grad_norm(list(layer.policy.parameters())) for layer in layers if layer.policy is not None]
        figures = self._mean(rows)
        if policies:
            figures["grad_norm_policy"] = sum(policies) / len(policies)
        if self.per_layer:
            for i, (layer, row) in enumerate(zip(layers, rows, strict=True)):
                figures |= {f"layer{i}/{k}": v for k, v in row.items()}
                if layer.policy is not None:
                    figures[f"layer{i}/grad_norm_policy"] = _grad_norm(list(layer.policy.parameters()))
        return figures

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Check that the module has an ARM layer, and warn when traces would fall between the logger's steps."""
        self.arm_layers(pl_module)
        every = getattr(trainer, "log_every_n_steps", 0)  # set by Lightning's logger connector, not declared
        if every and self.every_n_steps % every:
            rank_zero_warn(
                f"ARMMemoryTrace(every_n_steps={self.every_n_steps}) is not a multiple of the Trainer's "
                f"log_every_n_steps={every}: traces between the logger's steps are kept in history but not logged"
            )

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        """Keep the probe from the first training batch."""
        if self.probe is None:
            self.set_probe(batch)

    def on_before_optimizer_step(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer: torch.optim.Optimizer
    ) -> None:
        """At a traced optimizer step, take the ARM layers' gradient norms."""
        if (trainer.global_step + 1) % self.every_n_steps == 0:
            self._grads = self.grad_figures(pl_module)

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """After every ``every_n_steps``-th optimizer step, trace the probe, log the figures and keep them."""
        step = trainer.global_step
        if step % self.every_n_steps or step == 0 or (self.history and self.history[-1]["step"] == step):
            return
        with trainer.precision_plugin.forward_context():
            figures = self.probe_figures(pl_module)
        figures |= self._grads or {}
        self._grads = None
        for name, value in figures.items():
            pl_module.log(f"arm_trace/{name}", value, on_step=True, on_epoch=False)
        self.history.append({"step": step, **figures})

    def state_dict(self) -> dict[str, Any]:
        """The traces so far and the probe (on the CPU)."""
        probe = None if self.probe is None else move_data_to_device(self.probe, torch.device("cpu"))
        return {"history": [dict(entry) for entry in self.history], "probe": probe}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the traces and the probe (missing keys: no trace yet, a probe from the next training batch)."""
        self.history = [dict(entry) for entry in state_dict.get("history", [])]
        self.probe = state_dict.get("probe")
