"""One command-line pattern for every paper package.

``<pkg> fit|validate|test|predict`` are LightningCLI subcommands (``--config
x.yaml``, ``--print_config``, seeded with 0 by default). ``<pkg> reproduce``
runs the reproduce contract (:mod:`icml26_shared.reproduce`). Each extra
command (``benchmark``, ``quantize``, ...) is a plain typed Python function
with a docstring; jsonargparse turns its signature into options, so it takes
``--config file.yaml`` and ``--print_config`` like the Lightning ones. All of
them appear in ``<pkg> --help``.

``<pkg> configs`` lists the YAML configs the package ships (inside its wheel, as package
data), and ``--config <pkg>:<file>.yaml`` names one of them from any folder, for every
command (``asymp-gda fit --config asymp-gda:fit-brps.yaml``).

Bad input (:class:`UsageError`, ``ValueError``, a missing or unwritable file, a
jsonargparse or LightningCLI parse error) becomes one line on standard error and exit code
2, never a stack trace. Ctrl-C exits with 130, also from inside a Lightning ``fit``.

Start-up is cheap: the model, datamodule and command functions may be given as
``"module:attribute"`` strings. ``<pkg> --help`` then reads the commands' one-line summaries
from their source files without importing them, an unknown command fails at once, and
only the command that runs imports what it needs (``lightning`` only for
``fit/validate/test/predict`` and the commands that train).

Example, in a package's ``cli.py``::

    from icml26_shared.cli import PaperCLI
    from .paper import PAPER

    def main(args=None):
        return PaperCLI(PAPER, model_class="my_paper.lightning:MyModule",
                        datamodule_class="my_paper.lightning:MyData",
                        commands={"benchmark": "my_paper.commands:benchmark"}).main(args)
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import inspect
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .paper import Paper
from .progress import progress_enabled

LIGHTNING_COMMANDS = {
    "fit": "Train the model (Lightning Trainer.fit).",
    "validate": "Evaluate on the validation set (Lightning Trainer.validate).",
    "test": "Evaluate on the test set (Lightning Trainer.test).",
    "predict": "Run inference (Lightning Trainer.predict).",
}
REPRODUCE_HELP = "Regenerate the paper's headline comparison offline (--preset quick|full|paper)."
CONFIGS_HELP = "List the shipped YAML configs (use one as --config <pkg>:<file>), or print one."
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
EXIT_USAGE = 2

# jsonargparse >= 4.49 emits deprecation warnings from lightning's own cli.py
# (add_instantiator / instantiate_classes / skip_none): nothing a user can act on.
os.environ.setdefault("JSONARGPARSE_DEPRECATION_WARNINGS", "off")


class UsageError(Exception):
    """Bad input from the user; the CLI prints it as one line and exits with code 2."""


def load_checkpoint(module_class: type, checkpoint: str | Path, *, what: str = "checkpoint"):
    """Load a Lightning checkpoint of ``module_class`` on the CPU, in eval mode.

    A missing file, a file that is not a checkpoint, or a checkpoint of another
    module class raises :class:`UsageError` (one line from the CLI), not a stack
    trace from inside torch.

    Args:
        module_class: The ``LightningModule`` subclass the checkpoint was saved from.
        checkpoint: Path of the ``.ckpt`` file.
        what: How the message names the file (``"stage-1 checkpoint"``, ...).
    """
    import pickle

    path = Path(checkpoint)
    if not path.is_file():
        raise UsageError(f"{what} {str(path)!r} does not exist")
    try:
        module = module_class.load_from_checkpoint(path, map_location="cpu", weights_only=False)
    except (
        RuntimeError,
        KeyError,
        TypeError,
        ValueError,
        EOFError,
        OSError,
        AttributeError,
        pickle.UnpicklingError,
    ) as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UsageError(f"cannot read {what} {str(path)!r}: {detail}") from None
    return module.eval()


Target = str | Callable[..., Any] | type


def resolve(target: Target) -> Any:
    """Import a ``"module:attribute"`` target (objects are returned as they are)."""
    if not isinstance(target, str):
        return target
    module, sep, attr = target.partition(":")
    if not sep:
        raise ValueError(f"target {target!r} must be 'module:attribute'")
    return getattr(importlib.import_module(module), attr)


def _first_line(target: Target) -> str:
    """First docstring line of a callable or of a ``"module:attribute"`` target.

    A string target is read from its source file with :mod:`ast`, without importing it.
    """
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        doc = ""
        spec = importlib.util.find_spec(module)
        if spec is None:
            raise ValueError(f"command target {target!r}: no module {module!r}")
        if spec.origin and spec.origin.endswith(".py"):
            tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
            for node in tree.body:
                if (
                    isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                    and node.name == attr
                ):
                    doc = ast.get_docstring(node) or ""
                    break
            else:
                raise ValueError(f"{spec.origin} defines no function or class {attr!r}")
    else:
        doc = inspect.getdoc(target) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def config_folder(paper: Paper) -> Path:
    """The package's ``configs/`` folder: inside the installed package, or in the workspace."""
    from .experiment import package_folder

    root = package_folder(paper.import_name)
    if root is None:
        raise UsageError(f"{paper.name}: no configs/ folder is installed with the package")
    return root / "configs"


def resolve_config_reference(paper: Paper, value: str) -> str:
    """``<pkg>:<file>.yaml`` -> the path of that shipped config; anything else unchanged.

    ``<pkg>`` may be the distribution name, the console script or the import name; the
    ``.yaml`` suffix may be left out; sub-folders are allowed (``<pkg>:reproduce/full.yaml``).
    An existing file of that name wins, so plain paths never change meaning.
    """
    prefix, sep, name = value.partition(":")
    if not sep or prefix not in {paper.name, paper.cli, paper.import_name} or Path(value).exists():
        return value
    folder = config_folder(paper)
    names = [name] if name.endswith((".yaml", ".yml")) else [f"{name}.yaml", name]
    for candidate in names:
        if (folder / candidate).is_file():
            return str(folder / candidate)
    raise UsageError(f"{paper.cli} ships no config {name!r} (list them: {paper.cli} configs)")


def _resolve_config_arguments(paper: Paper, argv: list[str]) -> list[str]:
    """Every ``--config <pkg>:<file>`` (or ``--config=...``) in ``argv`` made a path."""
    out = list(argv)
    for i, tok in enumerate(out):
        if tok == "--config" and i + 1 < len(out):
            out[i + 1] = resolve_config_reference(paper, out[i + 1])
        elif tok.startswith("--config="):
            out[i] = "--config=" + resolve_config_reference(paper, tok.partition("=")[2])
    return out


def split_configs(folder: Path, commands: Sequence[str]) -> tuple[list[Path], dict[Path, str]]:
    """Split ``folder/*.yaml`` into Lightning configs and ``{config: command}`` by file name.

    A config for a package command is named ``<command>.yaml`` or ``<command>-*.yaml``; every
    other one is a ``fit`` config.
    """
    lightning_cfgs, command_cfgs = [], {}
    for path in sorted(folder.glob("*.yaml")):
        stem = path.stem
        owner = next(
            (c for c in sorted(commands, key=len, reverse=True)
             if stem == c or stem.startswith(f"{c}-") or stem.startswith(f"{c}_")),
            None,
        )  # fmt: skip
        if owner is None:
            lightning_cfgs.append(path)
        else:
            command_cfgs[path] = owner
    return lightning_cfgs, command_cfgs


def list_configs(paper: Paper, argv: Sequence[str]) -> None:
    """``<pkg> configs [FILE]``: list the shipped configs with their first comment, or print one."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str):  # type: ignore[override]
            raise UsageError(f"configs: {message} (see: {paper.cli} configs --help)")

    parser = _Parser(prog=f"{paper.cli} configs", description=CONFIGS_HELP)
    parser.add_argument("file", nargs="?", help="print this config (copy it, edit it, pass it)")
    ns = parser.parse_args(list(argv))
    if ns.file is not None:
        path = Path(resolve_config_reference(paper, f"{paper.cli}:{ns.file}"))
        print(path.read_text(encoding="utf-8"), end="")
        return
    folder = config_folder(paper)
    files = sorted(folder.rglob("*.y*ml"))
    width = max((len(str(f.relative_to(folder))) for f in files), default=0) + 2
    for f in files:
        comment = next(
            (ln.lstrip("# ").strip() for ln in f.read_text(encoding="utf-8").splitlines()
             if ln.startswith("#") and ln.lstrip("# ").strip()),
            "",
        )  # fmt: skip
        print(f"{str(f.relative_to(folder)).ljust(width)}{comment}".rstrip())
    print(f"\nuse one as: {paper.cli} <command> --config {paper.cli}:<file>")


class PaperCLI:
    """The command line of one paper package.

    Parameters
    ----------
    paper:
        The package's :class:`~icml26_shared.paper.Paper`.
    model_class, datamodule_class:
        LightningModule / LightningDataModule classes (or ``"module:Class"`` strings, imported
        only when a Lightning command runs) for ``fit/validate/test/predict`` (omit both for a
        package without a trainable part).
    commands:
        Extra subcommands, ``{name: function or "module:function"}``; each function's typed
        signature becomes its options and the first docstring line its help.
    subclass_mode_model, subclass_mode_data:
        Passed to LightningCLI (configs then use ``class_path`` / ``init_args``).
    trainer_defaults:
        Extra Trainer defaults (on top of: progress bar only on a TTY).
    seed:
        Default ``seed_everything`` value.
    """

    def __init__(
        self,
        paper: Paper,
        model_class: type | str | None = None,
        datamodule_class: type | str | None = None,
        commands: Mapping[str, Target] | None = None,
        subclass_mode_model: bool = False,
        subclass_mode_data: bool = False,
        trainer_defaults: Mapping[str, Any] | None = None,
        seed: int = 0,
    ) -> None:
        self.paper = paper
        self.model_class = model_class
        self.datamodule_class = datamodule_class
        self.commands = dict(commands or {})
        clash = set(self.commands) & (set(LIGHTNING_COMMANDS) | {"reproduce", "configs"})
        if clash:
            raise ValueError(f"extra commands may not be named {sorted(clash)}")
        self.subclass_mode_model = subclass_mode_model
        self.subclass_mode_data = subclass_mode_data
        self.trainer_defaults = dict(trainer_defaults or {})
        self.seed = seed

    # ------------------------------------------------------------ help

    @property
    def prog(self) -> str:
        return self.paper.cli

    def command_help(self) -> dict[str, str]:
        helps: dict[str, str] = {}
        if self.model_class is not None:
            helps.update(LIGHTNING_COMMANDS)
        helps["reproduce"] = REPRODUCE_HELP
        helps["configs"] = CONFIGS_HELP
        for name, fn in self.commands.items():
            helps[name] = _first_line(fn)
        return helps

    def format_help(self) -> str:
        helps = self.command_help()
        width = max(len(n) for n in helps) + 2
        lines = [
            f"usage: {self.prog} <command> [options]",
            "",
            f"{self.paper.title}",
        ]
        if self.paper.summary:
            lines.append(self.paper.summary)
        if self.paper.url:
            lines.append(self.paper.url)
        lines += ["", "commands:"]
        lines += [f"  {name.ljust(width)}{text}" for name, text in helps.items()]
        lines += [
            "",
            "options:",
            "  -h, --help    show this message",
            "  --version     show the package version",
            "",
            f"Run '{self.prog} <command> --help' for the options of one command.",
        ]
        return "\n".join(lines)

    # ------------------------------------------------------------ run

    def error(self, message: str) -> int:
        """Print ``message`` as one line on standard error; return exit code 2."""
        print(f"{self.prog}: error: {_condense(message)}", file=sys.stderr)
        return EXIT_USAGE

    def main(self, args: Sequence[str] | None = None) -> int:
        """Parse ``args`` (default ``sys.argv[1:]``), run the command, return the exit code."""
        argv = list(sys.argv[1:] if args is None else args)
        if not argv or argv[0] in {"-h", "--help"}:
            print(self.format_help())
            return 0 if argv else EXIT_USAGE
        if argv[0] == "--version":
            print(f"{self.paper.name} {self.paper.version}")
            return 0
        name, rest = argv[0], argv[1:]
        helps = self.command_help()
        if name not in helps:
            return self.error(f"unknown command {name!r}; choose from {', '.join(helps)}")
        interrupted: list[bool] = []
        try:
            with _sigint_recorded(interrupted):
                rest = _resolve_config_arguments(self.paper, rest)
                if name in LIGHTNING_COMMANDS:
                    if args is None:
                        # LightningCLI reads sys.argv itself (it warns when given both)
                        sys.argv[1:] = [name, *rest]
                    self._run_lightning(name, None if args is None else [name, *rest])
                elif name == "reproduce":
                    from .reproduce import reproduce_command

                    reproduce_command(self.paper, rest)
                elif name == "configs":
                    list_configs(self.paper, rest)
                else:
                    self._run_function(name, resolve(self.commands[name]), rest)
        except SystemExit as exc:  # argparse / jsonargparse already printed their message
            if interrupted:  # Lightning turns Ctrl-C inside fit into SystemExit(1)
                print(f"{self.prog}: interrupted", file=sys.stderr)
                return EXIT_INTERRUPTED
            return (
                exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
            )
        except KeyboardInterrupt:
            print(f"{self.prog}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except (UsageError, ValueError, OSError) as exc:
            return self.error(str(exc) or type(exc).__name__)
        return 0

    def _run_lightning(self, name: str, args: list[str] | None) -> None:
        from jsonargparse import ArgumentError

        try:
            from lightning.pytorch.cli import LightningCLI
        except ImportError:
            raise UsageError(
                f"{name} needs PyTorch Lightning, which is not installed: "
                f"pip install '{self.paper.name}[lightning]'"
            ) from None

        from .trainer import silence_lightning_chatter

        silence_lightning_chatter()
        defaults = {"enable_progress_bar": progress_enabled(), **self.trainer_defaults}
        try:
            _lightning_cli_class(LightningCLI)(
                resolve(self.model_class),
                resolve(self.datamodule_class) if self.datamodule_class is not None else None,
                subclass_mode_model=self.subclass_mode_model,
                subclass_mode_data=self.subclass_mode_data,
                seed_everything_default=self.seed,
                save_config_callback=_save_config_callback(),
                save_config_kwargs={"overwrite": True},
                trainer_defaults=defaults,
                parser_kwargs={"prog": self.prog, "exit_on_error": False},
                args=args,
            )
        except ArgumentError as exc:  # one line instead of usage + a multi-line message
            raise UsageError(f"{name}: {_condense(exc)} (see: {self.prog} {name} --help)") from None

    def _run_function(
        self, name: str, fn: Callable[..., Any], rest: list[str], **bound: Any
    ) -> Any:
        from jsonargparse import ActionConfigFile, ArgumentError, ArgumentParser

        parser = ArgumentParser(
            prog=f"{self.prog} {name}",
            description=inspect.getdoc(fn) or None,
            exit_on_error=False,
        )
        parser.add_argument("--config", action=ActionConfigFile, help="YAML file with the options.")
        parser.add_function_arguments(fn, as_group=False, skip=set(bound))
        try:
            cfg = parser.parse_args(_bare_flags_to_true(fn, rest))
        except ArgumentError as exc:  # one line instead of usage + a multi-line message
            raise UsageError(f"{name}: {_condense(exc)} (see: {self.prog} {name} --help)") from None
        init = parser.instantiate_classes(cfg)
        kwargs = {k: v for k, v in init.items() if k not in {"config", "__path__"}}
        return fn(**bound, **kwargs)


@contextlib.contextmanager
def _sigint_recorded(interrupted: list[bool]):
    """Record a Ctrl-C in ``interrupted`` (then raise ``KeyboardInterrupt`` as Python does).

    Lightning catches the ``KeyboardInterrupt`` inside ``fit`` and exits with code 1; the record
    lets :meth:`PaperCLI.main` report 130 all the same. Outside the main thread, a no-op.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        interrupted.append(True)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _save_config_callback() -> type:
    """LightningCLI's ``SaveConfigCallback``, writing ``config.yaml`` only next to a logger's logs.

    Without a logger (or in a ``fast_dev_run``) Lightning would write it into the current
    folder, often a source tree.
    """
    from lightning.pytorch.cli import SaveConfigCallback
    from lightning.pytorch.loggers.logger import DummyLogger

    class SaveConfigToLogDir(SaveConfigCallback):
        def setup(self, trainer, pl_module, stage: str) -> None:
            if trainer.logger is None or isinstance(trainer.logger, DummyLogger):
                return
            super().setup(trainer, pl_module, stage)

    return SaveConfigToLogDir


def _lightning_cli_class(base: type) -> type:
    """``LightningCLI`` whose default logger is a CSV logger under ``trainer.default_root_dir``.

    A config that sets ``logger`` (``false``, a class) keeps it; one that leaves it out gets
    ``<default_root_dir>/lightning_logs/version_N/metrics.csv`` whatever else is installed, so
    every ``fit`` leaves readable metrics next to its checkpoints.
    """

    class PaperLightningCLI(base):
        def instantiate_trainer(self, **kwargs: Any):
            trainer = self.config_init[self.subcommand] if self.subcommand else self.config_init
            trainer = trainer.get("trainer", {})
            if "logger" not in kwargs and trainer.get("logger") in (None, True):
                from lightning.pytorch.loggers import CSVLogger

                kwargs["logger"] = CSVLogger(
                    save_dir=trainer.get("default_root_dir") or os.getcwd()
                )
            return super().instantiate_trainer(**kwargs)

    return PaperLightningCLI


def _condense(exc: BaseException | str) -> str:
    r"""A (jsonargparse) message on one line: its causes kept, usage dumps and repeats dropped.

    >>> _condense("Problem with class_path 'M':\n  - Parser key 'lr': Expected a float\nusage: x")
    "Problem with class_path 'M': Parser key 'lr': Expected a float"
    >>> _condense("Does not validate against any of the Union subtypes\nSubtypes: [A]\nErrors:\n"
    ...           "  - merge_interval must be > 0, got 0\n  - Expected a <class 'NoneType'>")
    'merge_interval must be > 0, got 0'
    """
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if any("Union subtypes" in ln for ln in lines):  # a class_path init error: keep its causes
        causes = [ln[2:] for ln in lines if ln.startswith("- ") and "NoneType" not in ln]
        head = lines[0].split("Does not validate")[0].strip()
        if causes:
            return " ".join(filter(None, [head, "; ".join(causes)]))
    kept: list[str] = []
    for line in lines:
        if (
            line.startswith(("usage:", "Given value"))
            or line.startswith("[")
            and line.endswith("]")
        ):
            continue
        line = line[2:] if line.startswith("- ") else line
        if line not in kept:
            kept.append(line)
    return " ".join(kept or lines[:1]) if kept or lines else ""


def _bare_flags_to_true(fn: Callable[..., Any], rest: list[str]) -> list[str]:
    """Let a boolean option be given bare (``--quick``), as well as ``--quick true``."""
    flags = {
        f"--{name}"
        for name, param in inspect.signature(fn).parameters.items()
        if param.annotation in (bool, "bool")
    }
    out: list[str] = []
    for i, tok in enumerate(rest):
        out.append(tok)
        nxt = rest[i + 1] if i + 1 < len(rest) else None
        if tok in flags and (nxt is None or nxt.startswith("-")):
            out.append("true")
    return out
