"""Analytic priors with an exact eps-prediction, and their closed-form posteriors.

These make the solvers testable and give the Bayesian-consistency analysis (paper Sec. 4):

* Forward marginal of a Gaussian prior ``N(mu, S)``:
  ``x_t = sqrt(abar) x0 + sqrt(1 - abar) eps`` is ``N(sqrt(abar) mu, abar S + (1 - abar) I)``, so
  the exact (MMSE) eps-prediction is
  ``eps(x_t, t) = sqrt(1 - abar) (abar S + (1 - abar) I)^{-1} (x_t - sqrt(abar) mu)``
  (:meth:`GaussianPrior.eps`).
* Posterior under ``y = A x + N(0, sigma^2 I)``:
  ``mean = mu + S A^T (A S A^T + sigma^2 I)^{-1} (y - A mu)``,
  ``cov = S - S A^T (A S A^T + sigma^2 I)^{-1} A S`` (:meth:`GaussianPrior.posterior`).
* A Gaussian mixture ``sum_k w_k N(mu_k, S_k)`` has the mixture of the component marginals as
  forward marginal; ``eps = -sqrt(1 - abar) grad log p_t`` (:meth:`GMMPrior.eps`), and its
  posterior is the mixture of the component posteriors reweighted by
  ``w_k N(y; A mu_k, A S_k A^T + sigma^2 I)`` (:meth:`GMMPrior.posterior_mean`).

Vectors are flat, ``(B, d)``; :class:`GaussianPrior` also accepts images reshaped by the caller.
"""

from __future__ import annotations

import torch

from .ddim import linear_alphas_cumprod


class GaussianPrior:
    """Gaussian prior ``N(mu, S)`` on flat vectors with the exact eps-model.

    Examples
    --------
    >>> p = GaussianPrior(torch.zeros(2), torch.eye(2))
    >>> x = torch.tensor([[1.0, -1.0]])
    >>> torch.allclose(p.eps(x, torch.tensor([999])), x * (1 - p.alphas_cumprod[999]).sqrt().float())
    True
    """

    def __init__(
        self, mean: torch.Tensor, cov: torch.Tensor, alphas_cumprod: torch.Tensor | None = None
    ) -> None:
        d = mean.shape[-1]
        if mean.ndim != 1 or cov.shape != (d, d):
            raise ValueError(
                f"mean must be (d,) and cov (d, d); got {tuple(mean.shape)} and {tuple(cov.shape)}"
            )
        self.mean = mean.double()
        self.cov = 0.5 * (cov.double() + cov.double().T)
        self.alphas_cumprod = linear_alphas_cumprod() if alphas_cumprod is None else alphas_cumprod
        self.dim = d

    @classmethod
    def fit(cls, x: torch.Tensor, shrinkage: float = 1e-3) -> GaussianPrior:
        """Empirical mean and covariance of the rows of ``x`` (``(N, d)``), plus ``shrinkage I``."""
        x = x.double().reshape(x.shape[0], -1)
        mu = x.mean(0)
        xc = x - mu
        cov = xc.T @ xc / max(1, x.shape[0] - 1)
        return cls(mu, cov + shrinkage * torch.eye(x.shape[1], dtype=torch.float64))

    def eps(self, x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Exact ``E[eps | x_t]`` at integer timesteps ``t`` (``(B,)``)."""
        shape = x_t.shape
        x = x_t.reshape(shape[0], -1).double()
        out = torch.empty_like(x)
        for tv in torch.unique(t):
            rows = t == tv
            gain, shift = self._eps_map(int(tv))
            out[rows] = (x[rows] - shift) @ gain.T
        return out.to(x_t.dtype).reshape(shape)

    def _eps_map(self, t: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(sqrt(1 - abar) (abar S + (1 - abar) I)^{-1}, sqrt(abar) mu)``, cached per ``t``."""
        cache = self.__dict__.setdefault("_eps_cache", {})
        if t not in cache:
            a = self.alphas_cumprod[t].double()
            marg = a * self.cov + (1 - a) * torch.eye(self.dim, dtype=torch.float64)
            cache[t] = ((1 - a).sqrt() * torch.linalg.inv(marg), a.sqrt() * self.mean)
        return cache[t]

    def sample(self, n: int, seed: int = 0) -> torch.Tensor:
        """``n`` exact samples (float64)."""
        gen = torch.Generator().manual_seed(seed)
        chol = torch.linalg.cholesky(self.cov)
        return self.mean + torch.randn(n, self.dim, generator=gen, dtype=torch.float64) @ chol.T

    def posterior(
        self, matrix: torch.Tensor, y: torch.Tensor, sigma: float
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Closed-form posterior mean ``(B, d)`` and covariance ``(d, d)`` for ``y = M x + noise``."""
        m = matrix.double()
        s = self.cov
        gram = m @ s @ m.T + sigma**2 * torch.eye(m.shape[0], dtype=torch.float64)
        gain = torch.linalg.solve(gram, m @ s).T  # S M^T (M S M^T + s^2 I)^{-1}
        resid = y.double() - self.mean @ m.T
        return self.mean + resid @ gain.T, s - gain @ m @ s


class GMMPrior:
    """Gaussian-mixture prior ``sum_k w_k N(mu_k, S_k)`` with the exact eps-model.

    Examples
    --------
    >>> p = GMMPrior(torch.tensor([1.0]), torch.zeros(1, 2), torch.eye(2)[None])
    >>> q = GaussianPrior(torch.zeros(2), torch.eye(2))
    >>> x, t = torch.randn(3, 2), torch.tensor([10, 500, 900])
    >>> torch.allclose(p.eps(x, t), q.eps(x, t), atol=1e-6)  # one component = Gaussian
    True
    """

    def __init__(
        self,
        weights: torch.Tensor,
        means: torch.Tensor,
        covs: torch.Tensor,
        alphas_cumprod: torch.Tensor | None = None,
    ) -> None:
        k, d = means.shape
        if weights.shape != (k,) or covs.shape != (k, d, d):
            raise ValueError("GMM needs weights (K,), means (K, d), covs (K, d, d)")
        if (weights < 0).any() or not torch.isclose(weights.sum(), torch.tensor(1.0).to(weights)):
            raise ValueError("GMM weights must be non-negative and sum to 1")
        self.weights, self.means, self.covs = weights.double(), means.double(), covs.double()
        self.alphas_cumprod = linear_alphas_cumprod() if alphas_cumprod is None else alphas_cumprod
        self.dim = d

    def eps(self, x_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """Exact ``E[eps | x_t] = -sqrt(1 - abar) grad log p_t(x_t)``."""
        x = x_t.double()
        eye = torch.eye(self.dim, dtype=torch.float64)
        out = torch.empty_like(x)
        for tv in torch.unique(t):
            rows = t == tv
            a = self.alphas_cumprod[int(tv)].double()
            covs = a * self.covs + (1 - a) * eye  # (K, d, d)
            mus = a.sqrt() * self.means  # (K, d)
            r = x[rows][:, None, :] - mus[None]  # (B, K, d)
            sol = torch.linalg.solve(covs[None], r.unsqueeze(-1)).squeeze(-1)  # Sigma^-1 r
            logdet = torch.logdet(covs)
            logp = -0.5 * (r * sol).sum(-1) - 0.5 * logdet + self.weights.log()
            resp = torch.softmax(logp, dim=1)  # (B, K)
            score = -(resp[..., None] * sol).sum(1)
            out[rows] = -(1 - a).sqrt() * score
        return out.to(x_t.dtype)

    def sample(self, n: int, seed: int = 0) -> torch.Tensor:
        """``n`` exact samples (float64)."""
        gen = torch.Generator().manual_seed(seed)
        comp = torch.multinomial(self.weights, n, replacement=True, generator=gen)
        chol = torch.linalg.cholesky(self.covs)
        z = torch.randn(n, self.dim, generator=gen, dtype=torch.float64)
        return self.means[comp] + (chol[comp] @ z[..., None]).squeeze(-1)

    def posterior_mean(self, matrix: torch.Tensor, y: torch.Tensor, sigma: float) -> torch.Tensor:
        """Exact posterior mean ``(B, d)`` for ``y = M x + N(0, sigma^2 I)``."""
        m = matrix.double()
        y = y.double()
        eye = torch.eye(m.shape[0], dtype=torch.float64)
        logw, means = [], []
        for w, mu, s in zip(self.weights, self.means, self.covs, strict=True):
            comp = GaussianPrior(mu, s, self.alphas_cumprod)
            mean_k, _ = comp.posterior(m, y, sigma)
            gram = m @ s @ m.T + sigma**2 * eye
            r = y - mu @ m.T
            quad = (r * torch.linalg.solve(gram, r.T).T).sum(-1)
            logw.append(w.log() - 0.5 * quad - 0.5 * torch.logdet(gram))
            means.append(mean_k)
        resp = torch.softmax(torch.stack(logw, 1), dim=1)  # (B, K)
        return (resp[..., None] * torch.stack(means, 1)).sum(1)
