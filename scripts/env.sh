# Sourced by the README's commands and .ci/run: makes cmake and libclang available for the HiGHS build
# (highs-sys compiles HiGHS with cmake and runs bindgen, which loads libclang). System tools win when
# present; otherwise PyPI's `cmake` and `libclang` wheels go into the project-local, git-ignored .tools/.
# Idempotent and quiet after the first run.

moe_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
moe_tools="$moe_root/.tools"
moe_venv="$moe_tools/venv"

moe_have_libclang() {
  [ -n "${LIBCLANG_PATH:-}" ] && ls "$LIBCLANG_PATH"/libclang*.so* >/dev/null 2>&1 && return 0
  ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so' && return 0
  return 1
}

moe_need_cmake=0; command -v cmake >/dev/null 2>&1 || moe_need_cmake=1
moe_need_clang=0; moe_have_libclang || moe_need_clang=1

if [ "$moe_need_cmake" = 1 ] || [ "$moe_need_clang" = 1 ]; then
  if [ ! -x "$moe_venv/bin/python" ]; then
    echo "moe-opt: installing build tools (cmake, libclang) into $moe_tools" >&2
    python3 -m venv "$moe_venv" >&2 || { echo "moe-opt: python3 -m venv failed" >&2; return 1; }
  fi
  moe_pkgs=""
  [ "$moe_need_cmake" = 1 ] && [ ! -x "$moe_venv/bin/cmake" ] && moe_pkgs="$moe_pkgs cmake==3.31.6"
  [ "$moe_need_clang" = 1 ] && ! ls "$moe_venv"/lib/python3*/site-packages/clang/native/libclang*.so >/dev/null 2>&1 \
    && moe_pkgs="$moe_pkgs libclang==18.1.1"
  if [ -n "$moe_pkgs" ]; then
    # shellcheck disable=SC2086
    "$moe_venv/bin/python" -m pip install --quiet --disable-pip-version-check $moe_pkgs >&2 \
      || { echo "moe-opt: pip install of$moe_pkgs failed" >&2; return 1; }
  fi
  if [ "$moe_need_cmake" = 1 ]; then export PATH="$moe_venv/bin:$PATH"; fi
  if [ "$moe_need_clang" = 1 ]; then
    LIBCLANG_PATH="$(dirname "$(ls "$moe_venv"/lib/python3*/site-packages/clang/native/libclang*.so | head -n 1)")"
    export LIBCLANG_PATH
  fi
fi
unset moe_need_cmake moe_need_clang moe_pkgs

# The Python package's native module (python/, PyO3) is a Python extension: whichever command
# builds it (the workspace build, or maturin, which sets this as well), it must not link libpython,
# and both builds of pyo3 must be the same.
export PYO3_BUILD_EXTENSION_MODULE=1
