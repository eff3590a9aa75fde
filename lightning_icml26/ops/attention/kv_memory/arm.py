"""``ARMAttention`` (experimental, inspired by ARM): causal attention over an exact window plus a routed memory.

Only the paper's abstract is public, so every choice below is a reconstruction; the open ones are listed in the
class docstring. Tensors follow the project's layout ``(batch, seq, heads, head_dim)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lightning_icml26.ops.attention.kv_memory.arm_memory import (
    gate_from_old,
    gumbel_select,
    joint_read,
    masked_softmax,
    rank_desc,
    slot_write,
    write_gate,
)
from lightning_icml26.ops.attention.kv_memory.decode_check import check_decode_step

__all__ = ["ARM_READ_POLICIES", "ARM_WRITE_MODES", "ARMAttention", "ARMCache", "read_cost_at"]

ARM_READ_POLICIES = ("fixed", "top_p", "learned")
ARM_WRITE_MODES = ("every_token", "on_eviction")


@dataclass
class _ARMRing:
    """Preallocated decode state behind ``ARMAttention.step(..., inplace=True)``.

    ``kv`` rows are the ``M`` slots, then a window area of ``2 W`` rows in which the window is ``[start, start + W)``;
    columns are keys then values. A step writes one slot row and one window row in place; once the window reaches
    the end of the area its ``W - 1`` kept rows move to the front (one copy every ``W + 1`` steps). ``valid`` marks
    the occupied slots and the area rows that hold a window token (stale rows are never read).
    """

    kv: Tensor  # (B, H, M + 2 W, 2 d)
    valid: Tensor  # (B, H, 1, M + 2 W) bool
    usage: Tensor  # (B, H, M)
    keys: Tensor  # views of kv and valid kept for the step: the key columns,
    values: Tensor  # the value columns,
    keys_t: Tensor  # the keys transposed (B, H, d, M + 2 W),
    area: Tensor  # and the rows' validity per sequence (B, M + 2 W)
    start: int
    full: bool  # every window position holds a token (it stays so)
    views: tuple[Tensor, ...] = ()  # the cache fields last set from this ring (a replaced field rebuilds it)


@dataclass
class ARMCache:
    """Constant-size decode state of one :class:`ARMAttention` layer.

    Attributes:
        mem_k: ``(B, H, M, d)`` slot keys.
        mem_v: ``(B, H, M, d)`` slot values.
        occupied: ``(B, H, M)`` bool, slots written at least once.
        usage: ``(B, H, M)`` write mass per slot in [0, 1): the gated merge of a constant 1, ``u <- (1 - g) u + g``
            at each write (what ``usage_penalty`` routes by; tracked, and not counted as KV bytes, in every
            configuration).
        win_k: ``(B, H, W, d)`` keys of the last ``W`` tokens, oldest first.
        win_v: ``(B, H, W, d)`` their values.
        win_valid: ``(B, W)`` bool, which window positions hold a token.
        position: tokens seen so far.
        signature: the configuration that made the cache (checked by :meth:`ARMAttention.step`).

    After ``ARMAttention.step(..., inplace=True)`` the tensors are views of one preallocated buffer, updated in place
    by the next in-place step (its window area holds ``W`` rows more than the window, not counted by :meth:`nbytes`).
    """

    mem_k: Tensor
    mem_v: Tensor
    occupied: Tensor
    usage: Tensor
    win_k: Tensor
    win_v: Tensor
    win_valid: Tensor
    position: int
    signature: tuple[int | str, ...]
    _ring: _ARMRing | None = field(default=None, repr=False, compare=False)

    def nbytes(self) -> int:
        """Bytes of the key/value tensors held (memory slots plus window): ``2 (M + W) B H d`` elements."""
        return sum(t.numel() * t.element_size() for t in (self.mem_k, self.mem_v, self.win_k, self.win_v))

    @property
    def batch_size(self) -> int:
        """Sequences held."""
        return self.mem_k.shape[0]


def read_cost_at(step: int, total_steps: int, budget_cost: float, start: float = 0.0, ramp: float = 0.0) -> float:
    """Read cost of the learned read policy at a training step, with an optional warm-up (our addition).

    The cost is 0 for the first ``start`` fraction of training, then grows linearly to ``budget_cost`` over the
    next ``ramp`` fraction and stays there: ``budget_cost x clamp((step / total_steps - start) / ramp, 0, 1)``
    (a step function at ``start`` when ``ramp`` is 0). ``start=0, ramp=0`` (the default) is the constant cost of
    the reconstruction. Set it on every ARM layer before each training step (``layer.budget_cost = ...``).

    Why: on MQAR the task's loss stays on a plateau for most of training, so reading more clusters earns nothing
    yet while the cost always pushes towards the smallest budget; with Adam this small but consistent gradient
    moves the policy at the full learning rate and it reads one cluster for every query long before the model
    can use its memory (see docs/arm.md). Without cost, the policy is trained by the task alone until ``start``.

    Args:
        step: training step, >= 0.
        total_steps: steps of the whole run, >= 1.
        budget_cost: the cost once warmed up (``ARMAttention``'s ``budget_cost``), >= 0.
        start: fraction of training without cost, in [0, 1].
        ramp: fraction of training over which the cost grows to ``budget_cost``, in [0, 1].

    Returns:
        The cost for this step.

    Example:
        >>> [round(read_cost_at(s, 100, 0.05, start=0.5, ramp=0.2), 4) for s in (0, 50, 60, 70, 99)]
        [0.0, 0.0, 0.025, 0.05, 0.05]
        >>> read_cost_at(10, 100, 0.05)
        0.05
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"step must be an integer >= 0, got {step!r}")
    _positive_int("total_steps", total_steps, 1)
    if not budget_cost >= 0:
        raise ValueError(f"budget_cost must be >= 0, got {budget_cost!r}")
    for name, value in (("start", start), ("ramp", ramp)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    frac = step / total_steps - start
    if frac < 0:
        return 0.0
    return float(budget_cost) * (1.0 if ramp == 0 else min(1.0, frac / ramp))


def _positive_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


class ARMAttention(nn.Module):
    """Attention with a routed, fixed-size key/value memory (experimental; inspired by ARM, ICML 2026).

    Each head keeps an exact window of the last ``window`` tokens and ``num_slots`` memory slots grouped in
    ``num_clusters`` clusters. A token is written by a two-level router (cluster, then slot within the cluster;
    straight-through ``gumbel_softmax(hard=True)`` in training, argmax in eval) and merged into its slot with a
    sigmoid gate ``g = sigmoid(w_g·[k ; M_K[slot] ; v] + b_g)``. A query scores clusters by ``q·centroid``, picks
    some of them (``read_policy``) and attends with one softmax over the window and the occupied slots of the
    chosen clusters. The decode cache has the same size whatever the context length.

    Reconstruction choices (the paper publishes only its abstract):
        * ``write_mode="on_eviction"`` writes a token when it leaves the window (with ``window=0``, at once);
          ``"every_token"`` writes each token when it arrives, so recent tokens are seen twice.
        * Writes come before the read of the same step; never-written slots are masked out, and the first
          write into an empty slot still goes through the gate (it scales the stored key by ``g``).
        * Centroids are the mean key of a cluster's occupied slots; empty clusters are never read.
        * ``"top_p"`` reads clusters in decreasing centroid score until their softmax mass reaches ``top_p``
          (at most ``read_clusters``); ``"learned"`` picks a budget in ``{1, 2, 4, ..., read_clusters}`` with
          a small MLP on ``[q, router entropy, layer_idx]``, straight-through Gumbel in training (the output is
          the chosen budget's read, gradients flow to the policy through the relaxation) and argmax in eval;
          its cost ``budget_cost x E[slots read] / num_slots`` is added to :attr:`last_aux_loss`.
        * "Slots read" counts every slot of the chosen clusters (``k_read x M / C``), occupied or not.
        * The optional load-balancing loss is the Switch-Transformer form ``C x sum_c f_c P_c`` on the cluster
          router. No positional encoding is applied here (slots carry no position).
        * Our additions (off by default; the reconstruction already has a cluster-level MoE-style balance loss, applying
          it per slot and the noise factor are our choice): ``slot_balance_weight`` adds the same Switch form over the
          ``M`` slots of the two-level router, ``M x sum_m f_m P_m`` with ``f_m`` the (detached) fraction of a
          sequence's tokens routed to slot ``m`` and ``P_m = p(cluster) p(slot | cluster)`` their mean joint routing
          probability, taken per sequence and head (so tokens of one sequence sharing a slot are penalised) and
          averaged; it is 1 under uniform use and grows as a sequence piles onto few slots. The keys enter it detached:
          it trains the routers, not the keys.
          ``usage_penalty`` (``beta``) makes the write router aware of what each slot already holds, the "per-slot
          usage counters" the reconstruction leaves optional, in a form of our own: each slot keeps its write mass
          ``u`` (the gated merge of a constant 1), and a token of importance ``i = sigmoid(w_new·k + w_val·v + b_g)``
          (its write gate without the slot term, detached) is routed on the cluster logits minus
          ``beta i min_cluster(u)`` (the penalty of the cluster's freest slot) and the slot logits minus
          ``beta i u``: a token the gate deems worth storing avoids slots that already hold something, a token it
          would barely write keeps its own routing. 0 (the default) routes by the keys alone, as before, with the
          vectorised router; above 0 the router runs inside the write scan, one step per token.
          ``noise_scale`` multiplies the training-time Gumbel noise (see
          :func:`~lightning_icml26.ops.attention.kv_memory.arm_memory.gumbel_select`): ``tau`` does not change the hard
          choice, ``noise_scale`` does, and 0 routes by argmax in training while the router keeps its
          straight-through gradient.
          The learned policy's cost can be warmed up with :func:`read_cost_at` (set ``budget_cost`` before each
          training step): with a constant cost the policy reads one cluster for every query before the model has
          learned to use its memory (the cost's gradient is the only consistent one during the task's loss
          plateau), and the model then learns with that read. ``train_read_policy = False`` (set by
          :class:`~lightning_icml26.callbacks.ReadCostScheduler` while the cost is 0, with
          ``freeze_policy=True``) keeps the policy's initial choices and gives its MLP a zero gradient, so the
          model trains under a spread of read budgets. On the diagnostic it is not needed at a large cost: at
          ``budget_cost=2`` a policy that had learned, cost-free, to read everything moved within 100 steps of
          the cost starting and read fewer slots than the frozen one (docs/arm.md).
        * The parallel form scans the writes token by token (O(T) small steps on the routed slot only,
          vectorised over batch and heads: the gate reads the slot's old key, so the scan is sequential), keeps
          the value written at each step, and reads through ``(T x T)`` score and weight matrices indexed by each
          slot's last write, so it costs like dense attention plus the scan. Its straight-through gradient
          reaches the router through the chosen slot's one-hot entry only (the "leave unchanged" terms of the
          other slots carry no router gradient there); the decode form's update is the full
          ``(1 - g z) M + g z x``. Both give identical values.

    Args:
        num_heads: heads ``H`` (q, k and v all have ``H`` heads).
        head_dim: ``d``.
        num_slots: memory slots ``M`` per head.
        num_clusters: clusters ``C``; must divide ``num_slots``.
        window: exact recent window ``W`` >= 0.
        tau: Gumbel-Softmax temperature > 0 (settable, see ``GumbelTemperatureScheduler``).
        read_policy: ``"fixed"``, ``"top_p"`` or ``"learned"``.
        read_clusters: largest number of clusters a query reads (the fixed budget); default ``num_clusters``.
        top_p: mass threshold of ``"top_p"``, in (0, 1].
        write_mode: ``"on_eviction"`` or ``"every_token"``.
        budget_cost: lambda of the learned policy's read cost (a plain attribute: a schedule such as
            :func:`read_cost_at` may change it between steps).
        balance_weight: weight of the cluster load-balancing loss (0 disables it).
        slot_balance_weight: weight of the slot load-balancing loss (our addition; 0 disables it).
        noise_scale: factor >= 0 on the training-time Gumbel noise (our addition; settable; 1 is standard).
        usage_penalty: ``beta >= 0``, how strongly a write avoids used slots (our addition; 0 disables it).
        layer_idx: layer id fed to the learned policy.
        policy_hidden: hidden width of the policy MLP.
        initial_full_read: ``None`` (default PyTorch initialisation) or a probability ``p`` in (0, 1): the policy's
            output layer starts with zero weights and a bias giving every query probability ``p`` of the largest
            budget (the fixed read) and ``(1 - p) / (n - 1)`` of each other one, so training starts close to the
            fixed read (our addition; ``read_policy="learned"`` only).

    Attributes:
        generator: optional ``torch.Generator`` for the Gumbel noise (``None``: the global RNG).
        last_aux_loss: read-cost plus load-balancing loss of the last call (add it to the training loss).
        last_slots_read: mean slots read per query in the last call.
        train_read_policy: ``True`` (default): the learned policy trains through its relaxation and cost.
            ``False``: its logits are detached (its MLP receives an exact zero gradient, so DDP still reduces
            every parameter) while its choices still select the read.
        policy_active: ``True`` (default): the learned policy chooses each query's budget. ``False``: the policy is
            bypassed and every query reads ``read_clusters`` clusters, exactly the fixed read (no read cost; the MLP
            stays in the graph with an exact zero gradient). Set by
            :class:`~lightning_icml26.callbacks.ReadCostScheduler` with ``fixed_read_before_cost=True`` (our
            addition): the model trains on the fixed read until the cost phase, then the policy learns.

    Example:
        >>> attn = ARMAttention(num_heads=2, head_dim=8, num_slots=8, num_clusters=2, window=4).eval()
        >>> q, k, v = torch.randn(3, 1, 10, 2, 8).unbind(0)
        >>> attn(q, k, v).shape
        torch.Size([1, 10, 2, 8])
        >>> out, cache = attn.prefill(q[:, :9], k[:, :9], v[:, :9])
        >>> step_out, cache = attn.step(q[:, 9:], k[:, 9:], v[:, 9:], cache)
        >>> cache.position, cache.mem_k.shape
        (10, torch.Size([1, 2, 8, 8]))
    """

    def __init__(
        self,
        num_heads: int,
        head_dim: int,
        num_slots: int = 64,
        num_clusters: int = 8,
        window: int = 32,
        tau: float = 1.0,
        read_policy: str = "fixed",
        read_clusters: int | None = None,
        top_p: float = 0.9,
        write_mode: str = "on_eviction",
        budget_cost: float = 0.01,
        balance_weight: float = 0.0,
        layer_idx: int = 0,
        policy_hidden: int = 32,
        slot_balance_weight: float = 0.0,
        noise_scale: float = 1.0,
        initial_full_read: float | None = None,
        usage_penalty: float = 0.0,
    ) -> None:
        super().__init__()
        self.num_heads = _positive_int("num_heads", num_heads, 1)
        self.head_dim = _positive_int("head_dim", head_dim, 1)
        self.num_slots = _positive_int("num_slots", num_slots, 1)
        self.num_clusters = _positive_int("num_clusters", num_clusters, 1)
        if num_slots % num_clusters:
            raise ValueError(f"num_slots={num_slots} must be divisible by num_clusters={num_clusters}")
        if isinstance(window, bool) or not isinstance(window, int) or window < 0:
            raise ValueError(f"window must be an integer >= 0, got {window!r}")
        self.window = window
        if read_policy not in ARM_READ_POLICIES:
            raise ValueError(f"read_policy must be one of {ARM_READ_POLICIES}, got {read_policy!r}")
        if write_mode not in ARM_WRITE_MODES:
            raise ValueError(f"write_mode must be one of {ARM_WRITE_MODES}, got {write_mode!r}")
        read_clusters = num_clusters if read_clusters is None else read_clusters
        _positive_int("read_clusters", read_clusters, 1)
        if read_clusters > num_clusters:
            raise ValueError(f"read_clusters must be <= num_clusters={num_clusters}, got {read_clusters!r}")
        if not 0.0 < float(top_p) <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
        if budget_cost < 0 or balance_weight < 0:
            raise ValueError(f"budget_cost and balance_weight must be >= 0, got {budget_cost!r}, {balance_weight!r}")
        self.read_policy, self.write_mode = read_policy, write_mode
        self.read_clusters, self.top_p = read_clusters, float(top_p)
        self.budget_cost, self.balance_weight, self.layer_idx = float(budget_cost), float(balance_weight), layer_idx
        if isinstance(slot_balance_weight, bool) or not isinstance(slot_balance_weight, (int, float)):
            raise TypeError(f"slot_balance_weight must be a number >= 0, got {slot_balance_weight!r}")
        if not slot_balance_weight >= 0:
            raise ValueError(f"slot_balance_weight must be >= 0, got {slot_balance_weight!r}")
        self.slot_balance_weight = float(slot_balance_weight)
        if isinstance(usage_penalty, bool) or not isinstance(usage_penalty, (int, float)):
            raise TypeError(f"usage_penalty must be a number >= 0, got {usage_penalty!r}")
        if not (usage_penalty >= 0 and math.isfinite(usage_penalty)):
            raise ValueError(f"usage_penalty must be a finite number >= 0, got {usage_penalty!r}")
        self.usage_penalty = float(usage_penalty)
        self.tau = tau
        self.noise_scale = noise_scale
        self.slots_per_cluster = num_slots // num_clusters
        budgets = [b for b in (2**i for i in range(read_clusters.bit_length())) if b <= read_clusters]
        self.budgets = budgets + ([read_clusters] if budgets[-1] != read_clusters else [])
        std = head_dim**-0.5
        self.w_cluster = nn.Parameter(torch.randn(num_heads, head_dim, num_clusters) * std)
        self.w_slot = nn.Parameter(torch.randn(num_heads, head_dim, num_slots) * std)
        self.gate_w = nn.Parameter(torch.zeros(num_heads, 3 * head_dim))
        self.gate_b = nn.Parameter(torch.zeros(num_heads))
        self.policy = (
            nn.Sequential(
                nn.Linear(head_dim + 2, policy_hidden), nn.GELU(), nn.Linear(policy_hidden, len(self.budgets))
            )
            if read_policy == "learned"
            else None
        )
        if initial_full_read is not None:
            self._init_full_read(initial_full_read)
        self.generator: torch.Generator | None = None
        self.train_read_policy = True
        self.policy_active = True
        self.last_aux_loss: Tensor = torch.zeros(())
        self.last_slots_read: Tensor = torch.zeros(())
        self._constants: dict[tuple[torch.dtype, torch.device], tuple[Tensor, Tensor, Tensor]] = {}
        self._full_mask: tuple[Tensor, int] | None = None
        self._fused_router: tuple[tuple[object, ...], Tensor] | None = None

    def _init_full_read(self, prob: float) -> None:
        """Start the learned policy at probability ``prob`` on the largest budget for every query (zeroed output)."""
        if self.policy is None:
            raise ValueError(f"initial_full_read applies to read_policy='learned' only, got {self.read_policy!r}")
        if isinstance(prob, bool) or not isinstance(prob, (int, float)) or not 0.0 < prob < 1.0:
            raise ValueError(f"initial_full_read must be a probability in (0, 1) or None, got {prob!r}")
        out = self.policy[-1]
        assert isinstance(out, nn.Linear)
        rest = len(self.budgets) - 1
        with torch.no_grad():
            out.weight.zero_()
            out.bias.fill_(math.log((1.0 - prob) / rest) if rest else 0.0)
            out.bias[-1] = math.log(prob) if rest else 0.0

    @property
    def tau(self) -> float:
        """Gumbel-Softmax temperature (> 0)."""
        return self._tau

    @tau.setter
    def tau(self, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"tau must be a number > 0, got {value!r}")
        self._tau = float(value)

    @property
    def noise_scale(self) -> float:
        """Factor (>= 0) on the training-time Gumbel noise of the routers (our addition; 1 is standard)."""
        return self._noise_scale

    @noise_scale.setter
    def noise_scale(self, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"noise_scale must be a number >= 0, got {value!r}")
        if not value >= 0:
            raise ValueError(f"noise_scale must be >= 0, got {value!r}")
        self._noise_scale = float(value)

    @property
    def signature(self) -> tuple[int | str, ...]:
        """What a decode cache must match: heads, head dim, slots, clusters, window and write mode."""
        return (self.num_heads, self.head_dim, self.num_slots, self.num_clusters, self.window, self.write_mode)

    def _route_logits(self, k: Tensor) -> tuple[Tensor, Tensor]:
        """Cluster and slot logits ``(B, H, T, C)``, ``(B, H, T, M)`` of keys ``(B, H, T, d)``.

        :meth:`route` and the no-grad decode step both take them from here, so both route on the same values.
        """
        wc, ws = self.w_cluster, self.w_slot
        if torch.is_grad_enabled():
            fused = torch.cat([wc, ws], dim=-1)
        else:  # the same concatenation, kept while the weights are unchanged
            key = (wc._version, ws._version, wc.data_ptr(), ws.data_ptr(), id(wc), id(ws), wc.dtype, wc.device)
            if self._fused_router is None or self._fused_router[0] != key:
                with torch.inference_mode(False):  # a plain tensor, usable outside inference mode too
                    self._fused_router = (key, torch.cat([wc, ws], dim=-1))
            fused = self._fused_router[1]
        logits = torch.matmul(k, fused)
        return logits[..., : self.num_clusters], logits[..., self.num_clusters :]

    def route(self, k: Tensor) -> tuple[Tensor, Tensor]:
        """Slot one-hots ``(B, H, T, M)`` for keys ``(B, H, T, d)``, and the cluster one-hots ``(B, H, T, C)``."""
        r1, r2 = self._route_logits(k)
        z1 = gumbel_select(r1, self.tau, self.training, self.generator, self.noise_scale)
        r2 = r2.unflatten(-1, (self.num_clusters, -1))
        z2 = gumbel_select((z1.unsqueeze(-1) * r2).sum(-2), self.tau, self.training, self.generator, self.noise_scale)
        return (z1.unsqueeze(-1) * z2.unsqueeze(-2)).flatten(-2), z1

    def route_with_usage(self, k: Tensor, v: Tensor, usage: Tensor) -> tuple[Tensor, Tensor]:
        """One write's routing under ``usage_penalty``: slot one-hots ``(B, H, M)`` and cluster one-hots ``(B, H, C)``.

        Args:
            k: ``(B, H, d)`` keys to write.
            v: ``(B, H, d)`` their values (they enter the token's importance only).
            usage: ``(B, H, M)`` write mass of each slot before this write (:attr:`ARMCache.usage`).

        Example:
            >>> attn = ARMAttention(num_heads=1, head_dim=4, num_slots=4, num_clusters=1, window=0,
            ...                     usage_penalty=100.0).eval()
            >>> k, v = torch.randn(2, 1, 1, 4).unbind(0)
            >>> first = attn.route_with_usage(k, v, torch.zeros(1, 1, 4))[0].argmax(-1).item()
            >>> used = torch.zeros(1, 1, 4)
            >>> used[..., first] = 0.9
            >>> attn.route_with_usage(k, v, used)[0].argmax(-1).item() != first  # the used slot is avoided
            True
        """
        d = self.head_dim
        gate_x = torch.einsum("bhd,hd->bh", k, self.gate_w[:, :d]) + torch.einsum(
            "bhd,hd->bh", v, self.gate_w[:, 2 * d :]
        )
        pen = self.usage_penalty * torch.sigmoid(gate_x + self.gate_b).detach()
        used = usage.detach().unflatten(-1, (self.num_clusters, -1))
        r1 = torch.einsum("bhd,hdc->bhc", k, self.w_cluster) - pen[..., None] * used.amin(-1)
        z1 = gumbel_select(r1, self.tau, self.training, self.generator, self.noise_scale)
        r2 = torch.einsum("bhd,hdm->bhm", k, self.w_slot).unflatten(-1, (self.num_clusters, -1))
        r2 = r2 - pen[..., None, None] * used
        z2 = gumbel_select((z1.unsqueeze(-1) * r2).sum(-2), self.tau, self.training, self.generator, self.noise_scale)
        return (z1.unsqueeze(-1) * z2.unsqueeze(-2)).flatten(-2), z1

    def slot_probs(self, k: Tensor) -> Tensor:
        """Joint routing probabilities ``p(cluster) p(slot | cluster)`` ``(B, H, T, M)`` for keys ``(B, H, T, d)``."""
        p1 = torch.softmax(torch.einsum("bhtd,hdc->bhtc", k, self.w_cluster), dim=-1)
        r2 = torch.einsum("bhtd,hdm->bhtm", k, self.w_slot).unflatten(-1, (self.num_clusters, -1))
        return (p1.unsqueeze(-1) * torch.softmax(r2, dim=-1)).flatten(-2)

    def slot_balance_loss(self, k: Tensor, z: Tensor) -> Tensor:
        """Switch-style balance over slots, per sequence and head: ``mean_{b,h} M sum_m f_m P_m`` (our addition).

        Args:
            k: ``(B, H, T, d)`` keys that were routed.
            z: ``(B, H, T, M)`` their one-hot slot choices (only the counts are used; no gradient through them).
                The keys are detached too: the loss trains the two routers only.

        Returns:
            A scalar, 1 when every sequence spreads its tokens and its routing mass uniformly over the slots.

        Example:
            >>> attn = ARMAttention(num_heads=1, head_dim=4, num_slots=4, num_clusters=2, window=0)
            >>> with torch.no_grad():
            ...     _ = attn.w_cluster.zero_(), attn.w_slot.zero_()  # uniform routing probabilities
            >>> k = torch.randn(1, 1, 6, 4)
            >>> round(attn.slot_balance_loss(k, attn.route(k)[0]).item(), 6)
            1.0
        """
        frac = z.detach().mean(dim=2)
        mass = self.slot_probs(k.detach()).mean(dim=2)
        return self.num_slots * (frac * mass).sum(-1).mean()

    def _balance_loss(self, k: Tensor, z1: Tensor) -> Tensor:
        probs = torch.softmax(torch.einsum("bhtd,hdc->bhtc", k, self.w_cluster), dim=-1)
        frac, mass = z1.mean(dim=(0, 2)), probs.mean(dim=(0, 2))
        return self.num_clusters * (frac * mass).sum(-1).mean()

    def _read(
        self, q: Tensor, mem_scores: Tensor, occ: Tensor, attend: Callable[[Tensor], Tensor]
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Read for queries ``(B, H, T, d)`` given their scaled scores ``(B, H, T, M)`` against the slots they see.

        ``occ`` (broadcastable to the scores) marks the occupied slots; ``attend`` maps the slots a query reads,
        ``(B, H, T, M)`` bool, to its output (one softmax over them and the query's window). Returns the output, the
        slots read per query and the read cost.
        """
        per = self.slots_per_cluster
        zero = q.new_zeros(())
        if self.read_policy == "fixed" and self.read_clusters == self.num_clusters:
            # every cluster is chosen: the occupied slots, without ranking the clusters
            return (
                attend(occ.expand_as(mem_scores)),
                mem_scores.new_full(mem_scores.shape[:-1], float(self.num_slots)),
                zero,
            )
        count = occ.unflatten(-1, (self.num_clusters, per)).sum(-1)
        summed = (mem_scores * occ).unflatten(-1, (self.num_clusters, per)).sum(-1)
        cscore = summed / count.clamp_min(1).to(summed.dtype)  # q . centroid = mean of q . slot
        has = count > 0
        rank = rank_desc(cscore.masked_fill(~has, float("-inf")))

        def read(chosen: Tensor) -> Tensor:
            return attend(occ & chosen.repeat_interleave(per, dim=-1))

        if self.read_policy == "fixed":
            chosen = rank < self.read_clusters
            return read(chosen), chosen.sum(-1).to(q.dtype) * per, zero
        probs = masked_softmax(cscore, has)
        if self.read_policy == "top_p":
            ordered = probs.gather(-1, torch.argsort(rank, dim=-1))
            before = (torch.cumsum(ordered, dim=-1) - ordered).gather(-1, rank)
            chosen = (before < self.top_p) & (rank < self.read_clusters)
            return read(chosen), chosen.sum(-1).to(q.dtype) * per, zero
        assert self.policy is not None
        entropy = -(probs * probs.clamp_min(torch.finfo(probs.dtype).tiny).log()).sum(-1, keepdim=True)
        layer = torch.full_like(entropy, float(self.layer_idx))
        logits = self.policy(torch.cat([q, entropy, layer], dim=-1))
        if not self.policy_active:  # the fixed read; the MLP stays in the graph with an exact zero gradient
            chosen = rank < self.read_clusters
            return read(chosen) + 0.0 * logits.sum(), chosen.sum(-1).to(q.dtype) * per, zero
        if not self.train_read_policy:
            logits = logits.detach() + 0.0 * logits  # exact zero gradient, parameters stay in the graph
        choice = gumbel_select(logits, self.tau, self.training, self.generator)
        sizes = torch.tensor(self.budgets, dtype=q.dtype, device=q.device) * per
        out = sum(choice[..., i, None] * read(rank < b) for i, b in enumerate(self.budgets))
        cost = self.budget_cost * (torch.softmax(logits, dim=-1) * sizes).sum(-1).mean() / self.num_slots
        return out, (choice * sizes).sum(-1), cost  # type: ignore[return-value]

    def _parallel(self, q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, ARMCache]:
        qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))
        b, h, n, d = qh.shape
        lag = 0 if self.write_mode == "every_token" else self.window
        routed_in_scan = self.usage_penalty > 0
        if not routed_in_scan:
            z, z1 = self.route(kh)
            slot_of = z.argmax(-1)
            zcs = z.gather(-1, slot_of.unsqueeze(-1)).unbind(2)  # 1 in value, straight-through gradient
            idxs = slot_of[..., None, None].expand(b, h, n, 1, 2 * d).unbind(2)
        mem = kh.new_zeros(b, h, self.num_slots, 2 * d)  # keys and values side by side: one gather/scatter
        usage = kh.new_zeros(b, h, self.num_slots)
        kvs = torch.cat([kh, vh], dim=-1).unbind(2)  # unbind, not indexing: one backward op instead of T
        khs, vhs = (kh.unbind(2), vh.unbind(2)) if routed_in_scan else ((), ())
        w_new, w_old = self.gate_w[:, :d], self.gate_w[:, d : 2 * d]
        w_val = self.gate_w[:, 2 * d :]
        gate_x = (
            torch.einsum("bhtd,hd->bht", kh, w_new) + torch.einsum("bhtd,hd->bht", vh, w_val) + self.gate_b[:, None]
        )
        gate_xs = gate_x.unbind(2)
        written = [kh.new_zeros(b, h, 2 * d)] * min(lag, n)
        scan_z: list[Tensor] = []
        scan_z1: list[Tensor] = []
        for src in range(n - lag):  # the write of step src + lag: only the routed slot changes
            if routed_in_scan:
                zt, z1t = self.route_with_usage(khs[src], vhs[src], usage)
                scan_z.append(zt)
                scan_z1.append(z1t)
                pick = zt.argmax(-1, keepdim=True)
                zc, idx = zt.gather(-1, pick), pick[..., None].expand(b, h, 1, 2 * d)
            else:
                zc, idx = zcs[src], idxs[src]
            old = mem.gather(2, idx)[:, :, 0]
            g = torch.sigmoid(gate_xs[src] + (old[..., :d] * w_old).sum(-1)).unsqueeze(-1) * zc
            # under autocast the gate comes out in float32 and the projections in bf16/fp16: keep the memory's dtype
            new = ((1 - g) * old + g * kvs[src]).to(mem.dtype)
            mem = mem.scatter(2, idx, new.unsqueeze(2))
            used = usage.gather(2, idx[..., 0])
            usage = usage.scatter(2, idx[..., 0], (used + g.detach() * (1 - used)).to(usage.dtype))
            written.append(new)
        if routed_in_scan:  # tokens still in the window at the end are routed when they are written (decode)
            tail_z, tail_z1 = self.route(kh[:, :, len(scan_z) :])
            z = torch.cat([torch.stack(scan_z, dim=2), tail_z], dim=2) if scan_z else tail_z
            z1 = torch.cat([torch.stack(scan_z1, dim=2), tail_z1], dim=2) if scan_z1 else tail_z1
            slot_of = z.argmax(-1)
        mk, mv = mem[..., :d], mem[..., d:]
        nks, nvs = torch.stack(written, dim=2).split(d, dim=-1)  # value written at each step
        steps = torch.arange(n, device=kh.device)
        slot_at = torch.full_like(slot_of, -1)  # slot written at each step (-1: none)
        if lag < n:
            slot_at[:, :, lag:] = slot_of[:, :, : n - lag]
        hit = F.one_hot(slot_at.clamp_min(0), self.num_slots).bool() & (slot_at >= 0).unsqueeze(-1)
        last = torch.where(hit, steps[:, None], -1).cummax(dim=2).values  # step of each slot's last write
        occ, where = last >= 0, last.clamp_min(0)
        scale = self.head_dim**-0.5
        mem_scores = torch.matmul(qh, nks.transpose(-1, -2)).gather(-1, where) * scale

        def read_values(p: Tensor) -> Tensor:
            weights = torch.zeros(b, h, n, n, dtype=p.dtype, device=p.device).scatter_add(-1, where, p * occ)
            return torch.matmul(weights, nvs)

        diff = steps[:, None] - steps[None, :]
        win_valid = (diff >= 0) & (diff < self.window)
        win_scores = torch.matmul(qh, kh.transpose(-1, -2)) * scale
        out, slots, cost = self._read(
            qh, mem_scores, occ, lambda valid: joint_read(win_scores, win_valid, vh, mem_scores, valid, read_values)
        )
        aux = cost + (self.balance_weight * self._balance_loss(kh, z1) if self.balance_weight > 0 else 0.0)
        if self.slot_balance_weight > 0:
            aux = aux + self.slot_balance_weight * self.slot_balance_loss(kh, z)
        self.last_aux_loss, self.last_slots_read = aux, slots.detach().mean()
        keep = min(n, self.window)
        win_k, win_v = kh.new_zeros(b, h, self.window, d), kh.new_zeros(b, h, self.window, d)
        win_ok = torch.zeros(b, self.window, dtype=torch.bool, device=kh.device)
        if keep:
            win_k[:, :, self.window - keep :] = kh[:, :, n - keep :]
            win_v[:, :, self.window - keep :] = vh[:, :, n - keep :]
            win_ok[:, self.window - keep :] = True
        cache = ARMCache(mk, mv, occ[:, :, -1], usage, win_k, win_v, win_ok, n, self.signature)
        return out.transpose(1, 2), cache

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        """Parallel form over a whole sequence: q, k, v ``(B, T, H, d)`` -> ``(B, T, H, d)``."""
        self._check_qkv(q, k, v)
        return self._parallel(q, k, v)[0]

    def prefill(self, q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, ARMCache]:
        """The parallel form plus the decode cache after the last token."""
        self._check_qkv(q, k, v)
        return self._parallel(q, k, v)

    def empty_cache(
        self, batch: int, dtype: torch.dtype = torch.float32, device: torch.device | None = None
    ) -> ARMCache:
        """A cache before any token: empty memory and window."""
        h, d, m, w = self.num_heads, self.head_dim, self.num_slots, self.window
        zeros = torch.zeros(batch, h, m, d, dtype=dtype, device=device)
        win = torch.zeros(batch, h, w, d, dtype=dtype, device=device)
        occ = torch.zeros(batch, h, m, dtype=torch.bool, device=device)
        ok = torch.zeros(batch, w, dtype=torch.bool, device=device)
        usage = torch.zeros(batch, h, m, dtype=dtype, device=device)
        return ARMCache(zeros, zeros.clone(), occ, usage, win, win.clone(), ok, 0, self.signature)

    @property
    def can_step_inplace(self) -> bool:
        """Whether :meth:`step` accepts ``inplace=True`` now: eval mode, no autograd, fixed read, no usage penalty.

        Example:
            >>> attn = ARMAttention(num_heads=2, head_dim=8, num_slots=8, num_clusters=2, window=4)
            >>> attn.can_step_inplace
            False
            >>> with torch.no_grad():
            ...     attn.eval().can_step_inplace
            True
        """
        return (
            not (self.training or torch.is_grad_enabled()) and self.usage_penalty == 0 and self.read_policy == "fixed"
        )

    def step(self, q: Tensor, k: Tensor, v: Tensor, cache: ARMCache, inplace: bool = False) -> tuple[Tensor, ARMCache]:
        """Decode one token: q, k, v ``(B, 1, H, d)`` -> output ``(B, 1, H, d)`` and the updated cache.

        By default the cache handed in is left unchanged: in the new cache the window and the slots are views of one
        key and one value buffer ``[window ; slots]``, which the read attends in one SDPA call. Without autograd
        and with the fixed read policy (and ``usage_penalty=0``) the step takes a shorter path with the same values,
        bit for bit.

        ``inplace=True`` (eval, no autograd, fixed read, ``usage_penalty=0``) updates ``cache`` in place and returns
        it, like a preallocated KV cache: the first such step moves the state into one buffer (slots, then a window
        area of ``2 W`` rows), and each step then writes one slot row and one window row. The cache and its slot
        tensors are the same values as the default step's; the output equals it up to floating-point rounding
        (the softmax runs over the buffer's rows in another order).

        Example:
            >>> attn = ARMAttention(num_heads=2, head_dim=8, num_slots=8, num_clusters=2, window=4).eval()
            >>> q, k, v = torch.randn(3, 1, 12, 2, 8).unbind(0)
            >>> cache = attn.empty_cache(1)
            >>> with torch.no_grad():
            ...     for t in range(12):
            ...         out, same = attn.step(q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1], cache, inplace=True)
            >>> same is cache, cache.position, cache.win_k.shape
            (True, 12, torch.Size([1, 2, 4, 8]))
        """
        self._check_qkv(q, k, v)
        check_decode_step(q, cache, ARMCache, self.signature)
        fast = self.can_step_inplace
        if inplace:
            if not fast:
                raise ValueError(
                    "inplace=True needs eval mode without autograd, read_policy='fixed' and usage_penalty=0; got "
                    f"training={self.training}, grad enabled={torch.is_grad_enabled()}, "
                    f"read_policy={self.read_policy!r}, usage_penalty={self.usage_penalty}"
                )
            return self._inplace_step(q, k, v, cache)
        if fast:
            return self._inference_step(q, k, v, cache)
        qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))
        mk, mv, occ = cache.mem_k, cache.mem_v, cache.occupied
        if self.write_mode == "every_token" or self.window == 0:
            src_k, src_v, active = kh[:, :, 0], vh[:, :, 0], None
        else:
            src_k, src_v, active = cache.win_k[:, :, 0], cache.win_v[:, :, 0], cache.win_valid[:, 0]
        if self.usage_penalty > 0:
            z = self.route_with_usage(src_k, src_v, cache.usage)[0]
        else:
            z = self.route(src_k.unsqueeze(2))[0][:, :, 0]
        g = write_gate(mk, src_k, src_v, z, self.gate_w, self.gate_b).detach().unsqueeze(-1) * z.detach()
        if active is not None:
            g = g * active.to(g.dtype).view(-1, 1, 1)
        usage = torch.lerp(cache.usage, self._read_constants(q)[2], g)  # u + g (1 - u)
        mk, mv, occ = slot_write(mk, mv, occ, src_k, src_v, z, self.gate_w, self.gate_b, active)
        if self.window:
            mk = torch.cat([cache.win_k[:, :, 1:], kh, mk], dim=2)
            mv = torch.cat([cache.win_v[:, :, 1:], vh, mv], dim=2)
        return self._decode_read(cache, qh, mk, mv, occ, usage)

    def _decode_read(
        self,
        cache: ARMCache,
        qh: Tensor,
        keys: Tensor,
        values: Tensor,
        occ: Tensor,
        usage: Tensor,
        window_full: bool = False,
    ) -> tuple[Tensor, ARMCache]:
        """One decode step's read, shared by :meth:`step` and its no-grad fast path.

        Args:
            cache: the cache before the step (for the window's validity and the position).
            qh: ``(B, H, 1, d)`` the query.
            keys: ``(B, H, W + M, d)`` the slid window (oldest first, the new token last), then the written slots.
            values: ``(B, H, W + M, d)`` their values.
            occ: ``(B, H, M)`` occupied slots after the write.
            usage: ``(B, H, M)`` slot usage after the write.
            window_full: the caller knows every window position of ``cache`` holds a token (they still do after
                the slide, so its mask is reused).

        Returns:
            The output ``(B, 1, H, d)`` and the next cache, whose window and slots are views of ``keys``/``values``.
        """
        w = self.window
        win_ok = cache.win_valid if window_full or not w else F.pad(cache.win_valid[:, 1:], (0, 1), value=True)
        b, h = occ.shape[:2]

        def attend(mem_valid: Tensor) -> Tensor:
            # joint_read over the one buffer, in one SDPA call: a decode step always has a key to attend (the new
            # token ends the window; without a window it was just written and its cluster ranks first), so the
            # softmax over the valid keys is masked_softmax's
            if window_full:  # the same mask: every window position valid
                valid = F.pad(mem_valid, (w, 0), value=True)
            else:
                valid = torch.cat([win_ok.view(b, 1, 1, w).expand(b, h, 1, w), mem_valid], dim=-1)
            return F.scaled_dot_product_attention(qh, keys, values, attn_mask=valid)

        mem_occ = occ.unsqueeze(2)
        if self.read_policy == "fixed" and self.read_clusters == self.num_clusters:  # _read's shortcut, inlined
            slots, cost = self._read_constants(qh)[:2]
            out = attend(mem_occ)
        else:
            mem_scores = torch.matmul(qh, keys[:, :, w:].transpose(-1, -2)) * self.head_dim**-0.5
            out, per_query, cost = self._read(qh, mem_scores, mem_occ, attend)
            slots = per_query.detach().mean()
        self.last_aux_loss, self.last_slots_read = cost, slots
        mk, mv, win_k, win_v = keys[:, :, w:], values[:, :, w:], keys[:, :, :w], values[:, :, :w]
        new = ARMCache(mk, mv, occ, usage, win_k, win_v, win_ok, cache.position + 1, self.signature)
        return out.transpose(1, 2), new

    def _read_constants(self, like: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Constant tensors of the decode step: slots read by the fixed read of every cluster (``M``), 0 and 1."""
        key = (like.dtype, like.device)
        if key not in self._constants:
            with torch.inference_mode(False), torch.no_grad():  # plain tensors, usable in any mode
                values = tuple(
                    torch.full((), float(x), dtype=like.dtype, device=like.device) for x in (self.num_slots, 0, 1)
                )
            self._constants[key] = values  # type: ignore[assignment]
        return self._constants[key]

    def _window_full(self, cache: ARMCache) -> bool:
        """Whether every window position of ``cache`` holds a token.

        The check is skipped for the mask last seen full and unchanged since (a full window's mask passes from step
        to step as it is).
        """
        mask = cache.win_valid
        if not self.window:
            return True
        seen = self._full_mask
        if seen is not None and seen[0] is mask and not mask.is_inference() and mask._version == seen[1]:
            return True
        full = bool(mask.all())
        if full and not mask.is_inference():
            self._full_mask = (mask, mask._version)
        return full

    def _inference_step(self, q: Tensor, k: Tensor, v: Tensor, cache: ARMCache) -> tuple[Tensor, ARMCache]:
        """:meth:`step` without autograd, for the fixed read policy: the same values, bit for bit, in fewer ops.

        Only the routed slot row of each (batch, head) changes (the other rows of ``(1 - g z) M + g z x`` are ``M``
        exactly): it is gathered, merged with :func:`slot_write`'s gate arithmetic, and scattered into the new
        ``[window ; slots]`` buffer that one ``cat`` builds from the slid window and the old slots. The router takes
        the argmax of :meth:`route`'s logits without building one-hots, and the gate is computed once.
        """
        qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))
        b, h, d, w, per = qh.shape[0], self.num_heads, self.head_dim, self.window, self.slots_per_cluster
        evict = self.write_mode == "on_eviction" and w > 0
        full = self._window_full(cache)
        src_k, src_v = (cache.win_k[:, :, :1], cache.win_v[:, :, :1]) if evict else (kh, vh)
        r1, r2 = self._route_logits(src_k)
        cluster = r1.argmax(-1, keepdim=True)  # (B, H, 1, 1)
        slot = r2.view(b, h, self.num_clusters, per).gather(2, cluster.expand(b, h, 1, per)).argmax(-1, keepdim=True)
        slot = slot.add_(cluster, alpha=per)
        rows = slot.expand(b, h, 1, d)
        old_k, old_v = cache.mem_k.gather(2, rows), cache.mem_v.gather(2, rows)
        gate = gate_from_old(src_k, old_k, src_v, self.gate_w, self.gate_b)  # (B, H, 1)
        idx = slot[..., 0]  # (B, H, 1)
        hit: Tensor | bool = True
        if evict and not full:  # no token leaves a window that is not full yet: nothing is written
            active = cache.win_valid[:, :1].view(-1, 1, 1)
            gate = gate * active
            hit = cache.occupied.gather(2, idx) | active
        usage = cache.usage.scatter(2, idx, torch.lerp(cache.usage.gather(2, idx), self._read_constants(q)[2], gate))
        g = gate.unsqueeze(-1)  # (B, H, 1, 1)
        occ = cache.occupied.scatter(2, idx, hit)  # type: ignore[arg-type]
        new_k, new_v = torch.lerp(old_k, src_k, g), torch.lerp(old_v, src_v, g)
        if w:
            rows = rows + w
            keys = torch.cat([cache.win_k[:, :, 1:], kh, cache.mem_k], dim=2).scatter_(2, rows, new_k)
            values = torch.cat([cache.win_v[:, :, 1:], vh, cache.mem_v], dim=2).scatter_(2, rows, new_v)
        else:
            keys, values = cache.mem_k.scatter(2, rows, new_k), cache.mem_v.scatter(2, rows, new_v)
        return self._decode_read(cache, qh, keys, values, occ, usage, full)

    def _ring_of(self, cache: ARMCache) -> _ARMRing:
        """The cache's preallocated buffer, built (one copy) by its first in-place step or once a field is replaced."""
        ring = cache._ring
        fields = (cache.mem_k, cache.mem_v, cache.occupied, cache.usage, cache.win_k, cache.win_v, cache.win_valid)
        if (
            ring is not None
            and len(ring.views) == len(fields)
            and all(a is b for a, b in zip(ring.views, fields, strict=True))
        ):
            return ring
        b, h, m, d = cache.mem_k.shape
        w = self.window
        kv = cache.mem_k.new_zeros(b, h, m + 2 * w, 2 * d)
        kv[:, :, :m] = torch.cat([cache.mem_k, cache.mem_v], dim=-1)
        kv[:, :, m : m + w] = torch.cat([cache.win_k, cache.win_v], dim=-1)
        valid = torch.zeros(b, h, 1, m + 2 * w, dtype=torch.bool, device=kv.device)
        valid[:, :, 0, :m] = cache.occupied
        valid[:, :, 0, m : m + w] = cache.win_valid[:, None]
        keys, values, full = kv[..., :d], kv[..., d:], not w or bool(cache.win_valid.all())
        ring = _ARMRing(kv, valid, cache.usage.clone(), keys, values, keys.transpose(-1, -2), valid[:, 0, 0], 0, full)
        cache.mem_k, cache.mem_v, cache.occupied = kv[:, :, :m, :d], kv[:, :, :m, d:], valid[:, :, 0, :m]
        cache.usage, cache._ring = ring.usage, ring
        self._set_ring_window(cache, ring)
        return ring

    def _set_ring_window(self, cache: ARMCache, ring: _ARMRing) -> None:
        first, w = self.num_slots + ring.start, self.window
        cache.win_k, cache.win_v = ring.keys.narrow(2, first, w), ring.values.narrow(2, first, w)
        cache.win_valid = ring.area.narrow(1, first, w)
        ring.views = (cache.mem_k, cache.mem_v, cache.occupied, cache.usage, cache.win_k, cache.win_v, cache.win_valid)

    def _inplace_step(self, q: Tensor, k: Tensor, v: Tensor, cache: ARMCache) -> tuple[Tensor, ARMCache]:
        """:meth:`step` with ``inplace=True``: the write of :meth:`_inference_step` and a window slide, in place."""
        ring = self._ring_of(cache)
        kv, valid, usage = ring.kv, ring.valid, ring.usage
        b, h, d, m, w, per = (
            q.shape[0],
            self.num_heads,
            self.head_dim,
            self.num_slots,
            self.window,
            self.slots_per_cluster,
        )
        s = ring.start
        qh = q.transpose(1, 2)
        new = torch.cat([k, v], dim=-1).transpose(1, 2)  # (B, H, 1, 2 d)
        evict = self.write_mode == "on_eviction" and w > 0
        src = kv.narrow(2, m + s, 1) if evict else new
        src_k, src_v = src[..., :d], src[..., d:]
        r1, r2 = self._route_logits(src_k)
        cluster = r1.argmax(-1, keepdim=True)  # (B, H, 1, 1)
        slot = r2.view(b, h, self.num_clusters, per).gather(2, cluster.expand(b, h, 1, per)).argmax(-1, keepdim=True)
        slot = slot.add_(cluster, alpha=per)
        rows = slot.expand(b, h, 1, 2 * d)
        old = kv.gather(2, rows)
        gate = gate_from_old(src_k, old[..., :d], src_v, self.gate_w, self.gate_b)  # (B, H, 1)
        idx = slot[..., 0]
        occ = cache.occupied
        hit: Tensor | bool = True
        if evict and not ring.full:  # no token leaves a window that is not full yet: nothing is written
            active = cache.win_valid[:, :1].view(-1, 1, 1)
            gate = gate * active
            hit = occ.gather(2, idx) | active
        usage.scatter_(2, idx, torch.lerp(usage.gather(2, idx), self._read_constants(q)[2], gate))
        occ.scatter_(2, idx, hit)  # type: ignore[call-overload]
        kv.scatter_(2, rows, torch.lerp(old, src, gate.unsqueeze(-1)))
        if w:  # the window drops row s and appends the new token
            start = s + 1
            if start + w > 2 * w:  # the end of the area: the w - 1 kept rows move to the front
                kv[:, :, m : m + w - 1] = kv[:, :, m + start : m + start + w - 1]
                valid[..., m : m + w - 1] = valid[..., m + start : m + start + w - 1]
                valid[..., m + w - 1 :] = False
                start = 0
            else:
                valid.select(-1, m + s).fill_(False)
            kv.narrow(2, m + start + w - 1, 1).copy_(new)
            valid.select(-1, m + start + w - 1).fill_(True)
            ring.start = start
            if not ring.full:
                ring.full = bool(valid[..., m + start : m + start + w].all())
        keys, values = ring.keys, ring.values

        def attend(mem_valid: Tensor | None) -> Tensor:  # a key is always valid (see _decode_read)
            both = valid if mem_valid is None else torch.cat([mem_valid, valid[..., m:]], dim=-1)
            return F.scaled_dot_product_attention(qh, keys, values, attn_mask=both)

        if self.read_clusters == self.num_clusters:
            slots, cost = self._read_constants(qh)[:2]
            out = attend(None)
        else:
            mem_scores = torch.matmul(qh, ring.keys_t[..., :m]) * d**-0.5
            out, per_query, cost = self._read(qh, mem_scores, occ.unsqueeze(2), attend)
            slots = per_query.mean()
        self.last_aux_loss, self.last_slots_read = cost, slots
        if w:
            self._set_ring_window(cache, ring)
        cache.position += 1
        return out.transpose(1, 2), cache

    def _check_qkv(self, q: Tensor, k: Tensor, v: Tensor) -> None:
        for name, t in (("q", q), ("k", k), ("v", v)):
            if not isinstance(t, Tensor) or t.dim() != 4:
                raise TypeError(f"{name} must be a 4-d tensor (batch, seq, heads, head_dim), got {t!r:.80}")
            if t.shape != q.shape or t.shape[2:] != (self.num_heads, self.head_dim):
                raise ValueError(
                    f"{name} has shape {tuple(t.shape)}; expected (batch, seq, {self.num_heads}, {self.head_dim}) "
                    f"like q {tuple(q.shape)}"
                )
