"""video_qkv: determinism, layout, the context is less attended than the target, bad inputs."""

from __future__ import annotations

import pytest
import torch

from lightning_icml26.data import video_qkv


def test_seeded_shapes_and_tile_order() -> None:
    q, k, v, n_t = video_qkv(4, 8, 8, heads=2, head_dim=16, batch=2, seed=3)
    assert q.shape == k.shape == v.shape == (2, 512, 2, 16)
    assert n_t == 256
    q2, _, _, _ = video_qkv(4, 8, 8, heads=2, head_dim=16, batch=2, seed=3)
    assert torch.equal(q, q2)
    assert not torch.equal(q, video_qkv(4, 8, 8, heads=2, head_dim=16, batch=2, seed=4)[0])
    # the context values are a noisy copy of the target values (positions aligned)
    corr = torch.corrcoef(torch.stack([v[:, :n_t].flatten(), v[:, n_t:].flatten()]))[0, 1]
    assert 0.5 < corr < 0.999


def test_blocks_of_consecutive_tokens_are_smoother_with_tiles() -> None:
    """Keys inside 64-token blocks vary less in 4x4x4 tile order than in frame-major order."""

    def spread(k: torch.Tensor) -> float:
        blocks = k[0, :256].reshape(4, 64, -1)
        return float((blocks - blocks.mean(1, keepdim=True)).norm() / blocks.norm())

    tiled = video_qkv(4, 8, 8, heads=1, head_dim=16, seed=0)[1]
    plain = video_qkv(4, 8, 8, heads=1, head_dim=16, seed=0, tile=None)[1]
    assert spread(tiled) < spread(plain)


@pytest.mark.parametrize("temperature", [2.0, 10.0])
def test_context_tokens_receive_less_attention_than_target_tokens(temperature: float) -> None:
    q, k, _, n_t = video_qkv(4, 8, 8, heads=2, head_dim=32, temperature=temperature, seed=1)
    p = torch.softmax(torch.einsum("bqhd,bkhd->bhqk", q[:, :n_t], k) / 32**0.5, dim=-1)
    context_mass = float(p[..., n_t:].sum(-1).mean())
    assert context_mass < 0.5  # equal-sized parts: less than half of the mass goes to the context
    # with context keys as strong as target keys (gain 1, no noise) the asymmetry disappears
    q1, k1, _, _ = video_qkv(4, 8, 8, heads=2, head_dim=32, temperature=temperature, seed=1,
                             context_gain=1.0, context_noise=0.0)  # fmt: skip
    p1 = torch.softmax(torch.einsum("bqhd,bkhd->bhqk", q1[:, :n_t], k1) / 32**0.5, dim=-1)
    assert float(p1[..., n_t:].sum(-1).mean()) == pytest.approx(0.5, abs=1e-4)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"frames": 0}, "frames"),
        ({"head_dim": 7}, "head_dim"),
        ({"temperature": 0.0}, "temperature"),
        ({"context_noise": -1.0}, "context_noise"),
        ({"context_gain": 1.5}, "context_gain"),
        ({"tile": (4, 4)}, "tile"),
    ],
)
def test_bad_inputs(kwargs: dict, match: str) -> None:
    args = {"frames": 2, "height": 4, "width": 4} | kwargs
    with pytest.raises(ValueError, match=match):
        video_qkv(**args)
    with pytest.raises(TypeError, match="dtype"):
        video_qkv(2, 4, 4, dtype=torch.int64)
