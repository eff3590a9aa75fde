"""``ReadCostScheduler``: warm up the read cost of every learned-read ARM layer once per optimizer step."""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl

from lightning_icml26.callbacks._layer_schedule import LayerTargetSchedule
from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention, read_cost_at

__all__ = ["ReadCostScheduler"]


class ReadCostScheduler(LayerTargetSchedule):
    """Set ``budget_cost`` of every ``read_policy="learned"`` :class:`ARMAttention` from :func:`read_cost_at`.

    Before each training batch, the cost of optimizer step ``trainer.global_step`` is
    ``read_cost_at(step, total_steps, target, start, ramp)``: 0 for the first ``start`` fraction of training, then a
    linear ramp over the next ``ramp`` fraction up to the layer's target cost. This warm-up is our addition to the
    reconstruction of ARM (with a constant cost the learned read policy learns to read one cluster during MQAR's
    loss plateau and never recovers; see the ARM page of the docs). ``start=0, ramp=0`` keeps the constant cost.

    The target is ``budget_cost`` when given, otherwise each layer's own ``budget_cost`` as configured when
    training starts. Targets and the step count used are part of the checkpoint, and the step is the trainer's
    optimizer step, so a resumed run continues the schedule exactly where it stopped.

    Args:
        budget_cost: cost once warmed up (>= 0), or ``None`` for each layer's configured ``budget_cost``.
        start: fraction of training without cost, in [0, 1].
        ramp: fraction of training over which the cost grows to its target, in [0, 1].
        total_steps: optimizer steps of the whole run (>= 1), or ``None`` for the trainer's
            ``estimated_stepping_batches``.
        log: log the first layer's cost as ``read_cost``.
        freeze_policy: also set each layer's ``train_read_policy`` to ``cost > 0``: while the cost is 0 the
            policy keeps its initial, spread choices and receives a zero gradient (decoupled weight decay, as in
            ``AdamW``, still shrinks its weights by ``lr x weight_decay`` per step; our addition, off by default;
            without it the task alone trains the policy to read every cluster before the cost begins, which a
            large enough cost still undoes: see the ARM page of the docs).
        fixed_read_before_cost: also set each layer's ``policy_active`` to whether the cost phase has begun
            (``step / total_steps >= start``): before it every query reads every cluster, exactly the fixed read,
            and the policy is not used (zero gradient); from it the policy chooses and the cost ramps up. At the
            first step of the cost phase the optimizers' state of the policy's parameters is dropped, so the policy
            starts learning with fresh moments (a step count kept through the zero-gradient phase would inflate its
            first updates several times). The model is then trained like a fixed-read model that learns its read
            budget at the end (our addition, off by default; the benchmark's ``--branch-from-fixed``, with one
            difference: decoupled weight decay shrinks the policy's weights during the fixed phase, as with
            ``freeze_policy``). Exclusive with ``freeze_policy``. ``policy_active`` is not checkpointed: it is set
            again from the step before every training batch (a model loaded for evaluation has the policy on).

    Raises:
        ValueError: an argument out of range (naming it), an unbounded run with ``total_steps=None``, or a module
            without a learned-read ARM layer.

    Example:
        >>> sched = ReadCostScheduler(budget_cost=0.05, start=0.5, ramp=0.2, total_steps=100)
        >>> [round(sched.cost_at(s, 0.05), 4) for s in (0, 50, 60, 70, 99)]
        [0.0, 0.0, 0.025, 0.05, 0.05]
    """

    def __init__(
        self,
        budget_cost: float | None = None,
        start: float = 0.75,
        ramp: float = 0.1,
        total_steps: int | None = None,
        log: bool = True,
        freeze_policy: bool = False,
        fixed_read_before_cost: bool = False,
    ) -> None:
        if budget_cost is not None and (isinstance(budget_cost, bool) or not budget_cost >= 0):
            raise ValueError(f"budget_cost must be None or a number >= 0, got {budget_cost!r}")
        if total_steps is not None and (isinstance(total_steps, bool) or not isinstance(total_steps, int)):
            raise ValueError(f"total_steps must be None or an integer >= 1, got {total_steps!r}")
        # read_cost_at validates start, ramp and total_steps with errors naming them
        read_cost_at(0, 1 if total_steps is None else total_steps, 0.0, start, ramp)
        self.budget_cost = None if budget_cost is None else float(budget_cost)
        if not isinstance(freeze_policy, bool):
            raise ValueError(f"freeze_policy must be a bool, got {freeze_policy!r}")
        self.start, self.ramp, self.total_steps, self.log = float(start), float(ramp), total_steps, log
        if not isinstance(fixed_read_before_cost, bool):
            raise ValueError(f"fixed_read_before_cost must be a bool, got {fixed_read_before_cost!r}")
        if freeze_policy and fixed_read_before_cost:
            raise ValueError(
                "freeze_policy and fixed_read_before_cost both decide the read before the cost phase; set one"
            )
        self.freeze_policy, self.fixed_read_before_cost = freeze_policy, fixed_read_before_cost
        self.targets: list[float] | None = None
        self.run_steps: int | None = None
        self.cost: float | None = None

    def cost_at(self, step: int, target: float) -> float:
        """The cost of optimizer step ``step`` for a layer whose target is ``target``."""
        return read_cost_at(step, self.run_length(), target, self.start, self.ramp)

    def in_cost_phase(self, step: int) -> bool:
        """Whether optimizer step ``step`` is in the cost phase (``step / total_steps >= start``).

        Example:
            >>> sched = ReadCostScheduler(start=0.75, total_steps=100)
            >>> sched.in_cost_phase(74), sched.in_cost_phase(75)
            (False, True)
        """
        return step / self.run_length() >= self.start

    @staticmethod
    def learned_layers(pl_module: pl.LightningModule) -> list[ARMAttention]:
        """The module's ARM layers with ``read_policy="learned"``, in ``modules()`` order.

        Raises:
            ValueError: when there is none, naming the ARM layers found and their read policies.
        """
        arm = [m for m in pl_module.modules() if isinstance(m, ARMAttention)]
        learned = [m for m in arm if m.read_policy == "learned"]
        if not learned:
            policies = sorted({m.read_policy for m in arm})
            raise ValueError(
                f"{type(pl_module).__name__} has no ARMAttention with read_policy='learned' for ReadCostScheduler "
                f"(found {len(arm)} ARM layer(s), read policies {policies}); set read_policy='learned' or drop "
                "the callback"
            )
        return learned

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        """Resolve the run length and, unless restored from a checkpoint, each layer's target cost."""
        layers = self.learned_layers(pl_module)
        self.resolve(
            trainer, self.budget_cost, [float(layer.budget_cost) for layer in layers], "learned-read ARM layer(s)"
        )

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        """Apply this optimizer step's cost to every learned-read ARM layer."""
        if self.targets is None:
            self.on_fit_start(trainer, pl_module)
        assert self.targets is not None
        step = trainer.global_step
        costs = [self.cost_at(step, target) for target in self.targets]
        in_phase = self.in_cost_phase(step)
        layers = self.learned_layers(pl_module)
        for layer, cost in zip(layers, costs, strict=True):
            layer.budget_cost = cost
            if self.freeze_policy:
                layer.train_read_policy = cost > 0
            if self.fixed_read_before_cost:
                layer.policy_active = in_phase
        if self.fixed_read_before_cost and in_phase and step > 0 and not self.in_cost_phase(step - 1):
            self._drop_policy_state(trainer, layers)
        self.cost = costs[0]
        if self.log:
            pl_module.log("read_cost", self.cost, on_step=True, on_epoch=False)

    @staticmethod
    def _drop_policy_state(trainer: pl.Trainer, layers: list[ARMAttention]) -> None:
        """Forget every optimizer's state of the layers' policy parameters (fresh moments and step count)."""
        params = [p for layer in layers if layer.policy is not None for p in layer.policy.parameters()]
        for optimizer in trainer.optimizers:
            for param in params:
                optimizer.state.pop(param, None)
