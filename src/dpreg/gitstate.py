"""The git commit of a checkout, for provenance and claim registration records."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

__all__ = ["git_state"]


def git_state(path: str | Path | None = None) -> dict[str, Any] | None:
    """Commit of the git checkout holding ``path`` (default: dpreg's source), or None.

    ``dirty`` says whether tracked files under ``path``'s checkout differ from
    the commit (then the commit alone does not name the code that ran).
    """
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None  # not a checkout (an installed package) or no git
    return {"commit": commit, "dirty": bool(status.strip())}
