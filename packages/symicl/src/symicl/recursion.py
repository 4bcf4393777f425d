"""The extracted depth-indexed update rule (Lutz et al., ICML 2026, Sec. 4).

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification" (arXiv 2604.11613).

Once every ``W_QK`` and ``W_OV`` lies in the commutant (:mod:`symicl.symmetry`) each head
is described by twelve scalars ``(a, b, c, e, f, h)`` for ``W_QK`` and ``(a', ..., h')``
for ``W_OV``, and layer ``l`` of the transformer *is* the explicit recursion below, with
``s(x) = 1^T x`` and ``t(y) = 1^T y``, over context points ``i`` and all tokens ``j``
(context points and the probe)::

    S_ji = a <x_j, x_i> + f <y_j, y_i>                  # mixed feature-label Gram
         + b s(x_j) s(x_i) + c s(x_j) t(y_i) + e t(y_j) s(x_i) + h t(y_j) t(y_i)
    A_ji = softmax_i(S_ji)          (or S_ji / N for linear attention)
    x_j <- x_j + sum_heads sum_i A_ji (a' x_i + (b' s(x_i) + c' t(y_i)) 1_d)
    y_j <- y_j + sum_heads sum_i A_ji (f' y_i + (e' s(x_i) + h' t(y_i)) 1_C)

This couples updates of context points, their labels and the probe (a label-aware
mean shift when ``f > 0``). The probe logits are its final ``y``.

Map: read the scalars -> :func:`extract_recursion`; iterate -> :meth:`Recursion.run`
(NumPy, float64, written from the formula above, not from the matrices);
compare with the transformer -> :meth:`Recursion.verify`.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from symicl import symmetry as sym
from symicl.transformer import EquivariantICLTransformer, check_inputs


def _softmax(s: np.ndarray) -> np.ndarray:
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


@dataclass
class Recursion:
    """Per-layer, per-head scalars of a symmetric transformer, as an explicit update rule.

    Parameters
    ----------
    d, n_classes
        Feature dimension and number of classes.
    attention
        ``"softmax"`` or ``"linear"``.
    qk, ov
        Nested lists ``[layer][head] -> [a, b, c, e, f, h]`` of the score form and the
        value map.
    inert
        Optional masks of the same shape marking coefficients that never receive a gradient
        (set by :func:`symicl.mechanism.prune_recursion`); :meth:`describe` prints them as
        ``inert`` instead of a value.

    Examples
    --------
    >>> from symicl.episodes import LinearTaskSampler, one_hot_labels
    >>> _ = torch.manual_seed(0)
    >>> model = EquivariantICLTransformer(4, 3, n_layers=2, n_heads=1, init_scale=0.3)
    >>> rec = extract_recursion(model)
    >>> rec.depth, len(rec.qk[0][0])
    (2, 6)
    >>> ep = LinearTaskSampler(4, 3, 8, seed=0).sample(16)
    >>> rec.verify(model, ep) < 1e-5
    True
    >>> Recursion.from_json(rec.to_json()) == rec
    True
    """

    d: int
    n_classes: int
    attention: str
    qk: list[list[list[float]]] = field(default_factory=list)
    ov: list[list[list[float]]] = field(default_factory=list)
    #: ``{"qk": mask, "ov": mask}`` ([layer][head][6] booleans) of coefficients that never
    #: receive a gradient (:func:`symicl.mechanism.inert_parameters`), or ``None`` if unknown
    inert: dict | None = None

    @property
    def depth(self) -> int:
        """Number of layers (iterations)."""
        return len(self.qk)

    # -------------------------------------------------------------- serialisation
    def to_dict(self) -> dict:
        """Plain-JSON dict with the coefficient names."""
        out = {
            "d": self.d,
            "n_classes": self.n_classes,
            "attention": self.attention,
            "coefficient_names": list(sym.COEFFICIENT_NAMES),
            "qk": self.qk,
            "ov": self.ov,
        }
        if self.inert is not None:
            out["inert"] = self.inert
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Recursion:
        """Inverse of :meth:`to_dict`; validates the shapes."""
        try:
            rec = cls(
                int(data["d"]),
                int(data["n_classes"]),
                str(data["attention"]),
                data["qk"],
                data["ov"],
                data.get("inert"),
            )
        except (KeyError, TypeError) as err:
            raise ValueError(f"not a symicl recursion: missing or bad field {err}") from err
        arr_qk, arr_ov = np.asarray(rec.qk, dtype=float), np.asarray(rec.ov, dtype=float)
        if arr_qk.ndim != 3 or arr_qk.shape[-1] != 6 or arr_qk.shape != arr_ov.shape:
            raise ValueError("recursion coefficients must be [layer][head][6] for qk and ov")
        if not (np.isfinite(arr_qk).all() and np.isfinite(arr_ov).all()):
            raise ValueError("recursion coefficients contain NaN or inf")
        if rec.inert is not None:
            try:
                shapes = {np.asarray(rec.inert[k], dtype=bool).shape for k in ("qk", "ov")}
            except (KeyError, TypeError, ValueError) as err:
                raise ValueError(f"recursion 'inert' masks are malformed: {err}") from err
            if shapes != {arr_qk.shape}:
                raise ValueError("recursion 'inert' masks must have the coefficients' shape")
        return rec

    def to_json(self) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str) -> Recursion:
        """Parse :meth:`to_json` output."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"recursion file is not valid JSON: {err}") from err
        return cls.from_dict(data)

    def save(self, path: str | Path) -> None:
        """Write the JSON to ``path``."""
        Path(path).write_text(self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> Recursion:
        """Read a recursion saved by :meth:`save`."""
        return cls.from_json(Path(path).read_text())

    # -------------------------------------------------------------- dynamics
    def attention_weights(
        self, qk: tuple[float, ...], feats: np.ndarray, labels: np.ndarray, n: int
    ) -> np.ndarray:
        """Attention of every token on the ``n`` context tokens for one head.

        ``qk = (a, b, c, e, f, h)`` are the head's query-key coefficients; ``feats``
        is ``(B, N+1, d)`` and ``labels`` ``(B, N+1, C)``. Returns ``(B, N+1, N)``:
        the softmax of the scores, or the scores divided by ``n`` for linear attention.
        """
        a, b, c, e, f, h = qk
        s, t = feats.sum(-1), labels.sum(-1)  # (B, N+1)
        xk, yk, sk, tk = feats[:, :n], labels[:, :n], s[:, :n], t[:, :n]
        scores = (
            a * feats @ xk.transpose(0, 2, 1)
            + f * labels @ yk.transpose(0, 2, 1)
            + b * s[:, :, None] * sk[:, None, :]
            + c * s[:, :, None] * tk[:, None, :]
            + e * t[:, :, None] * sk[:, None, :]
            + h * t[:, :, None] * tk[:, None, :]
        )  # (B, N+1, N)
        return _softmax(scores) if self.attention == "softmax" else scores / n

    def run(self, x, y, xq, return_trajectory: bool = False):
        """Iterate the recursion on context ``x (B, N, d)``, one-hot ``y (B, N, C)``, ``xq (B, d)``.

        Returns the probe logits ``(B, C)`` (float64 NumPy); with ``return_trajectory``
        also ``(X, Y)`` of every depth, ``(L+1, B, N+1, d)`` and ``(L+1, B, N+1, C)``
        (token ``N`` is the probe).
        """
        x, y, xq = (torch.as_tensor(v) for v in (x, y, xq))
        check_inputs(x.float(), y.float(), xq.float(), self.d, self.n_classes)
        x, y, xq = (v.detach().cpu().double().numpy() for v in (x, y, xq))
        n = x.shape[1]
        feats = np.concatenate([x, xq[:, None]], axis=1)  # (B, N+1, d)
        labels = np.concatenate([y, np.zeros_like(y[:, :1])], axis=1)  # (B, N+1, C)
        traj_x, traj_y = [feats], [labels]
        for layer_qk, layer_ov in zip(self.qk, self.ov, strict=True):
            s, t = feats.sum(-1), labels.sum(-1)  # (B, N+1)
            xk, yk, sk, tk = feats[:, :n], labels[:, :n], s[:, :n], t[:, :n]
            dx, dy = np.zeros_like(feats), np.zeros_like(labels)
            for (a, b, c, e, f, h), (a2, b2, c2, e2, f2, h2) in zip(
                layer_qk, layer_ov, strict=True
            ):
                attn = self.attention_weights((a, b, c, e, f, h), feats, labels, n)
                vx = a2 * xk + (b2 * sk + c2 * tk)[:, :, None]  # (B, N, d)
                vy = f2 * yk + (e2 * sk + h2 * tk)[:, :, None]  # (B, N, C)
                dx += attn @ vx
                dy += attn @ vy
            feats, labels = feats + dx, labels + dy
            traj_x.append(feats)
            traj_y.append(labels)
        logits = labels[:, -1]
        if return_trajectory:
            return logits, (np.stack(traj_x), np.stack(traj_y))
        return logits

    def verify(self, model: EquivariantICLTransformer, batch: dict[str, torch.Tensor]) -> float:
        """Max ``|logit_recursion - logit_transformer|`` on ``batch`` (model run in float64)."""
        from symicl.episodes import one_hot_labels

        if (model.d, model.n_classes) != (self.d, self.n_classes):
            raise ValueError(
                f"recursion is for d={self.d}, C={self.n_classes}, model for "
                f"d={model.d}, C={model.n_classes}"
            )
        y = one_hot_labels(batch["y"], self.n_classes)
        ref = copy.deepcopy(model).double().eval()
        with torch.no_grad():
            expect = ref(batch["x"].double(), y.double(), batch["xq"].double()).numpy()
        got = self.run(batch["x"], y, batch["xq"])
        return float(np.abs(got - expect).max())

    def describe(self) -> str:
        """Human-readable per-layer update rule."""
        lines = [f"Recursion: d={self.d}, C={self.n_classes}, {self.attention} attention"]
        if self.inert is not None:
            lines[0] += " (inert = never receives a gradient, not learned; pruned to 0)"
        names = sym.COEFFICIENT_NAMES

        def cell(name: str, value: float, inert: bool) -> str:
            return f"{name}=inert" if inert else f"{name}={value:+.3f}"

        for layer, (lqk, lov) in enumerate(zip(self.qk, self.ov, strict=True)):
            for head, (cq, co) in enumerate(zip(lqk, lov, strict=True)):
                iq = self.inert["qk"][layer][head] if self.inert else [False] * 6
                io = self.inert["ov"][layer][head] if self.inert else [False] * 6
                q = ", ".join(cell(n, v, m) for n, v, m in zip(names, cq, iq, strict=True))
                o = ", ".join(cell(n + "'", v, m) for n, v, m in zip(names, co, io, strict=True))
                lines.append(f"  layer {layer} head {head}: score [{q}]  value [{o}]")
        return "\n".join(lines)


def extract_recursion(model: EquivariantICLTransformer, project: bool = False) -> Recursion:
    """Read the per-layer, per-head scalars of a symmetric model into a :class:`Recursion`.

    ``"tied"`` models are read directly. ``"augment"``/``"none"`` models must have been
    projected onto the commutant (:meth:`EquivariantICLTransformer.project_`) first;
    ``project=True`` projects a copy (the recursion then reproduces that projected copy,
    not the original unconstrained model).
    """
    if not isinstance(model, EquivariantICLTransformer):
        raise TypeError(f"expected an EquivariantICLTransformer, got {type(model).__name__}")
    if not bool(model.projected):
        if not project:
            raise ValueError(
                f"model has symmetry={model.symmetry!r} and was not projected onto the "
                "commutant; call model.project_() first or pass project=True"
            )
        model = copy.deepcopy(model).project_()
    if model.symmetry == "tied":
        qk, ov = model.qk_coef.detach().double(), model.ov_coef.detach().double()
    else:
        qk = sym.coefficients(model.qk.detach().double(), model.d, model.n_classes)
        ov = sym.coefficients(model.ov.detach().double(), model.d, model.n_classes)
    return Recursion(model.d, model.n_classes, model.attention, qk.tolist(), ov.tolist())
