"""ARMMemoryTrace: figures equal an independent computation, trace steps, logging, checkpoint round trip, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
import torch
from lightning.pytorch.loggers import Logger

from lightning_icml26.callbacks import ARMMemoryTrace
from lightning_icml26.cli import run_recipe
from lightning_icml26.data import RecallDataModule
from lightning_icml26.modules import ARMDecoder
from lightning_icml26.ops.attention.kv_memory.arm import ARMAttention

SEQ = 24


def _model(attention: str = "arm", **kwargs: Any) -> ARMDecoder:
    torch.manual_seed(0)
    arm = {"num_clusters": 2, "window": 4, **kwargs} if attention == "arm" else None
    return ARMDecoder(d_model=16, num_layers=2, num_heads=2, attention=attention, budget=12, attention_kwargs=arm)


def _data() -> RecallDataModule:
    return RecallDataModule(seq_len=SEQ, num_pairs=4, num_train=16, num_val=4, batch_size=4)


class _Recorder(Logger):
    """Keeps every ``log_metrics`` call."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[int | None, dict[str, float]]] = []

    @property
    def name(self) -> str:
        return "recorder"

    @property
    def version(self) -> int:
        return 0

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.rows.append((step, dict(metrics)))


class _Reference(pl.Callback):
    """After ARMMemoryTrace in the list: recomputes its figures at the same steps from ``ARMDecoder.prefill``."""

    def __init__(self, trace: ARMMemoryTrace) -> None:
        self.trace = trace
        self.rows: list[dict[str, float]] = []
        self.grads: dict[int, dict[str, float]] = {}
        self.modes: list[bool] = []

    def on_before_optimizer_step(self, trainer: pl.Trainer, pl_module: pl.LightningModule, optimizer: Any) -> None:
        layers = pl_module.arm_layers()  # type: ignore[operator]

        def norm(params: list[torch.nn.Parameter]) -> float:
            squares = [p.grad.double().square().sum() for p in params if p.grad is not None]
            return float(torch.stack(squares).sum().sqrt())

        row = {
            "grad_norm_router": sum(norm([x.w_cluster, x.w_slot]) for x in layers) / len(layers),
            "grad_norm_gate": sum(norm([x.gate_w, x.gate_b]) for x in layers) / len(layers),
        }
        policies = [norm(list(x.policy.parameters())) for x in layers if x.policy is not None]
        if policies:
            row["grad_norm_policy"] = sum(policies) / len(policies)
        self.grads[trainer.global_step + 1] = row

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        assert isinstance(pl_module, ARMDecoder)
        self.modes.append(all(m.training for m in pl_module.modules()))
        step = trainer.global_step
        history = self.trace.history
        if not history or history[-1]["step"] != step or len(self.rows) == len(history):
            return
        pl_module.eval()
        with torch.no_grad():
            _, state = pl_module.prefill(self.trace.probe["input_ids"])
        pl_module.train()
        layers = pl_module.arm_layers()
        row: dict[str, float] = {"step": step}
        per: list[dict[str, float]] = []
        for layer, cache in zip(layers, state.caches, strict=True):
            m, (b, h) = layer.num_slots, cache.occupied.shape[:2]
            writes = SEQ - layer.window  # on_eviction writes: every token that left the window
            occupied = overwritten = 0.0
            mass, count = 0.0, 0
            for i in range(b):
                for j in range(h):
                    written = [s for s in range(m) if bool(cache.occupied[i, j, s])]
                    occupied += len(written) / m / (b * h)
                    overwritten += (writes - len(written)) / writes / (b * h)
                    mass += sum(float(cache.usage[i, j, s]) for s in written)
                    count += len(written)
            per.append(
                {
                    "occupied": occupied,
                    "overwritten": overwritten,
                    "usage": mass / count,
                    "slots_read": float(layer.last_slots_read),
                    "aux_loss": float(layer.last_aux_loss),
                }
            )
        for key in per[0]:
            row[key] = sum(p[key] for p in per) / len(per)
        row |= self.grads[step]
        self.rows.append(row)


def _trainer(root: Path, callbacks: list[pl.Callback], max_steps: int, **kwargs: Any) -> pl.Trainer:
    options: dict[str, Any] = {
        "max_steps": max_steps,
        "callbacks": callbacks,
        "default_root_dir": root,
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "accelerator": "cpu",
        "num_sanity_val_steps": 0,
        "limit_val_batches": 0,
        "log_every_n_steps": 1,
    } | kwargs
    return pl.Trainer(**options)


@pytest.mark.parametrize("read_policy", ["fixed", "learned"])
def test_figures_equal_an_independent_computation_and_are_logged(tmp_path: Path, read_policy: str) -> None:
    # the fixed read of the best cluster only: the slots read depend on which clusters are occupied
    model = _model(read_policy=read_policy, read_clusters=1 if read_policy == "fixed" else None)
    trace = ARMMemoryTrace(every_n_steps=2, probe_batch_size=3)
    ref, logger = _Reference(trace), _Recorder()
    _trainer(tmp_path, [trace, ref], max_steps=6, logger=logger).fit(model, _data())
    assert [row["step"] for row in trace.history] == [2, 4, 6]
    assert trace.probe["input_ids"].shape == (3, SEQ)
    assert len(ref.rows) == 3
    for got, want in zip(trace.history, ref.rows, strict=True):
        assert list(got) == list(want)
        assert got == pytest.approx(want, rel=1e-5, abs=1e-7)
    assert ("grad_norm_policy" in trace.history[0]) == (read_policy == "learned")
    assert all(0 < row["occupied"] <= 1 and 0 <= row["overwritten"] < 1 for row in trace.history)
    # the logger row of each trace's batch (Lightning's logger step: optimizer steps taken before it) holds it
    logged = {step: row for step, row in logger.rows if "train_loss_step" in row}
    for entry in trace.history:
        row = logged[int(entry["step"]) - 1]
        traced = {k.removeprefix("arm_trace/"): v for k, v in row.items() if k.startswith("arm_trace/")}
        assert traced == pytest.approx({k: v for k, v in entry.items() if k != "step"})
    assert not any(k.startswith("arm_trace/") for k in logged[0])  # nothing before the first trace
    assert all(ref.modes)  # the module is back in training mode after every probe


def test_trace_steps_are_exactly_every_n_steps_and_cost_nothing_between(tmp_path: Path) -> None:
    calls: list[int] = []

    class _Counting(ARMMemoryTrace):
        def probe_figures(self, pl_module: torch.nn.Module) -> dict[str, float]:
            calls.append(1)
            return super().probe_figures(pl_module)

    trace = _Counting(every_n_steps=3, probe_batch_size=2)
    model = _model()
    _trainer(tmp_path, [trace], max_steps=10).fit(model, _data())
    assert [row["step"] for row in trace.history] == [3, 6, 9]
    assert len(calls) == 3
    with_accumulation = ARMMemoryTrace(every_n_steps=2, probe_batch_size=2)
    _trainer(tmp_path, [with_accumulation], max_steps=4, accumulate_grad_batches=2).fit(_model(), _data())
    assert [row["step"] for row in with_accumulation.history] == [2, 4]
    assert all("grad_norm_router" in row for row in with_accumulation.history)


def test_training_is_unchanged_by_the_trace(tmp_path: Path) -> None:
    """The probe draws no random number and changes no state: the weights equal those of a run without it."""
    plain, traced = _model(read_policy="learned"), _model(read_policy="learned")
    _trainer(tmp_path / "a", [], max_steps=6).fit(plain, _data())
    _trainer(tmp_path / "b", [ARMMemoryTrace(every_n_steps=1, probe_batch_size=4)], max_steps=6).fit(traced, _data())
    for (name, a), b in zip(plain.state_dict().items(), traced.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0, msg=name)


def test_history_and_probe_survive_a_checkpoint_round_trip(tmp_path: Path) -> None:
    def fit(name: str, epochs: int, ckpt: Path | None = None) -> ARMMemoryTrace:  # 4 steps per epoch
        trace = ARMMemoryTrace(every_n_steps=2, probe_batch_size=2)
        trainer = _trainer(tmp_path / name, [trace], max_steps=-1, max_epochs=epochs)
        trainer.fit(_model(), _data(), ckpt_path=ckpt)
        trainer.save_checkpoint(tmp_path / f"{name}.ckpt")
        return trace

    full, first = fit("full", 2), fit("half", 1)
    resumed = fit("resumed", 2, tmp_path / "half.ckpt")
    assert [row["step"] for row in resumed.history] == [2, 4, 6, 8]
    assert resumed.history[:2] == first.history
    torch.testing.assert_close(resumed.probe, full.probe, rtol=0, atol=0)  # the probe of the first run, not a new one
    for got, want in zip(resumed.history, full.history, strict=True):
        assert got == pytest.approx(want, rel=1e-6)
    fresh = ARMMemoryTrace()
    fresh.load_state_dict({})
    assert fresh.history == []
    assert fresh.probe is None


def test_per_layer_figures_average_to_the_logged_means(tmp_path: Path) -> None:
    trace = ARMMemoryTrace(every_n_steps=2, probe_batch_size=2, per_layer=True)
    _trainer(tmp_path, [trace], max_steps=2).fit(_model(read_policy="learned"), _data())
    (row,) = trace.history
    for key in ("occupied", "overwritten", "usage", "slots_read", "aux_loss", "grad_norm_router", "grad_norm_policy"):
        assert row[key] == pytest.approx((row[f"layer0/{key}"] + row[f"layer1/{key}"]) / 2)


def test_probe_restores_modes_and_layer_attributes() -> None:
    model = _model(read_policy="learned").train()
    model.head.eval()  # a mixed state must come back as it was
    model.arm_layers()[1].eval()
    before = {name: m.training for name, m in model.named_modules()}
    kept = [(layer.last_aux_loss, layer.last_slots_read) for layer in model.arm_layers()]
    trace = ARMMemoryTrace(probe_batch_size=2)
    trace.set_probe({"input_ids": torch.randint(0, 256, (4, SEQ)), "labels": torch.zeros(4, SEQ), "n": torch.tensor(4)})
    assert trace.probe["labels"].shape == (2, SEQ)
    assert trace.probe["n"].shape == ()  # a 0-d tensor is kept whole
    trace.probe_figures(model)
    assert {name: m.training for name, m in model.named_modules()} == before
    for layer, (aux, read) in zip(model.arm_layers(), kept, strict=True):
        assert layer.last_aux_loss is aux
        assert layer.last_slots_read is read


def test_a_probe_forward_for_any_batch_layout() -> None:
    attn = ARMAttention(num_heads=1, head_dim=4, num_slots=4, num_clusters=2, window=0, write_mode="every_token")

    class _Module(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.attn = attn

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.attn(x, x, x)

    x = torch.randn(2, 5, 1, 4)
    module = _Module()
    for batch in (x, [x, torch.zeros(2)], {"input_ids": x}):
        trace = ARMMemoryTrace(probe_batch_size=2)
        trace.set_probe(batch)
        figures = trace.probe_figures(module)
        with torch.no_grad():
            _, cache = attn.eval().prefill(x, x, x)
        attn.train()
        assert figures["occupied"] == pytest.approx(float(cache.occupied.float().mean()))
        assert figures["overwritten"] == pytest.approx(float(1 - cache.occupied.float().sum(-1).mean() / 5))
    trace = ARMMemoryTrace(probe_batch_size=2, probe_forward=lambda m, b: m(b["x"]))
    trace.set_probe({"x": x})
    assert trace.probe_figures(module)["slots_read"] == 4.0
    odd = ARMMemoryTrace()
    odd.set_probe({"x": x})
    with pytest.raises(TypeError, match="probe_forward"):
        odd.probe_figures(module)
    unused = ARMMemoryTrace(probe_forward=lambda m, b: None)
    unused.set_probe(x)
    with pytest.raises(ValueError, match="called none of its 1 ARMAttention"):
        unused.probe_figures(module)
    with pytest.raises(ValueError, match="no probe batch yet"):
        ARMMemoryTrace().probe_figures(module)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"every_n_steps": 0}, "every_n_steps must be an integer >= 1, got 0"),
        ({"every_n_steps": True}, "every_n_steps must be an integer >= 1"),
        ({"every_n_steps": 2.0}, "every_n_steps must be an integer >= 1"),
        ({"probe_batch_size": 0}, "probe_batch_size must be an integer >= 1, got 0"),
        ({"probe_batch_size": "8"}, "probe_batch_size must be an integer >= 1"),
        ({"per_layer": 1}, "per_layer must be a bool"),
        ({"probe_forward": 3}, "probe_forward must be None or a callable"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ARMMemoryTrace(**kwargs)  # type: ignore[arg-type]


def test_a_model_without_arm_layers_is_refused_at_fit_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ARMDecoder has no ARMAttention layer for ARMMemoryTrace"):
        _trainer(tmp_path, [ARMMemoryTrace(every_n_steps=1)], max_steps=2).fit(_model("full"), _data())


def test_warns_when_traces_fall_between_the_loggers_steps(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="not a multiple of the Trainer's log_every_n_steps=2"):
        _trainer(tmp_path, [ARMMemoryTrace(every_n_steps=3)], max_steps=1, log_every_n_steps=2).fit(_model(), _data())


def test_recipe_callbacks_group_traces_a_recipe_run(tmp_path: Path) -> None:
    """The `arm_memory_trace` callbacks option, as its comment runs it: the arm_mqar recipe traces ARM's memory."""
    callbacks = "callbacks=[default,gumbel,usage_penalty,arm_memory_trace]"
    overrides = [callbacks, "trainer=smoke", "callbacks.arm_memory_trace.every_n_steps=1", "trainer.max_steps=2"]
    summary = run_recipe("arm_mqar", overrides, run_dir=tmp_path)
    assert summary["status"] == "finished"
    traced = [name for name in summary["metrics"] if name.startswith("arm_trace/")]
    assert "arm_trace/occupied" in traced
