"""``BayesianGRM``: the paper's fully Bayesian graded response model, sampled with NumPyro's NUTS.

Priors as in the paper: ``theta_j ~ N(0, 1)``, ``alpha_p ~ LogNormal(0, 0.5)``, ``beta_p ~ N(0, 1)`` restricted
to increasing vectors (an ordered transform with the normal density on the ordered values). The paper builds
the model in PyMC and samples it with the NumPyro NUTS backend; here the same model is written directly in
NumPyro (no PyMC). Needs the ``irt`` extra's optional ``numpyro`` and ``jax`` (CPU). For offline analyses:
minutes, where :func:`~lightning_icml26.algorithms.irt.fit_grm` takes about a second.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lightning_icml26._optional import require

__all__ = ["BayesianGRM"]


def _grm_model(scores: Any, n_categories: int) -> None:
    numpyro = require("numpyro", extra="irt", purpose="BayesianGRM")
    dist = numpyro.distributions
    jnp = require("jax.numpy", extra="irt")
    n, p = scores.shape
    theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([n]).to_event(1))
    alpha = numpyro.sample("alpha", dist.LogNormal(0.0, 0.5).expand([p]).to_event(1))
    beta = numpyro.sample(
        "beta", dist.ImproperUniform(dist.constraints.ordered_vector, (p,), event_shape=(n_categories - 1,))
    )
    numpyro.factor("beta_prior", dist.Normal(0.0, 1.0).log_prob(beta).sum())
    observed = scores > 0
    predictor = alpha[None, :] * theta[:, None]
    with numpyro.handlers.mask(mask=observed):
        numpyro.sample(
            "y",
            dist.OrderedLogistic(predictor, alpha[:, None] * beta),
            obs=jnp.where(observed, scores - 1, 0),
        )


class BayesianGRM:
    """Fully Bayesian GRM by NUTS; posterior means and SDs in the attributes of :class:`GradedResponseModel`.

    Args:
        n_categories: score levels ``K``.
        num_warmup: warm-up draws per chain (paper: 1000).
        num_samples: kept draws per chain (paper: 1000).
        num_chains: chains, run one after the other (paper: 4).
        target_accept: NUTS target acceptance (paper: 0.95).
        seed: PRNG seed.

    Attributes:
        discrimination_, thresholds_, theta_: posterior means; ``theta_sd_``: posterior SD of ``theta``.

    Example:
        >>> BayesianGRM(n_categories=5).num_chains
        2
    """

    def __init__(
        self,
        n_categories: int,
        num_warmup: int = 500,
        num_samples: int = 500,
        num_chains: int = 2,
        target_accept: float = 0.95,
        seed: int = 0,
    ) -> None:
        if isinstance(n_categories, bool) or not isinstance(n_categories, int) or n_categories < 2:
            raise ValueError(f"n_categories must be an int >= 2, got {n_categories!r}")
        for name, value in (("num_warmup", num_warmup), ("num_samples", num_samples), ("num_chains", num_chains)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not 0 < target_accept < 1:
            raise ValueError(f"target_accept must lie in (0, 1), got {target_accept!r}")
        self.n_categories = n_categories
        self.num_warmup = num_warmup
        self.num_samples = num_samples
        self.num_chains = num_chains
        self.target_accept = target_accept
        self.seed = seed

    def fit(self, scores: np.ndarray) -> BayesianGRM:
        """Sample the posterior given integer scores ``[samples, items]`` in ``1..K`` (``0`` = missing).

        Raises:
            ValueError: for scores outside ``0..K`` or an item without responses.
        """
        y = np.asarray(scores)
        if y.ndim != 2 or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"scores must be an integer array [samples, items], got {y.dtype} {y.shape}")
        if y.min() < 0 or y.max() > self.n_categories:
            raise ValueError(f"scores must lie in 1..{self.n_categories} (0 = missing), got {y.min()}..{y.max()}")
        empty = np.flatnonzero((y > 0).sum(0) == 0).tolist()
        if empty:
            raise ValueError(f"every item (variant) needs at least one response; items {empty} have none")
        numpyro = require("numpyro", extra="irt", purpose="BayesianGRM")
        jax = require("jax", extra="irt")
        kernel = numpyro.infer.NUTS(_grm_model, target_accept_prob=self.target_accept)
        mcmc = numpyro.infer.MCMC(
            kernel,
            num_warmup=self.num_warmup,
            num_samples=self.num_samples,
            num_chains=self.num_chains,
            chain_method="sequential",
            progress_bar=False,
        )
        mcmc.run(jax.random.PRNGKey(self.seed), jax.numpy.asarray(y), self.n_categories)
        draws = {k: np.asarray(v) for k, v in mcmc.get_samples().items()}
        self.discrimination_ = draws["alpha"].mean(0)
        self.thresholds_ = draws["beta"].mean(0)
        self.theta_ = draws["theta"].mean(0)
        self.theta_sd_ = draws["theta"].std(0)
        self.samples_ = draws
        return self
