"""Your own PDE from a YAML specification: ``lorfs solve --spec pde.yaml --out DIR``.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026 (the LoRFS representation and closed-form losses; the spec
format is this package's).

A spec describes ``L u + sum_p a_p u^p = f`` on a box:

.. code-block:: yaml

    name: heat-expcos
    axes:                                  # order = coordinate order; time (if any) first
      - {name: t, domain: [0, 1], boundary: time, modes: 8}
      - {name: x, domain: [0, 2*pi], boundary: periodic, modes: 24}   # periodic|dirichlet|neumann
    operator:                              # L = constant + sum coef d^order/d axis^order
      constant: 0.0
      derivatives:
        - {axis: t, order: 1, coef: 1.0}
        - {axis: x, order: 2, coef: -0.5}
    reaction: {}                           # {p: a_p}, p in {2, 3}
    initial: "exp(cos(x))"                 # expression | {file: u0.npy} | [{x: "...", coef: c}, ...]
    source: null                           # same forms, time-independent
    exact: null                            # optional expression of all axes: error history
    solver: {rank: 2, max_rank: 12, rank_step: 2, tol: 1e-6, slabs: 10, picard: 30}

Map to the code:

- expressions (numpy functions ``sin cos exp tanh sqrt log abs``, ``pi``, the axis names),
  array files and separable term lists become low-rank Fourier sums by 1-D FFT projection
  (odd/even extension on Dirichlet/Neumann axes) ........................... :func:`data_sum`
- the spec becomes a :class:`lorfs.problems.Problem` ....................... :func:`build_spec_problem`
- automatic rank growth until the closed-form relative residual is below ``tol``
  (time-dependent: :func:`lorfs.time_slabs.solve_nonlinear`; steady and linear:
  :func:`lorfs.als.solve_linear`) ............................................ :func:`solve_spec`
- outputs: ``solution.npz`` (slab edges and factor coefficients, plus values on a grid for
  ``D = 2``), ``result.json`` (residual/error history per rank), ``solution.png`` .. :func:`write_outputs`
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .basis import CDTYPE, RDTYPE, FourierAxis
from .fourier_sum import SeparableSum
from .operators import Identity, SeparableOperator
from .problems import BOUNDARIES, AxisSpec, Problem
from .residual import Piece, piece_norm2

__all__ = ["SpecRun", "build_spec_problem", "data_sum", "load_spec", "solve_spec", "write_outputs"]

_FUNCS = {
    "sin": np.sin,
    "cos": np.cos,
    "exp": np.exp,
    "tanh": np.tanh,
    "sqrt": np.sqrt,
    "log": np.log,
    "abs": np.abs,
    "pi": math.pi,
}


def _number(value, what: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(eval(value, {"__builtins__": {}}, dict(_FUNCS)))  # noqa: S307 - user spec
        except Exception as exc:  # noqa: BLE001 - any bad expression is a usage error
            raise ValueError(f"{what}: cannot evaluate {value!r} ({exc})") from None
    raise ValueError(f"{what} must be a number or an expression, got {value!r}")


def _expression(expr: str, names: list[str], what: str) -> Callable[..., np.ndarray]:
    if not isinstance(expr, str) or not expr.strip():
        raise ValueError(f"{what} must be a non-empty expression string, got {expr!r}")
    try:
        code = compile(expr, f"<{what}>", "eval")
    except SyntaxError as exc:
        raise ValueError(f"{what}: invalid expression {expr!r} ({exc.msg})") from None
    unknown = set(code.co_names) - set(_FUNCS) - set(names)
    if unknown:
        raise ValueError(
            f"{what}: unknown name(s) {sorted(unknown)} in {expr!r}; use {names} and {sorted(_FUNCS)}"
        )

    def fn(**values):
        out = eval(code, {"__builtins__": {}}, {**_FUNCS, **values})  # noqa: S307 - user spec
        return np.broadcast_to(np.asarray(out, dtype=float), np.broadcast(*values.values()).shape)

    return fn


def _project(axis: FourierAxis, values: Callable[[np.ndarray], np.ndarray]) -> torch.Tensor:
    """Exponential coefficients ``(2K+1,)`` of a function on one axis (odd/even extension off-periodic)."""
    k = axis.modes
    n = 8 * k + 8
    s = axis.a + axis.period * np.arange(n) / n
    if axis.kind == "periodic":
        v = values(s)
    elif axis.kind in ("sine", "cosine"):
        inside = s <= axis.b
        mirror = 2 * axis.b - s
        sign = -1.0 if axis.kind == "sine" else 1.0
        v = np.where(
            inside, values(np.minimum(s, axis.b)), sign * values(np.maximum(mirror, axis.a))
        )
    else:
        raise ValueError(f"axis {axis.name!r}: data must not depend on the time axis")
    fhat = np.fft.fft(np.asarray(v, dtype=float)) / n
    idx = np.arange(-k, k + 1) % n
    c = torch.tensor(fhat[idx], dtype=CDTYPE)
    if axis.kind == "sine":  # exact antisymmetry c_{-k} = -c_k
        c = 0.5 * (c - c.flip(0))
    elif axis.kind == "cosine":
        c = 0.5 * (c + c.flip(0))
    return c


def data_sum(
    value, axes: list[FourierAxis], what: str, base_dir: Path | None = None
) -> SeparableSum:
    """A spec's data (expression, ``{file: ...}`` or a list of separable terms) as a low-rank sum.

    The time axis (if any) gets the constant factor 1. A plain expression or an array file
    needs exactly one non-time axis; in more dimensions give a list of separable terms, e.g.
    ``[{x: "sin(pi*x)", y: "sin(pi*y)", coef: 2}]``.
    """
    space = [ax for ax in axes if ax.kind != "extension"]
    names = [ax.name for ax in axes]

    def term(
        factors: Mapping[str, Callable[[np.ndarray], np.ndarray]], coef: float
    ) -> SeparableSum:
        out = []
        for ax in axes:
            if ax.kind == "extension":
                c = torch.ones(1, dtype=CDTYPE)
            elif ax.name in factors:
                c = _project(ax, factors[ax.name])
            else:
                c = torch.ones(1, dtype=CDTYPE)
            out.append(c[None, :])
        out[0] = out[0] * coef
        return SeparableSum(axes, out)

    if isinstance(value, str):
        if len(space) != 1:
            raise ValueError(
                f"{what}: a single expression needs one space axis, the spec has {len(space)}; "
                "give a list of separable terms ([{x: ..., y: ...}, ...])"
            )
        fn = _expression(value, [space[0].name], what)
        return term({space[0].name: lambda s, fn=fn, n=space[0].name: fn(**{n: s})}, 1.0)
    if isinstance(value, Mapping) and "file" in value:
        if len(space) != 1 or space[0].kind != "periodic":
            raise ValueError(f"{what}: an array file needs exactly one periodic space axis")
        path = Path(value["file"])
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        try:
            arr = np.load(path) if path.suffix == ".npy" else np.loadtxt(path, delimiter=",")
        except (OSError, ValueError) as exc:
            raise ValueError(f"{what}: cannot read {str(path)!r} ({exc})") from None
        arr = np.asarray(arr, dtype=float).reshape(-1)
        if arr.size < 4 or not np.isfinite(arr).all():
            raise ValueError(f"{what}: {str(path)!r} needs >= 4 finite values on the periodic grid")
        ax = space[0]
        fhat = np.fft.fft(arr) / arr.size
        k = min(ax.modes, (arr.size - 1) // 2)
        c = np.zeros(2 * ax.modes + 1, dtype=complex)
        for j in range(-k, k + 1):
            c[ax.modes + j] = fhat[j % arr.size]
        facs = [
            torch.ones(1, 1, dtype=CDTYPE) if a is not ax else torch.tensor(c)[None, :]
            for a in axes
        ]
        return SeparableSum(axes, facs)
    if isinstance(value, list) and value:
        total = None
        for i, t in enumerate(value):
            if not isinstance(t, Mapping):
                raise ValueError(f"{what}[{i}] must be a mapping {{axis: expression, coef: c}}")
            bad = set(t) - set(names) - {"coef"}
            if bad:
                raise ValueError(f"{what}[{i}]: unknown axes {sorted(bad)}; the axes are {names}")
            facs = {}
            for n, e in t.items():
                if n == "coef":
                    continue
                fn = _expression(str(e), [n], f"{what}[{i}].{n}")
                facs[n] = lambda s, fn=fn, n=n: fn(**{n: s})
            s = term(facs, _number(t.get("coef", 1.0), f"{what}[{i}].coef"))
            total = s if total is None else total + s
        return total
    raise ValueError(
        f"{what} must be an expression, {{file: path}} or a list of terms, got {value!r}"
    )


# ---------------------------------------------------------------- spec -> Problem


@dataclass
class SpecSettings:
    """The ``solver:`` block of a spec."""

    rank: int = 2
    max_rank: int = 12
    rank_step: int = 2
    tol: float = 1e-6
    slabs: int = 10
    picard: int = 30
    sweeps: int = 2


def load_spec(path: str | Path) -> dict:
    """Read a YAML spec (one clear ``ValueError`` for a missing file or bad YAML)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"spec file {str(path)!r} does not exist")
    try:
        spec = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ValueError(f"spec {str(path)!r} is not valid YAML ({exc})") from None
    if not isinstance(spec, dict):
        raise ValueError(f"spec {str(path)!r} must be a mapping with axes/operator/...")
    return spec


def build_spec_problem(spec: Mapping, base_dir: Path | None = None) -> tuple[Problem, SpecSettings]:
    """The :class:`~lorfs.problems.Problem` and solver settings of a spec mapping.

    Examples
    --------
    >>> spec = {"axes": [{"name": "t", "domain": [0, 1], "boundary": "time", "modes": 6},
    ...                  {"name": "x", "domain": [0, "2*pi"], "modes": 4}],
    ...         "operator": {"derivatives": [{"axis": "t", "order": 1}, {"axis": "x", "order": 2, "coef": -1}]},
    ...         "initial": "sin(x)"}
    >>> problem, settings = build_spec_problem(spec)
    >>> problem.dim, problem.is_linear, settings.rank
    (2, True, 2)
    """
    known = {"name", "axes", "operator", "reaction", "initial", "source", "exact", "solver"}
    extra = set(spec) - known
    if extra:
        raise ValueError(f"spec: unknown keys {sorted(extra)}; allowed: {sorted(known)}")
    axes_spec = spec.get("axes")
    if not isinstance(axes_spec, list) or not axes_spec:
        raise ValueError("spec: 'axes' must be a non-empty list of {name, domain, boundary, modes}")
    specs, modes, names = [], [], []
    for i, a in enumerate(axes_spec):
        if not isinstance(a, Mapping) or "name" not in a or "domain" not in a:
            raise ValueError(f"spec: axes[{i}] needs 'name' and 'domain'")
        name = str(a["name"])
        if not name.isidentifier() or name in _FUNCS or name in names:
            raise ValueError(f"spec: axes[{i}] name {name!r} must be a new identifier")
        dom = a["domain"]
        if not isinstance(dom, list | tuple) or len(dom) != 2:
            raise ValueError(f"spec: axes[{i}].domain must be [a, b]")
        lo, hi = (_number(v, f"axes[{i}].domain") for v in dom)
        if not hi > lo:
            raise ValueError(f"spec: axes[{i}].domain needs b > a, got [{lo:g}, {hi:g}]")
        boundary = str(a.get("boundary", "periodic"))
        if boundary not in BOUNDARIES:
            raise ValueError(
                f"spec: axes[{i}].boundary must be one of {BOUNDARIES}, got {boundary!r}"
            )
        m = a.get("modes", 8)
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError(f"spec: axes[{i}].modes must be a positive integer, got {m!r}")
        specs.append(AxisSpec(name, (lo, hi), boundary))
        modes.append(m)
        names.append(name)
    times = [i for i, s in enumerate(specs) if s.boundary == "time"]
    if times and times != [0]:
        raise ValueError(
            "spec: the time axis (boundary: time) must be the first axis, and only one"
        )
    op_spec = spec.get("operator") or {}
    if not isinstance(op_spec, Mapping):
        raise ValueError("spec: 'operator' must be a mapping {constant, derivatives}")
    ders: dict[int, dict[int, float]] = {}
    for i, d in enumerate(op_spec.get("derivatives") or []):
        if not isinstance(d, Mapping) or d.get("axis") not in names:
            raise ValueError(f"spec: operator.derivatives[{i}].axis must be one of {names}")
        order = d.get("order", 1)
        if isinstance(order, bool) or not isinstance(order, int) or order < 1:
            raise ValueError(f"spec: operator.derivatives[{i}].order must be a positive integer")
        j = names.index(d["axis"])
        ders.setdefault(j, {})
        ders[j][order] = ders[j].get(order, 0.0) + _number(
            d.get("coef", 1.0), f"operator.derivatives[{i}].coef"
        )
    operator = SeparableOperator(_number(op_spec.get("constant", 0.0), "operator.constant"), ders)
    if not ders and operator.constant == 0:
        raise ValueError(
            "spec: the operator is zero; give operator.derivatives or operator.constant"
        )
    reaction = {}
    for p, a in (spec.get("reaction") or {}).items():
        if str(p) not in ("2", "3"):
            raise ValueError(f"spec: reaction powers must be 2 or 3, got {p!r}")
        reaction[int(p)] = _number(a, f"reaction[{p}]")
    if reaction and not times:
        raise ValueError(
            "spec: a reaction term needs a time axis (steady nonlinear problems are not supported)"
        )
    if times and spec.get("initial") is None:
        raise ValueError("spec: a time-dependent problem needs 'initial'")
    if not times and spec.get("initial") is not None:
        raise ValueError("spec: 'initial' needs an axis with boundary: time")
    init_value, src_value = spec.get("initial"), spec.get("source")
    if not times and src_value is None:
        raise ValueError("spec: a steady problem needs a 'source'")
    for what, v in (("initial", init_value), ("source", src_value)):
        if v is not None:  # validate once, on the spec's own axes
            data_sum(v, _axes(specs, modes), what, base_dir)

    exact_fn = None
    if spec.get("exact") is not None:
        efn = _expression(spec["exact"], names, "exact")

        def exact_fn(p):
            cols = {n: p[:, j].numpy() for j, n in enumerate(names)}
            return torch.tensor(np.array(efn(**cols)), dtype=RDTYPE)

    settings = SpecSettings()
    for k, v in (spec.get("solver") or {}).items():
        if not hasattr(settings, k):
            raise ValueError(f"spec: unknown solver setting {k!r}; allowed: {list(vars(settings))}")
        setattr(settings, k, type(getattr(settings, k))(v))
    if settings.rank < 1 or settings.max_rank < settings.rank or settings.rank_step < 1:
        raise ValueError("spec: solver needs 1 <= rank <= max_rank and rank_step >= 1")
    null_space = (
        not times
        and operator.constant == 0
        and all(s.boundary in ("periodic", "neumann") for s in specs)
    )
    problem = Problem(
        str(spec.get("name", "spec")),
        specs,
        operator,
        reaction=reaction,
        source=(lambda axes: [(data_sum(src_value, axes, "source", base_dir), Identity())])
        if src_value is not None
        else None,
        initial=(lambda axes: data_sum(init_value, axes, "initial", base_dir))
        if init_value is not None
        else None,
        exact=exact_fn,
        null_space=null_space,
        modes=modes,
        rank=settings.rank,
        description="user spec",
    )
    return problem, settings


def _axes(specs, modes):
    from .problems import BASIS_FOR

    return [
        FourierAxis(s.name, s.domain, m, kind=BASIS_FOR[s.boundary])
        for s, m in zip(specs, modes, strict=True)
    ]


# ---------------------------------------------------------------- solve with rank growth


@dataclass
class SpecRun:
    """A solved spec: the solution, per-rank history and timing."""

    problem: Problem
    solution: object  # SlabSolution (time) or LowRankFourierSum (steady)
    history: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0


def _slab_residual(problem: Problem, sol) -> float:
    """Closed-form relative residual over the slabs.

    ``||L u + N(u) - f|| / (sum_parts ||L_part u|| + ||N(u)|| + ||f||)``, where the operator's
    parts (``c0``, each axis' derivatives) are measured separately, so a homogeneous equation
    (``L u = 0``) is not trivially at 1.
    """
    from .time_slabs import crop_periodic, nonlinear_term

    num = den = 0.0
    for u in sol.fields:
        axes = u.axes
        items = [(u, problem.operator)]
        op = problem.operator
        parts = [SeparableOperator(op.constant)] if op.constant != 0 else []
        parts += [SeparableOperator(0.0, {j: o}) for j, o in op.derivatives.items()]
        scale = [  # each operator part on its own: ||u_t||, ||nu u_xx||, ||c u||
            float(piece_norm2(Piece([(u, part)], ["integral"] * len(axes)), real=True))
            for part in parts
        ]
        nl = nonlinear_term(
            u, problem.reaction, 4 * u.rank, [ax.modes for ax in axes], max_terms=4 * u.rank**2
        )
        if nl is not None:
            nl = crop_periodic(nl, [ax.modes for ax in axes])
            items.append((nl, Identity()))
            scale.append(
                float(piece_norm2(Piece([(nl, Identity())], ["integral"] * len(axes)), real=True))
            )
        if problem.source is not None:
            for s, op in problem.source(axes):
                items.append((s, op * -1.0))
                scale.append(
                    float(piece_norm2(Piece([(s, op)], ["integral"] * len(axes)), real=True))
                )
        num += float(piece_norm2(Piece(items, ["integral"] * len(axes)), real=True))
        den += sum(math.sqrt(max(v, 0.0)) for v in scale) ** 2
    return math.sqrt(max(num, 0.0) / max(den, 1e-300))


def solve_spec(
    problem: Problem, settings: SpecSettings, progress: Callable[[str], None] | None = None
) -> SpecRun:
    """Solve with rank growth ``rank, rank + rank_step, ...`` until the relative residual <= ``tol``."""
    from .als import solve_linear
    from .problems import relative_error_on
    from .residual import Piece as _Piece

    start, cpu = time.perf_counter(), time.process_time()
    run = SpecRun(problem, None)
    rank = settings.rank
    while True:
        t0 = time.perf_counter()
        if problem.time_axis is not None:
            from .time_slabs import solve_nonlinear

            def slab_progress(s, n, change, rank=rank):
                if progress is not None:
                    progress(f"rank {rank}: slab {s}/{n} (last Picard change {change:.1e})")

            sol = solve_nonlinear(
                problem,
                rank=rank,
                slabs=settings.slabs,
                picard=settings.picard,
                sweeps=settings.sweeps,
                progress=slab_progress,
            )
            residual = _slab_residual(problem, sol)
        else:
            sol, hist = solve_linear(problem, rank=rank)
            pieces0 = problem.pieces(sol.as_sum())
            zero = sum(
                float(
                    piece_norm2(
                        _Piece(
                            [it for i, it in enumerate(p.items) if i != 0],
                            p.measures,
                            p.weight,
                            None,
                        )
                    )
                )
                for p in pieces0
                if len(p.items) > 1
            )
            residual = math.sqrt(max(hist.losses[-1], 0.0) / max(zero, 1e-300))
        entry = {"rank": rank, "residual": residual, "seconds": time.perf_counter() - t0}
        if problem.exact is not None:
            entry["error"] = relative_error_on(problem, sol, n=4000)
        run.history.append(entry)
        run.solution = sol
        if progress is not None:
            err = f", error {entry['error']:.2e}" if "error" in entry else ""
            progress(
                f"rank {rank}: relative residual {residual:.2e}{err} ({entry['seconds']:.1f} s)"
            )
        if residual <= settings.tol or rank + settings.rank_step > settings.max_rank:
            break
        rank += settings.rank_step
    run.seconds = time.perf_counter() - start
    run.cpu_seconds = time.process_time() - cpu
    return run


# ---------------------------------------------------------------- outputs


def _grid(problem: Problem, n: int = 101) -> list[np.ndarray]:
    return [np.linspace(s.domain[0], s.domain[1], n) for s in problem.specs]


def write_outputs(run: SpecRun, out: Path) -> dict:
    """Write ``solution.npz``, ``result.json`` and ``solution.png`` into ``out`` (atomically)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from icml26_shared.results import atomic_write_bytes, atomic_write_figure, atomic_write_text

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sol = run.solution
    fields = sol.fields if hasattr(sol, "fields") else [sol.as_sum()]
    arrays: dict[str, np.ndarray] = {
        "edges": np.array(getattr(sol, "edges", []), dtype=float),
        "axis_names": np.array([s.name for s in run.problem.specs]),
        "domains": np.array([s.domain for s in run.problem.specs], dtype=float),
    }
    for i, u in enumerate(fields):
        for j, f in enumerate(u.factors):
            arrays[f"slab{i}_axis{j}"] = f.detach().numpy()
        arrays[f"slab{i}_kinds"] = np.array([ax.kind for ax in u.axes])
        arrays[f"slab{i}_periods"] = np.array([ax.period for ax in u.axes])
        arrays[f"slab{i}_starts"] = np.array([ax.a for ax in u.axes])
    grid = None
    if run.problem.dim == 2:
        g0, g1 = _grid(run.problem)
        tt, xx = np.meshgrid(g0, g1, indexing="ij")
        pts = torch.tensor(np.stack([tt.ravel(), xx.ravel()], 1), dtype=RDTYPE)
        with torch.no_grad():
            grid = sol(pts).reshape(tt.shape).numpy()
        arrays.update(
            {
                "grid_" + run.problem.specs[0].name: g0,
                "grid_" + run.problem.specs[1].name: g1,
                "u": grid,
            }
        )
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write_bytes(out / "solution.npz", buf.getvalue())
    result = {
        "name": run.problem.name,
        "axes": [s.name for s in run.problem.specs],
        "rank": fields[0].rank if fields else 0,
        "slabs": len(fields),
        "history": run.history,
        "residual": run.history[-1]["residual"],
        "error": run.history[-1].get("error"),
        "wall_seconds": run.seconds,
        "cpu_seconds": run.cpu_seconds,
    }
    atomic_write_text(out / "result.json", json.dumps(result, indent=2) + "\n")
    fig, ax = plt.subplots(figsize=(6, 4))
    names = [s.name for s in run.problem.specs]
    if grid is not None:
        g0, g1 = _grid(run.problem)
        im = ax.imshow(
            grid.T,
            origin="lower",
            aspect="auto",
            extent=[g0[0], g0[-1], g1[0], g1[-1]],
            cmap="viridis",
        )
        fig.colorbar(im, ax=ax, label="u")
        ax.set_xlabel(names[0])
        ax.set_ylabel(names[1])
    else:
        lines = _grid(run.problem)
        mid = [0.5 * (s.domain[0] + s.domain[1]) for s in run.problem.specs]
        pts = np.tile(mid, (lines[-1].size, 1))
        pts[:, -1] = lines[-1]
        if run.problem.time_axis is not None:
            pts[:, 0] = run.problem.specs[0].domain[1]
        with torch.no_grad():
            vals = sol(torch.tensor(pts, dtype=RDTYPE)).numpy()
        ax.plot(lines[-1], vals)
        ax.set_xlabel(names[-1])
        ax.set_ylabel("u (other coordinates at the centre, t at the end)")
    ax.set_title(
        f"{run.problem.name}: LoRFS rank {result['rank']}, residual {result['residual']:.1e}"
    )
    fig.tight_layout()
    atomic_write_figure(out / "solution.png", fig)
    plt.close(fig)
    return result
