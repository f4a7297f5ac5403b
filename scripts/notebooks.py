#!/usr/bin/env python3
"""Executes every notebook under notebooks/ headless, cell by cell, and fails loudly.

    ./dev notebooks [--small]     (builds, and installs the venv and the package moe_opt first)
    .tools/nb-venv/bin/python scripts/notebooks.py [--small] [--timeout S] [--html DIR] [NAME.ipynb ...]

Each notebook runs on the Jupyter kernel `moe-opt-nb` (the python of .tools/nb-venv, installed by
scripts/nb-env.sh, where `./dev python` installs the package moe_opt) with its working directory
notebooks/ and, with --small, MOE_OPT_NOTEBOOK_SMALL=1: the notebooks' own quick settings, whose
figures go to notebooks/out/figures instead of the gallery notebooks/figures. Every cell has
--timeout seconds (default 600 with --small, 1800 without). Each executed notebook is also written
as one HTML page (nbconvert, figures inline) to DIR/NAME.html: DIR is --html, by default
notebooks/html (committed) in the full run and none with --small.

The committed notebooks must carry no outputs: a notebook with outputs or execution counts fails
before it runs (clear them before committing). The executed copies, outputs included, are written
to notebooks/out/executed/ for inspection.

Prints one line per notebook with its time, then `notebooks: N passed, N failed`; the exit code is
1 if any notebook failed, naming the notebook, the cell (index and first line) and the error.
"""
import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "moe-opt-nb"
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colours in the kernel's tracebacks

try:
    import nbformat
    from nbclient import NotebookClient
    from traitlets.config import Config
    from nbclient.exceptions import CellExecutionError, CellTimeoutError
except ImportError as e:  # run with the wrong python
    sys.exit(f"notebooks.py: {e}; run it with .tools/nb-venv/bin/python (`./dev notebooks` sets it up)")


def stored_outputs(nb):
    """Indices of code cells that carry outputs or an execution count."""
    return [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)
    ]


def first_line(cell):
    lines = [line for line in cell.source.splitlines() if line.strip()]
    return lines[0][:80] if lines else "(empty)"


def run_notebook(path, small, timeout, sockets, html):
    """Runs one notebook; returns None, or a message naming the failing cell."""
    nb = nbformat.read(path, as_version=4)
    dirty = stored_outputs(nb)
    if dirty:
        return f"cells {dirty} carry outputs or execution counts: clear them before committing"
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
        allow_errors=False,
        # Unix sockets instead of loopback TCP between this process and the kernel.
        config=Config({"KernelManager": {"transport": "ipc", "ip": str(Path(sockets) / "kernel")}}),
    )
    failure = None
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            try:
                client.execute_cell(cell, index)
            except CellTimeoutError:
                failure = f"cell {index} ({first_line(cell)!r}) exceeded {timeout} s"
            except CellExecutionError as e:
                failure = f"cell {index} ({first_line(cell)!r}) raised {e.ename}: {e.evalue}\n{ANSI.sub('', str(e))}"
            except Exception as e:  # the kernel died, and the like
                failure = f"cell {index} ({first_line(cell)!r}): {type(e).__name__}: {e}"
            if failure:
                break
    executed = NOTEBOOKS / "out" / "executed" / ("small" if small else "full")
    executed.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, executed / path.name)
    if html and failure is None:
        write_html(nb, html / path.with_suffix(".html").name)
    return failure


def write_html(nb, target):
    """The executed notebook as one HTML page: nbconvert's `basic` template (cells and outputs,
    figures embedded) in a page of its own with a few lines of CSS, no script and no link out
    (the `lab` template adds 7,800 lines of Jupyter's CSS to every page)."""
    from nbconvert import HTMLExporter

    nb.metadata.pop("widgets", None)
    body, _ = HTMLExporter(template_name="basic", embed_images=True).from_notebook_node(nb)
    page = (
        f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{target.stem}</title>\n<style>{HTML_STYLE}</style>\n</head>\n<body>\n{body}\n"
        "</body>\n</html>\n"
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page)


# Readable without Jupyter's stylesheets: code and outputs set apart, figures within the page.
HTML_STYLE = """
body { font-family: sans-serif; max-width: 70em; margin: 2em auto; line-height: 1.4; }
.jp-InputArea pre, .input_area pre { background: #f5f5f5; padding: 0.5em; overflow-x: auto; }
.jp-OutputArea pre, .output pre { padding: 0.3em 0.5em; border-left: 3px solid #ddd; overflow-x: auto; }
img { max-width: 100%; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { padding: 0.15em 0.5em; border-bottom: 1px solid #eee; text-align: right; }
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="the notebooks' quick settings (MOE_OPT_NOTEBOOK_SMALL=1)")
    p.add_argument("--timeout", type=float, help="seconds per cell (default 600 with --small, 1800 without)")
    p.add_argument("--html", type=Path, help="also write each executed notebook as HTML to this folder")
    p.add_argument("names", nargs="*", help="only these notebooks (file names under notebooks/)")
    args = p.parse_args()
    timeout = args.timeout or (600 if args.small else 1800)
    # The full run refreshes the committed renders beside the gallery.
    html = args.html or (None if args.small else NOTEBOOKS / "html")

    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL)
    except NoSuchKernel:
        sys.exit(f"notebooks.py: no Jupyter kernel {KERNEL}: run `source scripts/nb-env.sh` (or ./dev notebooks)")
    print(f"kernel {KERNEL}: {spec.argv[0]}", file=sys.stderr)

    # Jupyter's inline backend (Agg underneath, no display needed): figures are saved as before
    # and also shown as cell outputs, so the executed copies and their HTML renders carry them.
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    if args.small:
        os.environ["MOE_OPT_NOTEBOOK_SMALL"] = "1"
    else:
        os.environ.pop("MOE_OPT_NOTEBOOK_SMALL", None)

    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.names:
        wanted = {Path(n).name for n in args.names}
        unknown = wanted - {p.name for p in paths}
        if unknown:
            sys.exit(f"notebooks.py: no notebook {', '.join(sorted(unknown))} under notebooks/")
        paths = [p for p in paths if p.name in wanted]
    if not paths:
        sys.exit("notebooks.py: no notebook under notebooks/")

    failures = []
    total = time.monotonic()
    for path in paths:
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="moe-opt-nb-") as sockets:
            failure = run_notebook(path, args.small, timeout, sockets, html)
        took = time.monotonic() - start
        print(f"{'ok  ' if failure is None else 'FAIL'} notebooks/{path.name} ({took:.1f} s)", flush=True)
        if failure:
            failures.append((path, failure))
    for path, failure in failures:
        print(f"\nnotebooks/{path.name}: {failure}", file=sys.stderr)
    mode = "small" if args.small else "full"
    print(f"all notebooks ({mode}): {time.monotonic() - total:.1f} s", file=sys.stderr)
    print(f"notebooks: {len(paths) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
