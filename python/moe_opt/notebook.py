"""What every notebook under notebooks/ sets up, written once: the repository it runs in, its
output folders, the one way it runs moe-opt (printing the command line), saving a figure so
that the same data give the same bytes, and sweeps of committed specs (shrunk in small mode).

A notebook's setup cell is ``nb = notebook.setup(NAME, SMALL)``; ``nb.run``, ``nb.save`` and
``nb.sweep`` are then its ``moe_opt``, ``save`` and ``run_sweep``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from . import __version__, run as _run


def repo_root(start: Path | None = None) -> Path:
    """The moe-opt repository at or above ``start`` (the working folder by default)."""
    here = (start or Path.cwd()).resolve()
    for d in [here, *here.parents]:
        if (d / "Cargo.toml").is_file() and (d / "notebooks").is_dir():
            return d
    raise RuntimeError(f"no moe-opt repository at or above {here}: start the notebook inside it")


def toml_value(v: Any) -> str:
    """``v`` (a bool, number, string or list of them) as a TOML value."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"no TOML for {v!r}")


def write_spec(spec: dict, path: Path) -> None:
    """Writes a sweep spec (top-level keys and [[axes]] tables) as TOML."""
    lines = [f"{k} = {toml_value(v)}" for k, v in spec.items() if k != "axes"]
    for axis in spec.get("axes", []):
        lines += ["", "[[axes]]"] + [f"{k} = {toml_value(v)}" for k, v in axis.items()]
    Path(path).write_text("\n".join(lines) + "\n")


class Notebook:
    """One notebook's folders: ``root`` (the repository, made the working folder: moe_opt runs
    in this process and takes relative paths from it), ``out`` (notebooks/out/NAME/small or
    full) and ``figures`` (the gallery notebooks/figures, or notebooks/out/figures in small
    mode)."""

    def __init__(self, name: str, small: bool, clean: bool = False, root: Path | None = None):
        self.name = name
        self.small = small
        self.root = repo_root(root)
        os.chdir(self.root)
        self.out = self.root / "notebooks" / "out" / name / ("small" if small else "full")
        self.figures = self.root / "notebooks" / ("out/figures" if small else "figures")
        if clean:
            shutil.rmtree(self.out, ignore_errors=True)  # nothing from an earlier run is read
        self.out.mkdir(parents=True, exist_ok=True)

    def run(self, *args: Any, show: int = 12) -> str:
        """Runs `moe-opt ARGS` through the package, in this process (paths relative to the
        repository root); prints the command and the last ``show`` lines of its output. A
        failure raises moe_opt.MoeOptError with the command line's message and exit code."""
        args = [os.path.relpath(a, self.root) if isinstance(a, Path) else str(a) for a in args]
        print("$ moe-opt", " ".join(args))
        out = _run(*args)
        if show:
            print("\n".join(out.strip().splitlines()[-show:]))
        return out

    def run_json(self, path: Path, *args: Any) -> dict:
        """Runs `moe-opt ARGS --json`, keeps its output in the file ``path`` and returns it
        parsed."""
        path.write_text(self.run(*args, "--json", show=0))
        return json.loads(path.read_text())

    def save(self, fig: Any, name: str) -> Path:
        """Saves a matplotlib figure as ``figures/name``, with no software version or date in
        the file: the same data give the same bytes."""
        self.figures.mkdir(parents=True, exist_ok=True)
        path = self.figures / name
        fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
        print("saved", path.relative_to(self.root))
        return path

    def sweep(self, spec_path: str, seeds: int | None, stride: int) -> tuple[pd.DataFrame, dict]:
        """Runs a committed sweep spec into out/sweep (emptied first): its results table and
        header. In small mode the spec is rewritten into out with ``seeds`` seeds and every
        ``stride``-th value of each axis."""
        import tomllib  # Python 3.11

        spec = tomllib.loads((self.root / spec_path).read_text())
        if "config" in spec:  # a base configuration is relative to the spec file
            spec["config"] = str(((self.root / spec_path).parent / spec["config"]).resolve())
        if self.small:
            spec["seeds"] = seeds
            for axis in spec["axes"]:
                axis["values"] = axis["values"][::stride]
            spec_file = self.out / "sweep-spec.toml"
            write_spec(spec, spec_file)
        else:
            spec_file = self.root / spec_path
        sweep_dir = self.out / "sweep"
        shutil.rmtree(sweep_dir, ignore_errors=True)
        self.run("sweep", spec_file, "--out", sweep_dir)
        header = json.loads((sweep_dir / "sweep.json").read_text())
        return pd.read_csv(sweep_dir / "results.csv"), header


def setup(name: str, small: bool, clean: bool = False) -> Notebook:
    """The notebook ``name``'s folders (``clean``: its output folder emptied first), after
    printing where everything is and the version that runs."""
    nb = Notebook(name, small, clean)
    print(
        f"repository {nb.root}\npackage    moe_opt {__version__} ({Path(__file__).parent})\n"
        f"outputs    {nb.out.relative_to(nb.root)}\nfigures    {nb.figures.relative_to(nb.root)}"
    )
    print(nb.run("--version", show=0).strip())
    return nb
