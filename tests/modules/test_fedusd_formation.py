"""FedUSD multi-formation: quadrant packing against numpy references, and the distiller's packed mode."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lightning_icml26.modules.fedusd import ConvNet, SyntheticSetDistiller, pack_quadrants, unpack_quadrants


def _upsample2_reference(a: np.ndarray) -> np.ndarray:
    """Bilinear x2 upsampling of the last two axes, half-pixel centres, edges clamped (written out)."""

    def axis_weights(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        src = np.maximum((np.arange(2 * n) + 0.5) / 2 - 0.5, 0.0)
        lo = np.floor(src).astype(int)
        hi = np.minimum(lo + 1, n - 1)
        return lo, hi, src - lo

    h, w = a.shape[-2:]
    r0, r1, wr = axis_weights(h)
    c0, c1, wc = axis_weights(w)
    rows = a[..., r0, :] * (1 - wr)[:, None] + a[..., r1, :] * wr[:, None]
    return rows[..., c0] * (1 - wc) + rows[..., c1] * wc


def _block_mean(a: np.ndarray) -> np.ndarray:
    n, c, h, w = a.shape
    return a.reshape(n, c, h // 2, 2, w // 2, 2).mean(axis=(3, 5))


def test_unpack_equals_a_written_out_bilinear_upsampling_of_each_quadrant() -> None:
    x = torch.randn(3, 2, 8, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    labels = torch.tensor([4, 1, 7])
    out, lab = unpack_quadrants(x, labels)
    a = x.numpy()
    quads = [a[..., :4, :3], a[..., 4:, :3], a[..., :4, 3:], a[..., 4:, 3:]]
    expected = np.concatenate([_upsample2_reference(q) for q in quads])
    np.testing.assert_allclose(out.numpy(), expected, atol=1e-12)
    assert lab is not None
    assert lab.tolist() == [4, 1, 7] * 4


def test_pack_puts_two_by_two_block_means_in_the_quadrants_and_round_trips_smooth_images() -> None:
    gen = torch.Generator().manual_seed(1)
    tl, bl, tr, br = (torch.randn(2, 1, 8, 8, generator=gen, dtype=torch.float64) for _ in range(4))
    packed = pack_quadrants(tl, bl, tr, br).numpy()
    np.testing.assert_allclose(packed[..., :4, :4], _block_mean(tl.numpy()), atol=1e-12)
    np.testing.assert_allclose(packed[..., 4:, :4], _block_mean(bl.numpy()), atol=1e-12)
    np.testing.assert_allclose(packed[..., :4, 4:], _block_mean(tr.numpy()), atol=1e-12)
    np.testing.assert_allclose(packed[..., 4:, 4:], _block_mean(br.numpy()), atol=1e-12)
    # a constant image survives packing and unpacking exactly
    const = torch.full((1, 1, 8, 8), 2.5, dtype=torch.float64)
    out, _ = unpack_quadrants(pack_quadrants(const, const, const, const))
    assert torch.allclose(out, torch.full((4, 1, 8, 8), 2.5, dtype=torch.float64))


def test_packing_rejects_odd_sizes_and_shape_mismatch() -> None:
    with pytest.raises(ValueError, match="even height and width"):
        unpack_quadrants(torch.zeros(1, 1, 5, 4))
    with pytest.raises(ValueError, match="labels must have 2 rows"):
        unpack_quadrants(torch.zeros(2, 1, 4, 4), torch.zeros(3))
    with pytest.raises(ValueError, match="br must have the shape of tl"):
        pack_quadrants(
            torch.zeros(1, 1, 4, 4), torch.zeros(1, 1, 4, 4), torch.zeros(1, 1, 4, 4), torch.zeros(2, 1, 4, 4)
        )


def _client() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    y = torch.tensor([2, 5]).repeat_interleave(6)
    return torch.randn(len(y), 1, 8, 8, generator=gen), y


def test_packed_distiller_starts_from_shrunk_real_images_and_sends_the_same_bytes() -> None:
    x, y = _client()
    packed = SyntheticSetDistiller(ConvNet(1, 10, 8), x, y, ipc=3, real_batch=4, multi_formation=True)
    plain = SyntheticSetDistiller(ConvNet(1, 10, 8), x, y, ipc=3, real_batch=4)
    shrunk = _block_mean(x.numpy())
    s = packed.synthetic.detach().numpy()
    labels = packed.synthetic_labels.tolist()
    for i, c in enumerate(labels):
        for q in (s[i, :, :4, :4], s[i, :, 4:, :4], s[i, :, :4, 4:], s[i, :, 4:, 4:]):
            dist = np.abs(shrunk - q).reshape(len(shrunk), -1).max(axis=1)
            match = int(dist.argmin())
            assert dist[match] < 1e-6
            assert int(y[match]) == c
    out, ref = packed.run(steps=0), plain.run(steps=0)
    assert out["images"].shape == (4 * 6, 1, 8, 8)
    assert ref["images"].shape == (6, 1, 8, 8)
    assert out["num_bytes"] == ref["num_bytes"] == 6 * 64 * 4
    assert out["targets"].argmax(1).tolist() == labels * 4


def test_packed_distiller_gradient_reaches_every_quadrant() -> None:
    torch.manual_seed(0)
    x, y = _client()
    d = SyntheticSetDistiller(ConvNet(1, 10, 8), x, y, ipc=3, real_batch=4, multi_formation=True)
    d.matching_loss(*d.sample_real_batch()).backward()
    g = d.synthetic.grad
    assert g is not None
    assert torch.isfinite(g).all()
    for q in (g[..., :4, :4], g[..., 4:, :4], g[..., :4, 4:], g[..., 4:, 4:]):
        assert float(q.abs().sum()) > 0


def test_packed_distiller_needs_even_images() -> None:
    x, y = torch.randn(12, 1, 7, 7), torch.tensor([2, 5]).repeat_interleave(6)
    with pytest.raises(ValueError, match="multi_formation needs an even image height and width"):
        SyntheticSetDistiller(_Flat(), x, y, ipc=3, multi_formation=True)


class _Flat(torch.nn.Module):
    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1)
