#!/usr/bin/env bash
# Installs geak-core and every bundled plugin in editable mode, into the Python that `python3`
# (or $PYTHON) names: the README's commands make and activate a virtualenv, .venv, first.
#   bash install.sh                 fresh machine: CPU torch wheel, all dependencies, test tools
#   bash install.sh --with-browser  the same, and a Chromium for the report's browser test (as
#                                   root: Debian's package; the README's test command uses it)
#   bash install.sh --no-deps       a machine that already has torch/triton (a GPU box without
#                                   an index)
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
NO_DEPS=0 BROWSER=0
for arg in "$@"; do
  case "$arg" in
    --no-deps) NO_DEPS=1 ;;
    --with-browser) BROWSER=1 ;;
    *) echo "install.sh: unknown option $arg (known: --no-deps, --with-browser)" >&2; exit 2 ;;
  esac
done
pkgs=(-e ".[report,export,test,mcp]")
# Every bundled plugin, each with its own dependencies (plugins/executor_ray brings Ray, which
# nothing else needs; with --no-deps, install Ray's wheel beside it to use or test it).
for d in plugins/*/ templates/; do pkgs+=(-e "$d"); done
if [[ $NO_DEPS == 1 ]]; then
  $PY -m pip install --quiet --no-deps --no-build-isolation "${pkgs[@]}"
  exit 0
fi
# A CUDA/ROCm torch already present is kept; otherwise the CPU build is asked for by name
# (2.13.0+cpu: PyPI's plain 2.13.0 on Linux is the multi-GB CUDA build), from the indexes pip
# already knows (a local wheel house), else from PyTorch's CPU index.
if ! $PY -c "import torch, sys; sys.exit(0 if (torch.version.cuda or torch.version.hip) else 1)" 2>/dev/null; then
  $PY -m pip install --quiet "torch==2.13.0+cpu" 2>/dev/null \
    || $PY -m pip install --quiet "torch==2.13.0+cpu" --extra-index-url https://download.pytorch.org/whl/cpu
fi
# Triton pinned to the GPU machine's version: CI then judges with the Triton the device
# figures come from (and 3.9 removed tl.make_block_ptr, which four ROCm tasks need).
# setuptools with its own bdist_wheel (70.1+): a fresh virtualenv of Python 3.12+ has none. The
# packages below are built with it in place (no isolated build environment to set up for each,
# which made a repeated install take a minute), and the third-party plugin test builds the
# example's wheel with it, without an index.
# The test tools, and the report's, export's and MCP server's libraries, come with geak-core's
# extras.
$PY -m pip install --quiet "triton==3.6.0" "setuptools>=70.1"
$PY -m pip install --quiet --no-build-isolation "${pkgs[@]}"
# The report's browser test drives the system's Chromium through Playwright, which never
# downloads a browser of its own here. Debian's package, where we may install it, and only
# when asked: a plain install changes nothing outside the Python environment.
if [[ $BROWSER == 1 ]] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } \
      || echo "install.sh: could not install chromium; the report's browser test will be skipped" >&2
  else
    echo "install.sh: no chromium (install it as root, e.g. apt-get install chromium);" \
         "the report's browser test will be skipped" >&2
  fi
fi
