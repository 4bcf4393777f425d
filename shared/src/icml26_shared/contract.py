"""The contract every paper package's LightningModule must honour.

:func:`check_contract` is called by each package's tests on its smallest
configuration. It checks, on CPU:

1. the model and datamodule build and are Lightning objects;
2. a forward pass runs on a real batch and (unless ``backward=False``, for
   non-parametric methods) a backward pass gives finite gradients;
3. two builds under the same seed give identical outputs;
4. ``Trainer.fit`` runs with ``fast_dev_run``;
5. a checkpoint save / ``load_from_checkpoint`` round trip gives identical outputs.

A failure raises ``AssertionError`` naming the step.

:func:`assert_one_line_error` is the matching check for a package's command line: bad input
must give one line on standard error naming the problem, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch


def assert_one_line_error(stderr: str, match: str, code: int | None = None) -> None:
    """Assert that ``stderr`` is one line containing ``match`` (and the exit ``code`` was 2).

    Use with pytest's ``capsys``: ``assert_one_line_error(capsys.readouterr().err, "rank",
    main([...]))``.

    >>> assert_one_line_error("pkg: error: rate must be > 0", "rate", 2)
    """
    err = stderr.strip()
    if code is not None:
        assert code == 2, f"exit code {code}, expected 2; stderr: {err}"
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    assert match in err, err


def _default_forward(model: pl.LightningModule, batch: Any) -> Any:
    if isinstance(batch, torch.Tensor):
        return model(batch)
    if isinstance(batch, Sequence) and batch and isinstance(batch[0], torch.Tensor):
        return model(batch[0])
    if isinstance(batch, Mapping):
        return model(**batch)
    return model(batch)


def _tensors(obj: Any, detach: bool = True) -> list[torch.Tensor]:
    """Flatten nested outputs (tensors, arrays, numbers, dicts, sequences) into tensors."""
    if isinstance(obj, torch.Tensor):
        return [obj.detach() if detach else obj]
    if isinstance(obj, np.ndarray):
        return [torch.from_numpy(obj)]
    if isinstance(obj, (int, float, np.number, bool)):
        return [torch.tensor(float(obj))]
    if isinstance(obj, Mapping):
        return [t for k in sorted(obj, key=str) for t in _tensors(obj[k], detach)]
    if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)):
        return [t for item in obj for t in _tensors(item, detach)]
    raise TypeError(f"cannot compare model output of type {type(obj).__name__}")


def assert_same_outputs(a: Any, b: Any, what: str, atol: float = 0.0) -> None:
    """Assert two (nested) outputs are equal, with absolute tolerance ``atol``."""
    ta, tb = _tensors(a), _tensors(b)
    assert len(ta) == len(tb), f"contract: {what}: {len(ta)} vs {len(tb)} output tensors"
    for i, (x, y) in enumerate(zip(ta, tb, strict=True)):
        assert x.shape == y.shape, (
            f"contract: {what}: output {i} shape {tuple(x.shape)} vs {tuple(y.shape)}"
        )
        if x.is_floating_point() or x.is_complex():
            ok = torch.allclose(x.cpu(), y.cpu(), rtol=0.0, atol=atol, equal_nan=True)
        else:
            ok = torch.equal(x.cpu(), y.cpu())
        assert ok, (
            f"contract: {what}: output {i} differs (max abs diff {(x.cpu().double() - y.cpu().double()).abs().max().item():.3g})"
        )


@dataclass
class ContractResult:
    """What :func:`check_contract` ran, for tests that want to look further."""

    model: pl.LightningModule
    batch: Any
    output: Any
    checkpoint: Path


def check_contract(
    model_fn: Callable[[], pl.LightningModule],
    datamodule_fn: Callable[[], pl.LightningDataModule],
    tmp_path: str | Path,
    forward_fn: Callable[[pl.LightningModule, Any], Any] | None = None,
    backward: bool = True,
    seed: int = 0,
    atol: float = 0.0,
) -> ContractResult:
    """Run the workspace contract on a model factory and a datamodule factory.

    Parameters
    ----------
    model_fn, datamodule_fn:
        Zero-argument factories building the smallest configuration.
    tmp_path:
        Scratch folder (pytest's ``tmp_path``).
    forward_fn:
        ``forward_fn(model, batch) -> outputs`` (tensors or nested containers of
        them). Default: ``model(batch)``, ``model(batch[0])`` for tuples,
        ``model(**batch)`` for dicts.
    backward:
        Check that a backward pass of ``sum(outputs)`` gives finite gradients.
        Pass ``False`` for non-parametric methods.
    seed:
        Seed used for both builds of the determinism check.
    atol:
        Absolute tolerance for the equality checks (0: bit-identical).
    """
    tmp_path = Path(tmp_path)
    forward = forward_fn or _default_forward

    # 1. build
    pl.seed_everything(seed, verbose=False)
    model = model_fn()
    assert isinstance(model, pl.LightningModule), (
        f"contract: build: model_fn returned {type(model).__name__}, not a lightning.pytorch.LightningModule"
    )
    datamodule = datamodule_fn()
    assert isinstance(datamodule, pl.LightningDataModule), (
        f"contract: build: datamodule_fn returned {type(datamodule).__name__}, not a LightningDataModule"
    )
    datamodule.prepare_data()
    datamodule.setup("fit")
    batch = next(iter(datamodule.train_dataloader()))

    # 2. forward and backward
    model.eval()
    with torch.no_grad():
        output = forward(model, batch)
    if backward:
        model.train()
        grad_out = _tensors(forward(model, batch), detach=False)
        loss = sum(t.float().sum() for t in grad_out if t.requires_grad)
        assert isinstance(loss, torch.Tensor), "contract: backward: no output requires grad"
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        assert grads, (
            "contract: backward: the model has no trainable parameters (pass backward=False)"
        )
        assert any(g is not None for g in grads), (
            "contract: backward: no parameter received a gradient"
        )
        assert all(torch.isfinite(g).all() for g in grads if g is not None), (
            "contract: backward: non-finite gradients"
        )
        model.zero_grad(set_to_none=True)

    # 3. same seed, same outputs
    outs = []
    for _ in range(2):
        pl.seed_everything(seed, verbose=False)
        m = model_fn().eval()
        with torch.no_grad():
            outs.append(forward(m, batch))
    assert_same_outputs(outs[0], outs[1], "two builds with the same seed", atol)

    # 4. fit with fast_dev_run
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        fast_dev_run=True,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
    )
    trainer.fit(model, datamodule=datamodule)

    # 5. checkpoint round trip
    ckpt = tmp_path / "contract.ckpt"
    trainer.save_checkpoint(ckpt)
    model.eval()
    with torch.no_grad():
        before = forward(model, batch)
    loaded = type(model).load_from_checkpoint(ckpt, map_location="cpu", weights_only=False).eval()
    with torch.no_grad():
        after = forward(loaded, batch)
    assert_same_outputs(before, after, "checkpoint save/load round trip", atol)
    return ContractResult(model=model, batch=batch, output=output, checkpoint=ckpt)


# ==================================================================== the package contract
#
# One generator of checks over every installed paper package (river's ``estimator_checks`` is
# the model): ``package_checks(paper)`` yields ``(name, check)`` pairs, each ``check(tmp_path)``
# raising ``AssertionError`` naming what failed; ``check_package`` runs them all. The
# workspace's ``ci/test_registry.py`` parametrizes pytest over discovered packages x checks.

BAD_YAML = "model: [1, 2\n  data: {\n"
CORRUPT_CHECKPOINT = b"this is not a checkpoint\x00\x01"


@dataclass
class CliRun:
    """Exit code and captured output of one in-process command."""

    code: int
    out: str
    err: str


def cli_main(paper: Any) -> Callable[[list[str]], int]:
    """The package's console-script ``main`` (the entry point named ``paper.cli``)."""
    from importlib import metadata

    for ep in metadata.entry_points(group="console_scripts"):
        if ep.name == paper.cli:
            return ep.load()
    raise AssertionError(f"contract: no console script named {paper.cli!r} is installed")


def run_cli(paper: Any, args: list[str], cwd: str | Path | None = None) -> CliRun:
    """Run ``<pkg> args`` in this process; capture stdout and stderr."""
    import contextlib
    import io
    import os

    main = cli_main(paper)
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:  # a main that exits instead of returning
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception:  # what the console script would print: a traceback, exit 1
                import traceback

                traceback.print_exc()
                code = 1
    finally:
        os.chdir(old)
    return CliRun(int(code or 0), out.getvalue(), err.getvalue())


def assert_usage_error(run: CliRun, what: str) -> None:
    """Exit code 2, no traceback, and exactly one line on standard error."""
    err = run.err.strip()
    assert run.code == 2, (
        f"contract: {what}: exit code {run.code}, expected 2; stderr: {err[-500:]}"
    )
    assert "Traceback" not in run.err + run.out, (
        f"contract: {what}: traceback printed: {err[-800:]}"
    )
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, (
        f"contract: {what}: {len(lines)} lines on stderr, expected 1: {err[:800]}"
    )


def package_root(paper: Any) -> Path | None:
    """The source folder of the package (holding src/, configs/, README.md), when installed from it.

    ``None`` for a wheel install (its configs/ ships inside the package, but not its sources).
    """
    from .experiment import package_folder

    root = package_folder(paper.import_name)
    return root if root is not None and (root / "src").is_dir() else None


def _cli_object(paper: Any):
    """The package's :class:`~icml26_shared.cli.PaperCLI`, built by its ``cli.build_cli()``."""
    import importlib

    module = importlib.import_module(f"{paper.import_name}.cli")
    build = getattr(module, "build_cli", None)
    assert build is not None, f"contract: {paper.import_name}.cli has no build_cli() -> PaperCLI"
    return build()


def _readme_runnable_blocks(readme: Path) -> list[tuple[int, str, str]]:
    """``(line, language, code)`` of each fenced ``python`` or ``bash`` block after ``<!-- run -->``."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "<!-- run -->":
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            fence = lines[j].strip() if j < len(lines) else ""
            language = fence[3:].strip()
            if fence.startswith("```") and language in {"python", "bash"}:
                k = j + 1
                while k < len(lines) and lines[k].strip() != "```":
                    k += 1
                blocks.append((j + 1, language, "\n".join(lines[j + 1 : k])))
                i = k
        i += 1
    return blocks


def run_readme_block(language: str, code: str, where: str, cwd: Path) -> None:
    """Run one README block in ``cwd``: Python in this process, bash as a script (``set -e``)
    with this environment's console scripts first on ``PATH``, so the commands run as pasted."""
    import os
    import subprocess
    import sys

    if language == "bash":
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=env,
                              capture_output=True, text=True, check=False)  # fmt: skip
        assert done.returncode == 0, (
            f"contract: {where}: exit {done.returncode}: {(done.stdout + done.stderr)[-1500:]}"
        )
        return
    old = Path.cwd()
    os.chdir(cwd)
    try:
        exec(compile(code, where, "exec"), {"__name__": "__readme__"})
    finally:
        os.chdir(old)


def _import_graph(root: Path, import_name: str) -> dict[str, set[str]]:
    """``{module: modules of the same package it imports at module level or in functions}``."""
    import ast

    pkg_dir = root / "src" / import_name
    if not pkg_dir.is_dir():
        pkg_dir = root / import_name
    graph: dict[str, set[str]] = {}
    for path in sorted(pkg_dir.rglob("*.py")):
        rel = path.relative_to(pkg_dir.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        name = ".".join(parts)
        package = name if is_pkg else ".".join(parts[:-1])
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                deps.add(mod)
                deps.update(f"{mod}.{a.name}" for a in node.names)
        graph[name] = {d for d in deps if d.split(".")[0] == import_name and d != name}
    known = set(graph)
    # keep module targets only (``from .x import f`` names x, not x.f); drop the root package,
    # which every submodule imports implicitly
    return {m: {d for d in deps if d in known and d != import_name} for m, deps in graph.items()}


def find_import_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a list of modules (first = last), or ``None``.

    >>> find_import_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}})
    ['a', 'b', 'c', 'a']
    >>> find_import_cycle({"a": {"b"}, "b": set()}) is None
    True
    """
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return stack[stack.index(dep) :] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def package_checks(paper: Any) -> list[tuple[str, Callable[[Path], None]]]:
    """The named checks of the package contract for one installed paper package."""
    import inspect

    from .cli import LIGHTNING_COMMANDS, resolve, split_configs
    from .experiment import PRESETS
    from .reproduce import load_experiment

    root = package_root(paper)
    checks: list[tuple[str, Callable[[Path], None]]] = []

    def add(name: str):
        def deco(fn):
            checks.append((name, fn))
            return fn

        return deco

    def cli():
        return _cli_object(paper)

    @add("help lists every command")
    def _(tmp: Path) -> None:
        run = run_cli(paper, ["--help"])
        assert run.code == 0, f"contract: --help exit {run.code}"
        for name in cli().command_help():
            assert f"  {name}" in run.out, f"contract: --help does not list {name!r}"

    @add("unknown command is one line, exit 2")
    def _(tmp: Path) -> None:
        assert_usage_error(run_cli(paper, ["frobnicate"]), "unknown command")

    def commands_taking_config() -> list[str]:
        c = cli()
        names = [n for n in c.command_help() if n not in LIGHTNING_COMMANDS]
        if c.model_class is not None:
            names.insert(0, "fit")
        return names

    @add("missing --config is one line, exit 2")
    def _(tmp: Path) -> None:
        for name in commands_taking_config():
            run = run_cli(paper, [name, "--config", str(tmp / "missing.yaml")], cwd=tmp)
            assert_usage_error(run, f"{name} --config missing.yaml")

    @add("malformed YAML is one line, exit 2")
    def _(tmp: Path) -> None:
        bad = tmp / "bad.yaml"
        bad.write_text(BAD_YAML)
        for name in commands_taking_config():
            run = run_cli(paper, [name, "--config", str(bad)], cwd=tmp)
            assert_usage_error(run, f"{name} --config malformed.yaml")

    @add("corrupt checkpoint is one line, exit 2")
    def _(tmp: Path) -> None:
        ckpt = tmp / "corrupt.ckpt"
        ckpt.write_bytes(CORRUPT_CHECKPOINT)
        c = cli()
        for name, target in c.commands.items():
            params = inspect.signature(resolve(target)).parameters
            ckpt_params = [p for p in params if "checkpoint" in p or p in {"ckpt", "ckpt_path"}]
            if not ckpt_params:
                continue
            args = [name, f"--{ckpt_params[0]}", str(ckpt)]
            required = [
                p for p, v in params.items()
                if v.default is inspect.Parameter.empty and p not in ckpt_params and p != "paper"
            ]  # fmt: skip
            if any(p != "out" for p in required):
                continue  # needs inputs this generic check cannot make up
            if "out" in required:
                args += ["--out", str(tmp / "out")]
            assert_usage_error(run_cli(paper, args, cwd=tmp), f"{name} with a corrupt checkpoint")

    @add("unwritable --out is one line, exit 2")
    def _(tmp: Path) -> None:
        blocker = tmp / "a-file"
        blocker.write_text("x")
        run = run_cli(paper, ["reproduce", "--out", str(blocker / "sub")], cwd=tmp)
        assert_usage_error(run, "reproduce --out under a file")

    @add("reproduce presets load and validate")
    def _(tmp: Path) -> None:
        experiment = load_experiment(paper)
        assert experiment.sections, "contract: the experiment declares no sections"
        for preset in PRESETS:
            experiment.validate(preset)

    if root is None:
        return checks  # installed from a wheel: the source-tree checks below do not apply

    @add("reproduce.py is a short declaration")
    def _(tmp: Path) -> None:
        import re

        src = root / "src" / paper.import_name / "reproduce.py"
        text = src.read_text(encoding="utf-8")
        n = len(text.splitlines())
        assert n <= 150, f"contract: {src.name} has {n} lines (at most 150)"
        assert not re.search(r"\bQUICK\b|\bFULL\b", text), (
            f"contract: {src.name} defines QUICK/FULL"
        )
        for preset in PRESETS:
            assert (root / "configs" / "reproduce" / f"{preset}.yaml").is_file(), (
                f"contract: configs/reproduce/{preset}.yaml is missing"
            )

    @add("no module imports reproduce, no import cycle")
    def _(tmp: Path) -> None:
        graph = _import_graph(root, paper.import_name)
        rep = f"{paper.import_name}.reproduce"
        users = sorted(m for m, deps in graph.items() if rep in deps)
        assert not users, f"contract: {', '.join(users)} import(s) from {rep}"
        cycle = find_import_cycle(graph)
        assert cycle is None, f"contract: import cycle {' -> '.join(cycle)}"

    try:
        c = cli()
    except (AssertionError, ImportError) as exc:
        message = str(exc)

        @add("build_cli() builds the command line")
        def _(tmp: Path) -> None:
            raise AssertionError(message)

        return checks
    lightning_cfgs, command_cfgs = split_configs(
        root / "configs", [n for n in c.command_help() if n not in LIGHTNING_COMMANDS]
    )
    lightning_cfgs = lightning_cfgs if c.model_class is not None else []

    for cfg in lightning_cfgs:

        @add(f"fit --config {paper.cli}:{cfg.name} --trainer.fast_dev_run true")
        def _(tmp: Path, cfg: Path = cfg) -> None:
            # by reference, from an empty folder: as a user runs a shipped config
            args = ["fit", "--config", f"{paper.cli}:{cfg.name}", "--trainer.fast_dev_run",
                    "true", "--trainer.default_root_dir", str(tmp)]  # fmt: skip
            run = run_cli(paper, args, cwd=tmp)
            assert run.code == 0, f"contract: {cfg.name}: exit {run.code}: {run.err[-1500:]}"
            assert "Tip:" not in run.out + run.err, f"contract: {cfg.name}: Lightning's tip text"

    for cfg, command in command_cfgs.items():

        @add(f"{command} --config {paper.cli}:{cfg.name} --print_config")
        def _(tmp: Path, cfg: Path = cfg, command: str = command) -> None:
            ref = f"{paper.cli}:{cfg.name}"
            run = run_cli(paper, [command, "--config", ref, "--print_config"], cwd=tmp)
            assert run.code == 0, f"contract: {cfg.name}: exit {run.code}: {run.err[-1500:]}"

    readme = root / "README.md"
    for line, language, code in _readme_runnable_blocks(readme) if readme.is_file() else []:

        @add(f"README {language} block at line {line} runs")
        def _(tmp: Path, language: str = language, code: str = code, line: int = line) -> None:
            run_readme_block(language, code, f"{readme}:{line}", tmp)

    return checks


def check_package(paper: Any, tmp_path: str | Path) -> None:
    """Run every check of :func:`package_checks` for ``paper``; the first failure raises."""
    tmp_path = Path(tmp_path)
    for i, (name, check) in enumerate(package_checks(paper)):
        scratch = tmp_path / f"check-{i}"
        scratch.mkdir(parents=True, exist_ok=True)
        try:
            check(scratch)
        except AssertionError as exc:
            raise AssertionError(f"{paper.name}: {name}: {exc}") from None


def startup_check(paper: Any, budget_s: float = 1.0, factor: float = 3.0) -> None:
    """``<pkg> --help`` and ``<pkg> frobnicate`` start fast and import no ``lightning``.

    Each must finish within ``budget_s`` plus ``factor`` times a bare interpreter start,
    measured in the same call (the best of three runs each, so a busy machine is not blamed
    on the package).
    """
    import subprocess
    import sys
    import time

    def best_of(code: str, runs: int = 3) -> tuple[float, subprocess.CompletedProcess]:
        best, last = float("inf"), None
        for _ in range(runs):
            t0 = time.perf_counter()
            last = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", code],
                capture_output=True,
                text=True,
                check=False,
            )
            best = min(best, time.perf_counter() - t0)
        return best, last

    bare, _ = best_of("pass")
    limit = budget_s + factor * bare
    for args in (["--help"], ["frobnicate"]):
        code = f"import sys; from {paper.import_name}.cli import main; sys.exit(main({args!r}))"
        wall, proc = best_of(code)
        imported = [
            ln.split("|")[-1].strip() for ln in proc.stderr.splitlines() if "import time:" in ln
        ]
        heavy = [m for m in imported if m.split(".")[0] in {"lightning", "torch"}]
        assert not heavy, f"contract: {paper.cli} {' '.join(args)} imports {heavy[0]}"
        assert wall <= limit, (
            f"contract: {paper.cli} {' '.join(args)} took {wall:.2f} s (budget {limit:.2f} s)"
        )
