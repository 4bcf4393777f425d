"""Runs inside the isolated stadion environment (numpy, jax, stadion only; no ou_ident).

Called by ``stadion_side_by_side.py`` as ``python stadion_worker.py IN.npz OUT.npz``:
reads the environments' samples, targets and probe parameters, evaluates stadion's own
``kds_loss`` at the probes (float64) and fits stadion's ``LinearSDE`` at its defaults
(except ``steps``), then writes the estimates to ``OUT.npz``.
"""

import sys
from functools import partial

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from stadion import kds_loss  # noqa: E402
from stadion.inference import rbf_kernel  # noqa: E402
from stadion.models import LinearSDE  # noqa: E402


def main(src: str, dst: str) -> None:
    z = np.load(src)
    n_env = int(z["n_env"])
    xs = [z[f"x{e}"] for e in range(n_env)]
    targets = z["targets"]

    def f(x, A, b, s):
        return A @ x + b

    def sigma(x, A, b, s):
        return jnp.diag(jnp.sqrt(s))

    probes = {}
    for est in ("linear", "u-statistic"):
        loss = jax.jit(kds_loss(f, sigma, partial(rbf_kernel, bandwidth=5.0), estimator=est))
        probes[est] = np.array(
            [
                float(
                    loss(jnp.asarray(z["probe_x"]), jnp.asarray(A), jnp.asarray(b), jnp.asarray(s))
                )
                for A, b, s in zip(z["probe_A"], z["probe_b"], z["probe_s"], strict=True)
            ]
        )
    model = LinearSDE()
    model.fit(
        jax.random.PRNGKey(int(z["seed"])),
        [x.astype(np.float32) for x in xs],
        targets=targets,
        steps=int(z["steps"]),
        verbose=0,
    )

    def get(key):
        return np.asarray(model.param[key], dtype=np.float64)

    np.savez(
        dst,
        weights=get("weights"),
        biases=get("biases"),
        log_noise_scale=get("log_noise_scale"),
        kds_linear=probes["linear"],
        kds_u=probes["u-statistic"],
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
