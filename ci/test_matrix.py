#!/usr/bin/env python3
"""Run every workspace member's tests in that member's own exact environment.

``ci/test.sh [NAME ...]`` (default: every member, from ``uv workspace list``).
For each member: ``uv run --locked --package NAME --exact --all-extras --group dev
python -m pytest <member>/tests <member>/src --doctest-modules``, so a
dependency the member forgot to declare fails its tests. Members run one after
the other (pytest-xdist is slower than serial on 2 cores). Then ``registry``: the package
contract generated over every installed package (``ci/test_registry.py``) and ``icml26
readme --check``, in one environment holding every member. Prints a table
(package, passed, failed, skipped, seconds) and the closing line
``N passed, M failed``; exits non-zero if anything failed. Standard library only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def members() -> dict[str, Path]:
    names = subprocess.run(
        ["uv", "workspace", "list"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    paths = subprocess.run(
        ["uv", "workspace", "list", "--paths"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    return dict(zip(names, (Path(p) for p in paths), strict=True))


def counts(junit: Path) -> tuple[int, int, int]:
    """(passed, failed, skipped) from a pytest JUnit XML file."""
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    tests = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return tests - failed - skipped, failed, skipped


def run_member(name: str, path: Path, junit: Path) -> tuple[int, int, int, float, int]:
    rel = path.relative_to(ROOT)
    targets = [str(rel / sub) for sub in ("tests", "src") if (path / sub).is_dir()]
    cmd = [
        "uv", "run", "--locked", "--package", name, "--exact", "--all-extras", "--group", "dev",
        "python", "-m", "pytest", *targets, "--doctest-modules", "-q",
        "-p", "no:cacheprovider", f"--junitxml={junit}",
    ]  # fmt: skip
    print(f"\n=== {name}: {' '.join(cmd)}", flush=True)
    start = time.perf_counter()
    code = subprocess.run(cmd, cwd=ROOT, check=False).returncode
    seconds = time.perf_counter() - start
    if code == 5:  # pytest: no tests collected; not a failure
        return 0, 0, 0, seconds, 0
    if not junit.exists():
        return 0, 1, 0, seconds, code  # pytest never started (environment failed to build)
    passed, failed, skipped = counts(junit)
    if code != 0 and failed == 0:
        failed = 1  # collection error or crash that the XML does not count
    return passed, failed, skipped, seconds, code


REGISTRY = "registry"


def run_registry(junit: Path) -> tuple[int, int, int, float, int]:
    """The generated package contract over every member, and the README result blocks."""
    env = ["uv", "run", "--locked", "--all-packages", "--exact", "--all-extras", "--group", "dev"]
    print(f"\n=== {REGISTRY}: icml26 readme --check; pytest ci/test_registry.py", flush=True)
    start = time.perf_counter()
    readme = subprocess.run([*env, "icml26", "readme", "--check"], cwd=ROOT, check=False)
    cmd = [*env, "python", "-m", "pytest", "ci/test_registry.py", "-q", "-p", "no:cacheprovider",
           f"--junitxml={junit}"]  # fmt: skip
    code = subprocess.run(cmd, cwd=ROOT, check=False).returncode
    seconds = time.perf_counter() - start
    passed, failed, skipped = counts(junit) if junit.exists() else (0, 1, 0)
    if code != 0 and failed == 0:
        failed = 1
    if readme.returncode != 0:
        failed += 1  # the README check is one more test
    else:
        passed += 1
    return passed, failed, skipped, seconds, code


def main(argv: list[str]) -> int:
    found = members()
    chosen = argv or [*found, REGISTRY]
    unknown = [n for n in chosen if n not in found and n != REGISTRY]
    if unknown:
        print(f"ci/test.sh: unknown member(s) {', '.join(unknown)}; members: {', '.join(found)}")
        return 2
    os.environ.setdefault("HYPOTHESIS_PROFILE", "ci")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in chosen:
            junit = Path(tmp) / f"{name}.xml"
            if name == REGISTRY:
                rows.append((name, *run_registry(junit)))
            else:
                rows.append((name, *run_member(name, found[name], junit)))
    width = max(len(r[0]) for r in rows) + 2
    print(f"\n{'package'.ljust(width)}{'passed':>8}{'failed':>8}{'skipped':>9}{'seconds':>9}")
    for name, passed, failed, skipped, seconds, _ in rows:
        print(f"{name.ljust(width)}{passed:>8}{failed:>8}{skipped:>9}{seconds:>9.1f}")
    total_passed = sum(r[1] for r in rows)
    total_failed = sum(r[2] for r in rows)
    total_skipped = sum(r[3] for r in rows)
    total_seconds = sum(r[4] for r in rows)
    print(
        f"{'total'.ljust(width)}{total_passed:>8}{total_failed:>8}{total_skipped:>9}{total_seconds:>9.1f}"
    )
    print(f"{total_passed} passed, {total_failed} failed, {total_skipped} skipped")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
