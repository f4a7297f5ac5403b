#!/usr/bin/env bash
# `pip install ./python` in a fresh virtual environment, without scripts/env.sh: the package's
# own build backend (python/build_backend/moe_opt_build.py) must bring cmake and libclang from
# PyPI when the machine has none. Then the package's pytest tests run against that install
# (they compare it with target/debug/moe-opt, which `./dev test` has built). Run by .ci/run.
#
# The build goes to its own target folder (MOE_PIP_TARGET, default target/pip-check, removed
# afterwards): the workspace's target/ was built with .tools/'s LIBCLANG_PATH, and HiGHS's build
# script reruns when that changes.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
target="${MOE_PIP_TARGET:-$PWD/target/pip-check}"

python3 -m venv "$work/venv"
# Nothing of ./dev's environment: no LIBCLANG_PATH, no .tools/ on PATH.
clean_path="$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '/\.tools/' | paste -sd: -)"
env -u LIBCLANG_PATH -u PYO3_BUILD_EXTENSION_MODULE PATH="$clean_path" CARGO_TARGET_DIR="$target" \
  "$work/venv/bin/pip" install --quiet --disable-pip-version-check ./python
"$work/venv/bin/pip" install --quiet --disable-pip-version-check pytest
# From outside the repository, so that `import moe_opt` is the installed package.
(cd "$work" && "$work/venv/bin/python" -c 'import moe_opt, sys; assert "site-packages" in moe_opt.__file__, moe_opt.__file__; print("installed:", moe_opt.__file__)')
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider --import-mode=importlib --rootdir "$work" python/tests
[ -n "${MOE_PIP_TARGET:-}" ] || rm -rf "$target"
