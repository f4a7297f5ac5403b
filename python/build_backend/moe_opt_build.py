"""The `moe_opt` package's PEP 517 build backend: maturin's, plus the two tools HiGHS's build
needs that a fresh machine may lack.

highs-sys compiles HiGHS with cmake and generates its bindings with bindgen, which loads
libclang. Neither is on a machine with only the Rust toolchain, gcc, Python and pip, so
`pip install ./python` would fail there ("Unable to find libclang"). This backend asks pip for
PyPI's `cmake` and `libclang` wheels as build requirements when the system has no cmake or no
libclang (the same wheels `scripts/env.sh` installs for `./dev`), puts the wheel's cmake on
PATH and points bindgen at the wheel's libclang (LIBCLANG_PATH) before maturin runs cargo.
System tools win when present, as in `scripts/env.sh`.
"""

from __future__ import annotations

import ctypes.util
import glob
import os
import shutil

import maturin

# The versions scripts/env.sh pins for `./dev`.
CMAKE = "cmake==3.31.6"
LIBCLANG = "libclang==18.1.1"


def _have_libclang() -> bool:
    """A libclang bindgen finds: in LIBCLANG_PATH, or a system library the loader knows."""
    path = os.environ.get("LIBCLANG_PATH")
    if path and glob.glob(os.path.join(path, "libclang*.so*")):
        return True
    return ctypes.util.find_library("clang") is not None


def _tools() -> list[str]:
    """The build requirements beyond maturin's: the wheels for the tools the system lacks."""
    tools = []
    if shutil.which("cmake") is None:
        tools.append(CMAKE)
    if not _have_libclang():
        tools.append(LIBCLANG)
    return tools


def _point_at_tools() -> None:
    """Makes the wheels' cmake and libclang visible to cargo's build scripts."""
    if shutil.which("cmake") is None:
        try:
            import cmake  # the PyPI wheel
        except ImportError:
            pass
        else:
            os.environ["PATH"] = cmake.CMAKE_BIN_DIR + os.pathsep + os.environ.get("PATH", "")
    if not _have_libclang():
        try:
            import clang  # the PyPI `libclang` wheel
        except ImportError:
            return
        native = os.path.join(os.path.dirname(clang.__file__), "native")
        if glob.glob(os.path.join(native, "libclang*.so*")):
            os.environ["LIBCLANG_PATH"] = native


def get_requires_for_build_wheel(config_settings=None):
    return maturin.get_requires_for_build_wheel(config_settings) + _tools()


def get_requires_for_build_editable(config_settings=None):
    return maturin.get_requires_for_build_editable(config_settings) + _tools()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _point_at_tools()
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _point_at_tools()
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)


# Hooks that compile nothing: maturin's own.
get_requires_for_build_sdist = maturin.get_requires_for_build_sdist
build_sdist = maturin.build_sdist
prepare_metadata_for_build_wheel = maturin.prepare_metadata_for_build_wheel
prepare_metadata_for_build_editable = maturin.prepare_metadata_for_build_editable
