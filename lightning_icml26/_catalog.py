"""The shipped recipes and where a launch writes: light enough for ``icml26 list`` (no Lightning import).

A recipe is a top-level ``<name>.yaml`` of the :mod:`lightning_icml26.recipes` config package with a one-line
``description``; files whose name starts with ``_`` are building blocks. Multi-process safety: the run
directory is decided once, before anything is launched, from ``ICML26_RUN_DIR`` or a run id every rank
shares (``ICML26_RUN_ID``, ``SLURM_JOB_ID``, ``TORCHELASTIC_RUN_ID``, the rendezvous address); Hydra's
``${now:}`` is never used for it because ranks started at different seconds would disagree.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

__all__ = ["CONFIG_MODULE", "RecipeInfo", "global_rank", "list_recipes", "recipes_dir", "resolve_run_dir"]

#: The Python package that holds the Hydra configs; Hydra finds it as ``pkg://lightning_icml26.recipes``.
CONFIG_MODULE = "lightning_icml26.recipes"


@dataclass(frozen=True)
class RecipeInfo:
    """A recipe's name, its one-line description and its file."""

    name: str
    description: str
    path: Path


def recipes_dir() -> Path:
    """Folder of the shipped recipes (the ``lightning_icml26/recipes`` config package).

    Example:
        >>> (recipes_dir() / "quickstart.yaml").is_file()
        True
    """
    return Path(__file__).resolve().parent / "recipes"


def list_recipes() -> list[RecipeInfo]:
    """All shipped recipes, sorted by name.

    Example:
        >>> "quickstart" in [r.name for r in list_recipes()]
        True
        >>> any(r.name.startswith("_") for r in list_recipes())
        False
    """
    infos = []
    for path in sorted(recipes_dir().glob("*.yaml")):
        if path.stem.startswith("_"):
            continue
        raw = OmegaConf.load(path)
        description = str(raw.get("description", "")) if isinstance(raw, DictConfig) else ""
        infos.append(RecipeInfo(path.stem, description.strip(), path))
    return infos


def global_rank() -> int:
    """This process's global rank from the launcher's environment (0 when not launched).

    Example:
        >>> isinstance(global_rank(), int)
        True
    """
    for key in ("RANK", "SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        if key in os.environ:
            return int(os.environ[key])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    node = int(os.environ.get("NODE_RANK", "0"))
    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    return node * per_node + local


def resolve_run_dir(recipe: str, output_root: str | Path = "outputs") -> Path:
    """The run directory every rank of one launch agrees on.

    Order: ``ICML26_RUN_DIR``; ``<output_root>/<recipe>/<id>`` with the id taken from ``ICML26_RUN_ID``,
    ``SLURM_JOB_ID``, ``TORCHELASTIC_RUN_ID`` (when not ``"none"``) or, under a multi-process launch, the
    rendezvous ``MASTER_ADDR``/``MASTER_PORT``; a timestamp only for a single process.

    Args:
        recipe: recipe name, the middle path component.
        output_root: parent of all runs.

    Example:
        >>> import os
        >>> saved = {k: os.environ.pop(k) for k in ("ICML26_RUN_DIR", "ICML26_RUN_ID") if k in os.environ}
        >>> os.environ["ICML26_RUN_ID"] = "doc"
        >>> str(resolve_run_dir("quickstart", "out"))
        'out/quickstart/doc'
        >>> del os.environ["ICML26_RUN_ID"]
        >>> os.environ.update(saved)
    """
    if os.environ.get("ICML26_RUN_DIR"):
        return Path(os.environ["ICML26_RUN_DIR"])
    run_id = os.environ.get("ICML26_RUN_ID") or os.environ.get("SLURM_JOB_ID")
    if not run_id and os.environ.get("TORCHELASTIC_RUN_ID", "none") != "none":
        run_id = os.environ["TORCHELASTIC_RUN_ID"]
    if not run_id and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        addr = os.environ.get("MASTER_ADDR", "local").replace(":", "_")
        run_id = f"ddp-{addr}-{os.environ.get('MASTER_PORT', '0')}"
    if not run_id:
        run_id = time.strftime("%Y-%m-%d_%H-%M-%S")
    return Path(output_root) / recipe / run_id
