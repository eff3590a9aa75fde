"""Diagnostics of ARM (experimental) on MQAR: can it store and recall pairs when full KV learns fast?

Not a claim benchmark: a short, fast setting (64 tokens, 8 pairs, 16 filler tokens, budget 32 per head = an
8-token window plus 24 slots in 4 clusters, so the 8 value tokens fit in the slots) where full KV and ARM train
for the same steps on the same batches, with the same optimiser and temperature schedule as
``benchmarks/arm_kv_budget.py``. Every ``--every`` steps it prints, for ARM, on a fixed probe batch:

* recall with the decode cache (argmax routing, as evaluated) and the training loss;
* routing: distinct slots the value tokens are routed to per sequence and head (out of 8), the fraction of value
  tokens whose slot is written again before the queries (``overwritten``), the distinct slots all filler
  tokens go to, and the mean gate of value, key and filler writes;
* gradient norms of the cluster router, the slot router, the gate weights and bias (does the straight-through
  gradient reach them?), next to that of the q/k/v projection;
* the read: occupied slots when the queries arrive and mean slots read.

Besides the log it checks the diagnosis's claims and, with ``--json PATH``, writes them as ``figures.targets``
(the same keys at every size; a kind that was not run leaves its figures ``nan``, so its targets are missed):

* ``full_kv_recall`` (``>= 0.9``): full KV learns the setting (the comparison means something);
* ``transplant_recall`` (``>= 0.5``): full KV's trained weights loaded into ARM (untrained router, gate forced
  to 1) recall the pairs through ARM's write and read path: no bug there;
* ``arm_recall`` (``<= 0.05``, chance is 1/128): ARM as shipped stays at chance;
* ``frozen_router_recall`` (``>= 0.5``): the same ARM routed by the argmax of its initial router in training too
  (kind ``arm_frozen``, a diagnostic) does learn, so the training-time routing is what blocks learning;
* ``gumbel_over_argmax_overwrites_at_init`` (``>= 1.5``): at the initial router, Gumbel routing (training)
  overwrites a value token's slot before its query far more often than argmax routing (evaluation);
* ``hard_choice_same_at_both_taus`` (``>= 1``): under the same Gumbel noise the hard routing choice at
  ``tau_start`` equals the one at ``tau_min`` for every token (annealing tau does not reduce the noise);
* ``balanced_recall`` (``>= 0.5``) and ``balanced_gap_to_full`` (``<= 0.05``): kind ``arm_balanced`` (ARM with
  the slot load-balancing loss ``--slot-balance`` and the Gumbel noise scaled from 1 down to ``--noise-final``
  over the first ``--noise-decay`` of training; both our additions, see ``ARMAttention``) learns, and comes
  within 5 points of full KV's recall.

With ``--read-policy learned`` (kind ``arm_balanced``) it also prints the read: the policy's mean probability of
each budget on the query tokens (``p_budget_b``), its mean slots read (``own_slots``), the recall the same weights
reach when reading the top ``b`` clusters by the fixed rule (``needed_b``) and the policy's gradient norm
(``g_policy``); ``--read-cost`` sets its cost and ``--cost-start``/``--cost-ramp`` the warm-up of
``read_cost_at`` (our addition); ``--freeze-policy`` keeps the policy at its initial choices, with a zero gradient,
while that cost is 0 (``ARMAttention.train_read_policy``, our addition).

The recall targets need the full-size setting (``--steps 1200``, a few hours on two shared cores with the three
kinds); ``--quick`` (40 steps of 16) learns nothing and checks only the routing claims and the plumbing.

Run: ``python -m benchmarks.arm_diagnose [--quick] [--json PATH] [--steps N] [--every K] [--kinds full,arm,arm_frozen]
[--write-mode M] [--tau-start T] [--slot-balance W] [--noise-final S] [--noise-decay F] [--read-policy P]
[--read-cost L] [--cost-start F] [--cost-ramp F]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
from typing import Any

import torch
import torch.nn.functional as F

from benchmarks._common import benchmark_parser, print_targets, target, write_json
from lightning_icml26.callbacks import GumbelTemperatureScheduler
from lightning_icml26.data import make_recall_batch
from lightning_icml26.modules import ARMDecoder
from lightning_icml26.ops.attention import ARMAttention, read_cost_at
from lightning_icml26.ops.attention.kv_memory.arm_memory import gumbel_select

SEQ, PAIRS, BUDGET = 64, 8, 32


KINDS = ("full", "arm", "arm_frozen", "arm_balanced")


def _model(kind: str, args: argparse.Namespace) -> ARMDecoder:
    torch.manual_seed(args.seed)
    kwargs: dict[str, Any] = {}
    if kind.startswith("arm"):
        kwargs = {
            "window": BUDGET // 4,
            "num_clusters": 4,
            "write_mode": args.write_mode,
            "balance_weight": args.balance,
        }
        if kind == "arm_balanced":
            kwargs["slot_balance_weight"] = args.slot_balance
            kwargs["read_policy"], kwargs["budget_cost"] = args.read_policy, args.read_cost
    attention = "arm" if kind.startswith("arm") else kind
    return ARMDecoder(
        d_model=64, num_layers=1, num_heads=4, attention=attention, budget=BUDGET, attention_kwargs=kwargs
    )


@torch.no_grad()
def _recall(model: ARMDecoder, ids: torch.Tensor, labels: torch.Tensor) -> float:
    model.eval()
    start = SEQ - 2 * PAIRS + 1
    logits, state = model.prefill(ids[:, :start])
    outs = [logits[:, -1]]
    for t in range(start, SEQ):
        step, state = model.step(ids[:, t], state)
        outs.append(step)
    pred, gold = torch.stack(outs, 1), labels[:, start - 1 :]
    scored = gold != -100
    model.train()
    return (pred.argmax(-1)[scored] == gold[scored]).float().mean().item()


@torch.no_grad()
def memory_stats(model: ARMDecoder, ids: torch.Tensor, pairs: int = PAIRS) -> dict[str, float]:
    """Replays the writes of the prefill (argmax routing) and records slots, overwrites and gates.

    ``ids`` are MQAR sequences (``pairs`` key-value pairs, filler, then the ``pairs`` queries) of any length;
    only the first layer's ARM memory is replayed. ``overwritten`` is the share of value tokens whose slot is
    written again before the first query (argmax routing, as evaluated), ``overwritten_train`` the same under the
    training-time (Gumbel) routing (absent with ``usage_penalty``, whose routing depends on the memory),
    ``value_slots`` the distinct slots a sequence's values use, ``filler_slots`` those its filler uses,
    ``occupied`` the slots written at all, ``gate_*`` the mean write gate per token kind.
    """
    model.eval()
    attn = model.arm_layers()[0]
    block: Any = model.blocks[0]
    q, k, v = block._qkv(model._embed(ids))
    kh, vh = k.transpose(1, 2), v.transpose(1, 2)
    usage_aware = attn.usage_penalty > 0  # the route depends on what the slots hold: replayed in the loop below
    slot = attn.route(kh)[0].argmax(-1)  # (B, H, T), argmax routing as evaluated (keys alone)
    b, h, n, d = kh.shape
    lag = 0 if attn.write_mode == "every_token" else attn.window
    q_start = n - 2 * pairs
    mem_k = kh.new_zeros(b, h, attn.num_slots, d)
    usage = kh.new_zeros(b, h, attn.num_slots)
    gates: dict[str, list[float]] = {"value": [], "key": [], "filler": []}
    last_writer = torch.full((b, h, attn.num_slots), -1, dtype=torch.long)
    kinds = ["key" if t < 2 * pairs and t % 2 == 0 else "value" if t < 2 * pairs else "filler" for t in range(n)]
    for src in range(0, q_start - lag):  # every write before the first query arrives
        if usage_aware:
            slot[:, :, src] = attn.route_with_usage(kh[:, :, src], vh[:, :, src], usage)[0].argmax(-1)
        idx = slot[:, :, src]
        old = mem_k.gather(2, idx[..., None, None].expand(b, h, 1, d))[:, :, 0]
        feats = torch.cat([kh[:, :, src], old, vh[:, :, src]], dim=-1)
        g = torch.sigmoid(torch.einsum("bhf,hf->bh", feats, attn.gate_w) + attn.gate_b)
        gates[kinds[src]].append(g.mean().item())
        new = (1 - g[..., None]) * old + g[..., None] * kh[:, :, src]
        mem_k.scatter_(2, idx[..., None, None].expand(b, h, 1, d), new[:, :, None])
        used = usage.gather(2, idx[..., None])
        usage.scatter_(2, idx[..., None], used + g[..., None] * (1 - used))
        last_writer.scatter_(2, idx[..., None], src)
    value_pos = torch.arange(1, 2 * pairs, 2)
    vslots = slot[:, :, value_pos]  # (B, H, P)
    distinct = torch.tensor([[len(set(vslots[i, j].tolist())) for j in range(h)] for i in range(b)]).float()
    survived = last_writer.gather(2, vslots) == value_pos.view(1, 1, -1)
    train_routing: dict[str, float] = {}
    if not usage_aware:  # training-time (Gumbel) routing of the keys alone (same hard choice at any tau)
        attn.train()
        sampled = attn.route(kh)[0].argmax(-1)
        attn.eval()
        later = sampled[:, :, None, 2 * pairs : q_start - lag] == sampled[:, :, value_pos, None]
        later = later | torch.stack(
            [(sampled[:, :, p + 1 : 2 * pairs] == sampled[:, :, p, None]).any(-1) for p in value_pos.tolist()],
            dim=-1,
        ).unsqueeze(-1)
        train_routing["overwritten_train"] = later.any(-1).float().mean().item()
    filler = slot[:, :, 2 * pairs : q_start - lag]
    filler_distinct = torch.tensor([[len(set(filler[i, j].tolist())) for j in range(h)] for i in range(b)]).float()
    model.train()
    return {
        "value_slots": distinct.mean().item(),
        "overwritten": 1 - survived.float().mean().item(),
        **train_routing,
        "filler_slots": filler_distinct.mean().item(),
        "occupied": (last_writer >= 0).float().sum(-1).mean().item(),
        **{f"gate_{key}": statistics.fmean(vals) for key, vals in gates.items() if vals},
    }


@torch.no_grad()
def _read_detail(model: ARMDecoder, ids: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    """The read: recall and slots read with the layer's own policy, and recall at each fixed budget (same weights).

    ``needed_b`` is the fraction of queries answered correctly when reading the top ``b`` clusters by the fixed
    rule; for a learned policy, ``learned_slots`` is its mean slots read per query and ``p_budget_b`` the mean
    probability its policy gives budget ``b`` on the query tokens (eval mode, so the choice is the argmax).
    """
    attn = model.arm_layers()[0]
    policy, clusters = attn.read_policy, attn.read_clusters
    start = SEQ - 2 * PAIRS + 1
    row: dict[str, float] = {}
    probs: list[torch.Tensor] = []
    if attn.policy is not None:
        handle = attn.policy.register_forward_hook(lambda m, i, o: probs.append(torch.softmax(o, -1)))
    model.eval()
    logits, state = model.prefill(ids[:, :start])
    probs.clear()  # only the decoded (query) tokens
    outs, slots = [logits[:, -1]], []
    for t in range(start, SEQ):
        step, state = model.step(ids[:, t], state)
        outs.append(step)
        slots.append(float(attn.last_slots_read))
    if attn.policy is not None:
        handle.remove()
        mean_p = torch.cat([p.flatten(0, -2) for p in probs]).mean(0)
        row |= {f"p_budget_{b}": float(mean_p[i]) for i, b in enumerate(attn.budgets)}
    row["own_slots"] = statistics.fmean(slots)
    try:
        attn.read_policy = "fixed"
        for b in attn.budgets:
            attn.read_clusters = b
            row[f"needed_{b}"] = _recall(model, ids, labels)
    finally:
        attn.read_policy, attn.read_clusters = policy, clusters
        model.train()
    return row


def _sequential(model: ARMDecoder, ids: torch.Tensor) -> torch.Tensor:
    """Training logits through the decode step, whose write is the full ``(1 - g z) M + g z x`` update."""
    logits, state = model.prefill(ids[:, :1])
    outs = [logits[:, 0]]
    for t in range(1, ids.shape[1]):
        step, state = model.step(ids[:, t], state)
        outs.append(step)
    return torch.stack(outs, 1)


def _freeze_routing(layer: ARMAttention) -> None:
    """Diagnostic only: the layer routes by argmax of its (frozen) initial router in training as in evaluation."""
    route = layer.route
    layer.w_cluster.requires_grad_(False)
    layer.w_slot.requires_grad_(False)

    def argmax_route(k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mode = layer.training
        layer.training = False
        try:
            return route(k)
        finally:
            layer.training = mode

    layer.route = argmax_route  # type: ignore[method-assign]


def _sharpen_routing(layer: ARMAttention, factor: list[float]) -> None:
    """Diagnostic only: route with logits multiplied by ``factor[0]`` (>= 1: a sharper sampling distribution)."""

    def route(k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = factor[0]
        r1 = torch.einsum("bhtd,hdc->bhtc", k, layer.w_cluster) * s
        z1 = gumbel_select(r1, layer.tau, layer.training, layer.generator)
        r2 = torch.einsum("bhtd,hdm->bhtm", k, layer.w_slot).unflatten(-1, (layer.num_clusters, -1)) * s
        z2 = gumbel_select((z1.unsqueeze(-1) * r2).sum(-2), layer.tau, layer.training, layer.generator)
        return (z1.unsqueeze(-1) * z2.unsqueeze(-2)).flatten(-2), z1

    layer.route = route  # type: ignore[method-assign]


def _grad_norms(model: ARMDecoder) -> dict[str, float]:
    attn = model.arm_layers()[0]
    block: Any = model.blocks[0]
    named = {"g_cluster": attn.w_cluster, "g_slot": attn.w_slot, "g_gate_w": attn.gate_w, "g_gate_b": attn.gate_b}
    out = {name: 0.0 if p.grad is None else p.grad.norm().item() for name, p in named.items()}
    out["g_qkv"] = block.qkv.weight.grad.norm().item()
    return out


@torch.no_grad()
def hard_choice_agreement(model: ARMDecoder, ids: torch.Tensor, tau_a: float, tau_b: float, seed: int = 0) -> float:
    """Fraction of (sequence, head, token) routing choices equal at ``tau_a`` and ``tau_b`` under the same noise."""
    attn = model.arm_layers()[0]
    block: Any = model.blocks[0]
    kh = block._qkv(model._embed(ids))[1].transpose(1, 2)
    mode, tau, generator = attn.training, attn.tau, attn.generator
    choices = []
    try:
        attn.train()
        for value in (tau_a, tau_b):
            attn.tau, attn.generator = value, torch.Generator().manual_seed(seed)
            choices.append(attn.route(kh)[0].argmax(-1))
    finally:
        attn.train(mode)
        attn.tau, attn.generator = tau, generator
    return (choices[0] == choices[1]).float().mean().item()


def _parser() -> argparse.ArgumentParser:
    parser = benchmark_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--tau-start", type=float, default=1.0)
    parser.add_argument("--tau-min", type=float, default=0.2)
    parser.add_argument("--write-mode", default="on_eviction")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, from {KINDS}")
    parser.add_argument("--balance", type=float, default=0.0, help="ARM's load-balancing weight")
    parser.add_argument(
        "--sequential", action="store_true", help="train ARM through its decode step (full straight-through update)"
    )
    parser.add_argument(
        "--transplant",
        action="store_true",
        help="(always on when full KV is trained; kept for old command lines) after training full KV, load its "
        "weights into ARM with gate 1 and report ARM's recall and routing",
    )
    parser.add_argument(
        "--frozen-routing",
        action="store_true",
        help="kind arm routes by argmax of its initial router in training too (as kind arm_frozen always does)",
    )
    parser.add_argument("--gate-bias", type=float, default=0.0, help="ARM's initial gate bias (0: g = 0.5)")
    parser.add_argument(
        "--noise-end",
        type=float,
        default=None,
        help="diagnostic: divide ARM's router logits by a factor annealed from 1 to this value over the first "
        "half of training before the Gumbel draw (less routing noise; the router keeps training)",
    )
    parser.add_argument(
        "--read-policy", default="fixed", help="kind arm_balanced: read policy (fixed, top_p or learned)"
    )
    parser.add_argument(
        "--read-cost", type=float, default=0.01, help="kind arm_balanced: budget_cost of the learned read policy"
    )
    parser.add_argument(
        "--cost-start",
        type=float,
        default=None,
        help="kind arm_balanced: read cost 0 for this fraction of training, then linear to --read-cost",
    )
    parser.add_argument("--cost-ramp", type=float, default=0.1, help="fraction of training of the cost's ramp")
    parser.add_argument(
        "--freeze-policy",
        action="store_true",
        help="kind arm_balanced: no gradient to the learned read policy while the read cost is 0 (needs --cost-start)",
    )
    parser.add_argument(
        "--slot-balance", type=float, default=1.0, help="kind arm_balanced: weight of the slot balance loss"
    )
    parser.add_argument(
        "--noise-final", type=float, default=0.0, help="kind arm_balanced: Gumbel noise scale at the end of its decay"
    )
    parser.add_argument(
        "--noise-decay",
        type=float,
        default=0.5,
        help="kind arm_balanced: fraction of training over which the noise scale falls linearly from 1",
    )
    return parser


def noise_scale_at(step: int, total: int, final: float, decay: float) -> float:
    """Gumbel noise scale at ``step``: linear from 1 to ``final`` over the first ``decay`` of ``total`` steps."""
    frac = 1.0 if decay <= 0 else min(1.0, step / (decay * total))
    return 1.0 + frac * (final - 1.0)


def _fmt_row(row: dict[str, float]) -> str:
    return " ".join(f"{key}={val:.3g}" for key, val in row.items())


def train_kind(
    kind: str, args: argparse.Namespace, train: dict[str, torch.Tensor], probe: dict[str, torch.Tensor]
) -> tuple[ARMDecoder, list[dict[str, float]]]:
    """Train one kind; return the model and its log rows (step 1, every ``--every`` steps, and the last step)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    model = _model(kind, args)
    if kind == "arm_frozen" or (kind == "arm" and args.frozen_routing):
        for layer in model.arm_layers():
            _freeze_routing(layer)
    with torch.no_grad():
        for layer in model.arm_layers():
            layer.gate_b.fill_(args.gate_bias)
    sharpen = [1.0]
    if args.noise_end is not None:
        for layer in model.arm_layers():
            _sharpen_routing(layer, sharpen)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50))
    sched = GumbelTemperatureScheduler(
        tau_start=args.tau_start, tau_min=args.tau_min, schedule="linear", total_steps=args.steps
    )
    rows: list[dict[str, float]] = []
    for step in range(args.steps):
        for layer in model.arm_layers():
            layer.tau = sched.tau_at(step)
        if kind == "arm_balanced":
            for layer in model.arm_layers():
                layer.noise_scale = noise_scale_at(step, args.steps, args.noise_final, args.noise_decay)
        if kind == "arm_balanced" and args.cost_start is not None:
            for layer in model.arm_layers():
                layer.budget_cost = read_cost_at(step, args.steps, args.read_cost, args.cost_start, args.cost_ramp)
                if args.freeze_policy:
                    layer.train_read_policy = layer.budget_cost > 0
        if args.noise_end is not None:
            frac = min(1.0, step / (args.steps / 2))
            sharpen[0] = 1.0 / (1.0 + frac * (args.noise_end - 1.0))
        ids = train["input_ids"][step * args.batch : (step + 1) * args.batch]
        labels = train["labels"][step * args.batch : (step + 1) * args.batch]
        logits = _sequential(model, ids) if args.sequential and kind != "full" else model(ids)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
        opt.zero_grad()
        aux = model.aux_loss()  # read before the probe's decode overwrites the layers' last auxiliary loss
        (loss + model.aux_weight * aux).backward()
        if (step + 1) % args.every == 0 or step == 0 or step == args.steps - 1:
            row: dict[str, float] = {"step": step + 1, "loss": loss.item()}
            row["recall"] = _recall(model, probe["input_ids"], probe["labels"])
            if kind != "full":
                row |= _grad_norms(model) | memory_stats(model, probe["input_ids"])
            if kind == "arm_balanced":
                row |= _read_detail(model, probe["input_ids"], probe["labels"])
                policy = model.arm_layers()[0].policy
                if policy is not None:
                    row["g_policy"] = math.sqrt(sum(float(p.grad.norm()) ** 2 for p in policy.parameters()))
            if kind == "arm_balanced":
                attn = model.arm_layers()[0]
                row |= {"noise_scale": attn.noise_scale, "aux_loss": aux.item()}
            print(kind, _fmt_row(row), flush=True)
            rows.append(row)
        opt.step()
        warmup.step()
    return model, rows


def transplant(full: ARMDecoder, args: argparse.Namespace, probe: dict[str, torch.Tensor]) -> dict[str, float]:
    """Full KV's trained weights in ARM (its router untrained, gate forced to 1): recall and routing."""
    arm = _model("arm", args)
    missing = arm.load_state_dict(full.state_dict(), strict=False).missing_keys
    with torch.no_grad():
        arm.arm_layers()[0].gate_b.fill_(20.0)  # g = 1: every write overwrites its slot
    row = {"recall": _recall(arm, probe["input_ids"], probe["labels"])} | memory_stats(arm, probe["input_ids"])
    print("arm<-full", f"(untrained: {missing})", _fmt_row(row), flush=True)
    return row


def build_targets(figures: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The diagnosis's claims as targets; an absent figure is ``nan`` (missed). Same keys whatever was run."""
    nan = float("nan")
    last = {kind: (rows[-1] if rows else {}) for kind, rows in figures.get("runs", {}).items()}
    arm_first = (figures.get("runs", {}).get("arm") or [{}])[0]
    argmax_init, gumbel_init = arm_first.get("overwritten", nan), arm_first.get("overwritten_train", nan)
    gumbel_over_argmax = gumbel_init / argmax_init if argmax_init and not math.isnan(argmax_init) else nan
    balanced = last.get("arm_balanced", {}).get("recall", nan)
    return {
        "full_kv_recall": target(last.get("full", {}).get("recall", nan), ">=", 0.9),
        "transplant_recall": target(figures.get("transplant", {}).get("recall", nan), ">=", 0.5),
        "arm_recall": target(last.get("arm", {}).get("recall", nan), "<=", 0.05),
        "frozen_router_recall": target(last.get("arm_frozen", {}).get("recall", nan), ">=", 0.5),
        "gumbel_over_argmax_overwrites_at_init": target(gumbel_over_argmax, ">=", 1.5),
        "hard_choice_same_at_both_taus": target(figures.get("hard_choice_agreement", nan), ">=", 1.0),
        "balanced_recall": target(balanced, ">=", 0.5),
        "balanced_gap_to_full": target(last.get("full", {}).get("recall", nan) - balanced, "<=", 0.05),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train the requested kinds, transplant full KV into ARM, measure the tau invariance; return the figures."""
    torch.set_num_threads(1)
    train = make_recall_batch("mqar", args.steps * args.batch, SEQ, PAIRS, seed=11)
    probe = make_recall_batch("mqar", 64, SEQ, PAIRS, seed=12)
    figures: dict[str, Any] = {"runs": {}, "transplant": {}}
    for kind in args.kinds.split(","):
        model, figures["runs"][kind] = train_kind(kind, args, train, probe)
        if kind == "full":
            figures["transplant"] = transplant(model, args, probe)
    initial = _model("arm", args)  # the tau claim is about the router the training starts from
    figures["hard_choice_agreement"] = hard_choice_agreement(
        initial, probe["input_ids"], args.tau_start, args.tau_min, seed=args.seed
    )
    figures["targets"] = build_targets(figures)
    return figures


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    if args.freeze_policy and (args.cost_start is None or args.read_policy != "learned"):
        parser.error(
            "--freeze-policy needs --read-policy learned and --cost-start (it freezes the policy while the cost is 0)"
        )
    if args.quick:
        args.steps, args.every, args.batch = 40, 20, 16
    figures = run(args)
    print(f"hard routing choice equal at tau={args.tau_start:g} and tau={args.tau_min:g}: "
          f"{figures['hard_choice_agreement']:.3f} of the tokens")  # fmt: skip
    print_targets(figures["targets"])
    write_json(args.json, "arm_diagnose", figures, args)


if __name__ == "__main__":
    main()
