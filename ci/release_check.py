#!/usr/bin/env python3
"""Build, check and install members' distributions as a release would (the release dry run).

``ci/release_check.py [NAME ...] [--tag DIST-vVERSION] [--out DIR] [--one-venv]``

For each member (default: every one): ``uv build --no-sources`` makes its sdist and wheel;
``twine check`` validates their metadata; the wheel's version must equal ``pyproject.toml``'s
(and the tag's, with ``--tag``); a package's wheel must carry its ``configs/`` as package data.
Then the wheel is installed into a fresh venv (with the icml26-shared wheel built here, and
every other dependency at the version ``uv.lock`` pins, so nothing resolves differently from
the tested workspace) and smoke-tested from an empty folder: ``<cli> --help``, ``<cli>
configs``, and ``<cli> fit --config <cli>:<a shipped config> --trainer.fast_dev_run true`` (or
``--print_config`` for a package without a Lightning config). The output must hold no
Lightning "Tip" advertisement. A package whose method runs without torch (``LIGHT``) is also
installed without extras into its own venv, which must stay under its size budget and run a
command on the package's example data.

``--one-venv`` installs every wheel into one venv (the local CI check; much faster than one
venv per member); the release workflow checks one member per venv. ``--out DIR`` keeps the
built files (the release workflow publishes them). Standard library only.
"""

from __future__ import annotations

import argparse
import email.parser
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = "icml26-shared"


def sh(cmd: list[str], cwd: Path = ROOT, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, check=True, text=True, **kw)


def members() -> dict[str, Path]:
    names = sh(["uv", "workspace", "list"], capture_output=True).stdout.split()
    paths = sh(["uv", "workspace", "list", "--paths"], capture_output=True).stdout.split()
    return dict(zip(names, (Path(p) for p in paths), strict=True))


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(zf.read(name).decode())


def build(name: str, path: Path, out: Path) -> tuple[Path, Path]:
    """sdist and wheel of one member, checked; returns their paths."""
    target = out / name
    sh(["uv", "build", "--quiet", "--package", name, "--no-sources", "--out-dir", str(target)])
    wheels, sdists = sorted(target.glob("*.whl")), sorted(target.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, f"{name}: expected one wheel and one sdist"
    sh(["uv", "run", "--frozen", "--only-group", "dev", "twine", "check", "--strict",
        str(wheels[0]), str(sdists[0])], stdout=subprocess.DEVNULL)  # fmt: skip
    declared = tomllib.loads((path / "pyproject.toml").read_text())["project"]["version"]
    meta = wheel_metadata(wheels[0])
    assert meta["Name"] == name, f"{name}: the wheel is named {meta['Name']!r}"
    assert meta["Version"] == declared, f"{name}: wheel {meta['Version']} != pyproject {declared}"
    if (path / "configs").is_dir():
        shipped = {Path(n).name for n in zipfile.ZipFile(wheels[0]).namelist() if "/configs/" in n}
        expected = {p.name for p in (path / "configs").rglob("*.yaml")}
        missing = sorted(expected - shipped)
        assert not missing, f"{name}: configs missing from the wheel: {', '.join(missing)}"
    return wheels[0], sdists[0]


def constraints(tmp: Path) -> Path:
    """Every third-party distribution at the version uv.lock pins."""
    path = tmp / "constraints.txt"
    sh(["uv", "export", "--quiet", "--frozen", "--all-packages", "--all-extras", "--no-dev",
        "--no-hashes", "--no-emit-workspace", "--no-header", "-o", str(path)],
       stdout=subprocess.DEVNULL)  # fmt: skip
    return path


def requirement(wheel: Path) -> str:
    """The wheel, with its `lightning` extra when it has one (fit needs it)."""
    extras = wheel_metadata(wheel).get_all("Provides-Extra") or []
    return f"{wheel}[lightning]" if "lightning" in extras else str(wheel)


def install(venv: Path, wheels: list[Path], pins: Path) -> Path:
    sh(["uv", "venv", "--quiet", "--python", "3.11", str(venv)])
    python = venv / "bin" / "python"
    sh(["uv", "pip", "install", "--quiet", "--python", str(python), "-c", str(pins),
        *map(requirement, wheels)])  # fmt: skip
    return venv / "bin"


SMOKE = r"""
import importlib, json, sys
from icml26_shared.cli import LIGHTNING_COMMANDS, config_folder, split_configs
from icml26_shared.paper import discover_papers

paper = discover_papers()[sys.argv[1]]
cli = importlib.import_module(f"{paper.import_name}.cli").build_cli()
commands = [n for n in cli.command_help() if n not in LIGHTNING_COMMANDS]
fit_cfgs, command_cfgs = split_configs(config_folder(paper), commands)
if cli.model_class is not None and fit_cfgs:
    args = ["fit", "--config", f"{paper.cli}:{fit_cfgs[0].name}", "--trainer.fast_dev_run", "true"]
elif command_cfgs:
    cfg, command = next(iter(command_cfgs.items()))
    args = [command, "--config", f"{paper.cli}:{cfg.name}", "--print_config"]
else:
    args = ["configs"]
print(json.dumps({"cli": paper.cli, "args": args}))
"""


def smoke(name: str, bin_dir: Path, workdir: Path) -> str:
    """Run the member's commands from an empty folder; return the command line tried."""
    workdir.mkdir(parents=True)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("VIRTUAL_ENV", None)
    run = dict(cwd=workdir, env=env, capture_output=True)
    if name == SHARED:
        sh([str(bin_dir / "icml26"), "list"], **run)
        return "icml26 list"
    plan = json.loads(sh([str(bin_dir / "python"), "-c", SMOKE, name], **run).stdout)
    cli = str(bin_dir / plan["cli"])
    sh([cli, "--help"], **run)
    sh([cli, "configs"], **run)
    done = subprocess.run([cli, *plan["args"]], cwd=workdir, env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, (
        f"{name}: {' '.join(plan['args'])}: exit {done.returncode}: {output[-1500:]}"
    )
    assert "Tip:" not in output, f"{name}: Lightning's tip text in the output: {output[-800:]}"
    return f"{plan['cli']} {' '.join(plan['args'])}"


# Packages whose method runs without torch: their plain install (no extras) must stay small
# and run this command on the package's own example data (tests/data/).
LIGHT = {
    "anytime-hoeffding": (
        0.5e9,
        ["evaluate", "--csv", "{data}/machines.csv", "--target", "status"],
    ),
}


def light_install(name: str, path: Path, wheels: list[Path], pins: Path, tmp: Path) -> str:
    """Install ``wheels`` without extras into a fresh venv; check its size and one command."""
    budget, args = LIGHT[name]
    venv = tmp / f"light-{name}"
    sh(["uv", "venv", "--quiet", "--python", "3.11", str(venv)])
    sh(["uv", "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
        "-c", str(pins), *map(str, wheels)])  # fmt: skip
    size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())
    assert size <= budget, (
        f"{name}: the plain install takes {size / 1e9:.2f} GB > {budget / 1e9} GB"
    )
    data = (ROOT / path / "tests" / "data").resolve()
    work = tmp / "work" / f"light-{name}"
    work.mkdir(parents=True)
    cmd = [str(venv / "bin" / name), *(a.format(data=data) for a in args)]
    done = subprocess.run(cmd, cwd=work, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{name}: {' '.join(args)}: {(done.stdout + done.stderr)[-1500:]}"
    return f"{size / 1e9:.2f} GB, {name} {' '.join(args)}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="members (default: all)")
    parser.add_argument("--tag", help="a release tag DIST-vVERSION; checks it names one member")
    parser.add_argument("--out", type=Path, help="keep the built sdists and wheels here")
    parser.add_argument("--one-venv", action="store_true", help="one venv for every member")
    ns = parser.parse_args(argv)
    found = members()
    names = ns.names or list(found)
    if ns.tag:
        dist, sep, version = ns.tag.rpartition("-v")
        if not sep or dist not in found:
            parser.error(f"tag {ns.tag!r} is not <member>-v<version>; members: {', '.join(found)}")
        declared = tomllib.loads((found[dist] / "pyproject.toml").read_text())["project"]["version"]
        if version != declared:
            parser.error(f"tag {ns.tag!r}: {dist}'s pyproject.toml says version {declared}")
        names = [dist]
    unknown = [n for n in names if n not in found]
    if unknown:
        parser.error(f"unknown member(s) {', '.join(unknown)}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        out = ns.out or tmp / "dist"
        start = time.perf_counter()
        built = {}
        for name in dict.fromkeys([SHARED, *names]):
            built[name] = build(name, found[name], out)
            print(f"built and checked {built[name][0].name}, {built[name][1].name}", flush=True)
        pins = constraints(tmp)
        if ns.one_venv:
            bin_dir = install(tmp / "venv", [w for w, _ in built.values()], pins)
            venvs = dict.fromkeys(names, bin_dir)
        else:
            venvs = {
                name: install(tmp / f"venv-{name}", [built[SHARED][0], built[name][0]], pins)
                for name in names
            }
        for name in names:
            tried = smoke(name, venvs[name], tmp / "work" / name)
            print(f"{name}: installed wheel ok from an empty folder: {tried}", flush=True)
        for name in (n for n in names if n in LIGHT):
            wheels = [built[SHARED][0], built[name][0]]
            tried = light_install(name, found[name], wheels, pins, tmp)
            print(f"{name}: plain install without extras ok: {tried}", flush=True)
        print(f"release check: {len(names)} member(s) ok in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (AssertionError, subprocess.CalledProcessError) as exc:
        detail = exc.stderr if isinstance(exc, subprocess.CalledProcessError) else ""
        print(f"release check failed: {exc}\n{detail or ''}".rstrip(), file=sys.stderr)
        sys.exit(1)
