"""Virtualenvs of their own for tests that install a package as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def outer_site_dirs() -> list[str]:
    """The site directories this interpreter imports geak-core and its dependencies from."""
    return [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]


def venv_seeing_this_environment(path: Path) -> Path:
    """A new virtualenv at ``path`` (without pip) that sees this environment's packages;
    returns its interpreter.

    It sees them through a .pth file that adds this environment's site directories (their
    own .pth files included, so editable installs resolve), not through
    --system-site-packages, which would show the base interpreter's packages instead of
    this environment's. Install into it with ``python -m pip --python <its python>``.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site_packages = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    lines = [f"import site; site.addsitedir({d!r})" for d in outer_site_dirs()]
    Path(site_packages, "geak_outer_environment.pth").write_text("\n".join(lines) + "\n")
    return python
