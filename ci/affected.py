#!/usr/bin/env python3
"""The workspace members a change touches, as a JSON list (the CI matrix of a pull request).

``ci/affected.py [BASE]``: the files changed between ``BASE`` (a git ref; default: test every
member) and ``HEAD``. A change inside ``packages/<name>/`` selects that member; a change to
``shared/`` selects the shared package and every member that depends on it (all of them); a
change to anything else (``uv.lock``, the root ``pyproject.toml``, ``ci/``, workflows) selects
every member. Standard library only.

>>> affected(["packages/lorfs/README.md"], {"lorfs": "packages/lorfs", "revit": "packages/revit",
...          "icml26-shared": "shared"})
['lorfs']
>>> affected(["README.md"], {"lorfs": "packages/lorfs", "icml26-shared": "shared"})
['icml26-shared', 'lorfs']
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def members() -> dict[str, str]:
    def listed(*extra: str) -> list[str]:
        cmd = ["uv", "workspace", "list", *extra]
        return subprocess.run(
            cmd, cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout.split()

    root = str(ROOT)
    paths = [str(Path(p).relative_to(root)) for p in listed("--paths")]
    return dict(zip(listed(), paths, strict=True))


def affected(changed: Iterable[str], found: Mapping[str, str]) -> list[str]:
    """Members to test for the ``changed`` paths (repository-relative)."""
    chosen: set[str] = set()
    for path in changed:
        owner = next((n for n, p in found.items() if path.startswith(f"{p}/")), None)
        if owner is None or found.get(owner) == "shared":
            return sorted(found)  # a root file or the shared layer: everything depends on it
        chosen.add(owner)
    return sorted(chosen)


def main(argv: list[str]) -> int:
    found = members()
    if not argv:
        print(json.dumps(sorted(found)))
        return 0
    diff = ["git", "diff", "--name-only", f"{argv[0]}...HEAD"]
    changed = subprocess.run(diff, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    print(json.dumps(affected(changed.split(), found)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
