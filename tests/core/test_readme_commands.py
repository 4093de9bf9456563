"""CI runs exactly the README's test command, and both README commands set up the same way."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    section = ROOT.joinpath("README.md").read_text().split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_ci_runs_exactly_the_readmes_test_command():
    quickstart, tests = readme_commands()
    script = ROOT.joinpath(".ci", "run").read_text().splitlines()
    commands = [line for line in script if line.strip() and not line.startswith("#")]
    assert commands[-1] == tests
    assert "rm -rf .venv" in commands[:-1], "CI must not reuse a virtualenv from an earlier run"
    setup = "bash install.sh"
    assert f"{setup} && " in quickstart and f"{setup} --with-browser && " in tests
    assert quickstart.split(setup)[0] == tests.split(setup)[0]
    assert quickstart.endswith("geak-core run recipes/quickstart.toml")
