"""Multi-formation: four half-resolution images stored in the quadrants of one synthetic image.

The FedUSD reference code turns this on by default (its ``--aug`` flag): every synthetic image of side
``H`` holds four images of side ``H / 2``, one per quadrant. The client initialises each quadrant with a
real image shrunk by two and optimises the packed images; the matching loss and the server see the four
quadrants blown back up to side ``H``. A client sends the packed images, so it transmits four training
images per stored image at the same number of bytes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["pack_quadrants", "unpack_quadrants"]


def _check(images: Tensor, name: str) -> None:
    if images.ndim != 4:
        raise ValueError(f"{name} must be (n, C, H, W), got shape {tuple(images.shape)}")
    h, w = images.shape[-2:]
    if h % 2 or w % 2:
        raise ValueError(f"{name} must have an even height and width, got {h}x{w}")


def unpack_quadrants(images: Tensor, labels: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
    """Cut every image into its four quadrants and upsample each by two (bilinear, differentiable).

    The output lists the top-left quadrants of all images first, then the bottom-left, top-right and
    bottom-right ones (the reference code's order); ``labels`` are repeated to match.

    Args:
        images: packed images ``(n, C, H, W)`` with even ``H`` and ``W``.
        labels: optional labels ``(n, ...)``.

    Returns:
        ``(4 n, C, H, W)`` images and the labels repeated four times (``None`` if none were given).

    Example:
        >>> import torch
        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> out, lab = unpack_quadrants(x, torch.tensor([3]))
        >>> out.shape, lab.tolist()
        (torch.Size([4, 1, 4, 4]), [3, 3, 3, 3])
    """
    _check(images, "images")
    if labels is not None and labels.shape[:1] != images.shape[:1]:
        raise ValueError(f"labels must have {images.shape[0]} rows, got shape {tuple(labels.shape)}")
    h, w = images.shape[-2] // 2, images.shape[-1] // 2
    quads = [images[..., :h, :w], images[..., h:, :w], images[..., :h, w:], images[..., h:, w:]]
    big = [F.interpolate(q, scale_factor=2.0, mode="bilinear", align_corners=False) for q in quads]
    out_labels = None if labels is None else labels.repeat(4, *([1] * (labels.ndim - 1)))
    return torch.cat(big), out_labels


def pack_quadrants(tl: Tensor, bl: Tensor, tr: Tensor, br: Tensor) -> Tensor:
    """Shrink four batches of images by two (bilinear) and tile them into one batch of packed images.

    Args:
        tl: images for the top-left quadrants ``(n, C, H, W)``.
        bl: images for the bottom-left quadrants (same shape).
        tr: images for the top-right quadrants (same shape).
        br: images for the bottom-right quadrants (same shape).

    Returns:
        ``(n, C, H, W)`` packed images.

    Example:
        >>> import torch
        >>> x = torch.ones(2, 1, 4, 4)
        >>> pack_quadrants(x, 2 * x, 3 * x, 4 * x)[0, 0].tolist()
        [[1.0, 1.0, 3.0, 3.0], [1.0, 1.0, 3.0, 3.0], [2.0, 2.0, 4.0, 4.0], [2.0, 2.0, 4.0, 4.0]]
    """
    for name, x in (("tl", tl), ("bl", bl), ("tr", tr), ("br", br)):
        _check(x, name)
        if x.shape != tl.shape:
            raise ValueError(f"{name} must have the shape of tl {tuple(tl.shape)}, got {tuple(x.shape)}")
    out = tl.new_empty(tl.shape)
    h, w = tl.shape[-2] // 2, tl.shape[-1] // 2
    top, left, bottom, right = slice(0, h), slice(0, w), slice(h, None), slice(w, None)
    for x, rows, cols in ((tl, top, left), (bl, bottom, left), (tr, top, right), (br, bottom, right)):
        out[..., rows, cols] = F.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=False)
    return out
