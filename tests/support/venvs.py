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


def install_and_run_its_tests(package: Path, module: str, where: Path) -> tuple[Path, str]:
    """``pip install`` the package folder into a fresh virtualenv under ``where`` (seeing this
    environment's torch and Triton, no index), check that the installed copy is the one
    imported, and run the package's own tests under the Triton interpreter; returns the
    virtualenv's interpreter and pytest's output. Fails the calling test on any step."""
    python = venv_seeing_this_environment(where / "venv")
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--no-build-isolation", "--no-index", str(package)],
                   check=True, env=env, timeout=300)
    env = {k: v for k, v in env.items() if k != "PYTHONPATH"}  # only what the virtualenv sees
    env["TRITON_INTERPRET"] = "1"
    found = subprocess.run([str(python), "-c", f"import {module} as p; print(p.__file__)"],
                           capture_output=True, text=True, env=env, cwd=where, timeout=120)
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).is_relative_to(where / "venv")  # the installed copy
    tests = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            str(package / "tests")], capture_output=True, text=True, env=env,
                           cwd=where, timeout=300)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    return python, tests.stdout
