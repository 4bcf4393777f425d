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

:func:`gaussian_posterior_table` is the closed-form version of the matched-vs-mismatched
experiment: exact posterior means under Gaussian priors fitted to each domain.
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


def gaussian_posterior_table(
    targets, domains, op_names, n_images: int, image_size: int, sigma: float = 0.01, seed: int = 0
):
    """PSNR on the missing pixels of the exact posterior mean under fitted Gaussian priors.

    One row per (target, prior domain), one ``"mean ± std"`` cell per inpainting operator of
    ``op_names`` (blur and super-resolution hide no pixel and are skipped). A Gaussian
    ``N(mu, S)`` is fitted to each domain's training images (:meth:`GaussianPrior.fit`); the
    posterior mean ``mu + S A^T (A S A^T + sigma^2 I)^{-1} (y - A mu)`` is exact, so the table
    isolates the prior from the solver. Masks and noise use ``seed + 11`` and ``seed + 12``, as
    in :func:`weakprior.prior_mismatch.mismatch_tables`, so the problems are the same.
    """
    from icml26_shared.results import Table

    from .image_domains import load_domain
    from .image_quality import mean_std, psnr_masked
    from .operators import make_operator, measure

    ops = [o for o in op_names if o not in ("blur", "sr2")]
    table = Table(
        "Exact Gaussian priors: PSNR (dB) of the posterior mean on missing pixels",
        ["target", "Gaussian prior fitted on", *ops],
        notes=(
            "Gaussian priors N(mu, S) fitted to each domain's training images; the posterior mean "
            "mu + S A^T (A S A^T + s^2 I)^-1 (y - A mu) is exact, so this isolates the prior from the "
            "solver. The same images, masks and noise as the diffusion table."
        ),
    )
    fitted = {d: GaussianPrior.fit(load_domain(d, "train", image_size, seed=seed))
              for d in dict.fromkeys((*targets, *domains))}  # fmt: skip
    for target in targets:
        x = load_domain(target, "test", image_size, n=n_images, seed=seed)
        for name, prior in fitted.items():
            row = {"target": target, "Gaussian prior fitted on": name}
            for op_name in ops:
                op = make_operator(op_name, tuple(x.shape), seed + 11)
                flat_y = measure(op, x, sigma, seed + 12).flatten(1).double()
                vals = []
                for i in range(x.shape[0]):
                    keep = op.observed(tuple(x.shape))[i].flatten() > 0.5
                    matrix = torch.eye(x[0].numel(), dtype=torch.float64)[keep]
                    mean, _ = prior.posterior(matrix, flat_y[i : i + 1, keep], sigma)
                    vals.append(mean.float().clamp(-1, 1).view(1, *x.shape[1:]))
                est = torch.cat(vals)
                row[op_name] = mean_std(psnr_masked(est, x, op.missing_pixels(tuple(x.shape))))
            table.add_row(**row)
    return table
