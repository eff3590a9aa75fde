"""Hydra configs of the ``icml26`` recipes, found through the ``pkg://lightning_icml26.recipes`` search path.

Top-level ``<name>.yaml`` files are runnable recipes (``icml26 list``); files whose name starts with ``_``
are shared building blocks. Config groups: ``trainer/``, ``logger/``, ``callbacks/``, ``data/``, ``model/``
(with ``model/optimizer/`` and ``model/lr_scheduler/``), ``strategy/`` and ``task/``. The typed schema of the
top level and of the trainer (``recipe_schema``) lives in :mod:`lightning_icml26._schema`.
"""
