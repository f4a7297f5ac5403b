"""moe-opt from Python: the command line's commands in this process, their reports as dicts and
their tidy tables as pandas DataFrames.

Every function runs the `moe-opt` command of the same name in this process (the Rust code
itself, no subprocess; the GIL is released while it runs) and returns a :class:`Result`:

* ``json``: the JSON report, exactly what ``moe-opt COMMAND --json`` prints;
* ``table``: the tidy table, exactly what ``moe-opt COMMAND --csv`` writes (the same columns,
  documented once for both in the README and in each command's ``--help``);
* ``tables`` and ``out`` for the commands that write a folder (``verify``, ``sweep``,
  ``merge``): every CSV of the folder by name (``claims``, ``instances``, ``results``);
* ``args``: the command line that made it (``moe-opt ARGS`` repeats it in a shell).

Keyword arguments are the command's flags, ``_`` for ``-``: ``time_limit=5`` is
``--time-limit 5``, ``True`` a bare flag, ``None`` or ``False`` leaves the flag out, a list is
joined by commas, a dict (a configuration or an instance) is written to a temporary JSON file and
a numpy array (activation counts, EPLB weights) to a temporary ``.npy`` file.
``moe_opt.run("replay", "--help")`` prints any command's flags. A command's bad input raises
:class:`MoeOptError` with the command line's one-line message and exit code.

Long runs (``verify``, ``sweep``) draw a tqdm bar (``tqdm.auto``: a widget in Jupyter) when tqdm
is installed. Interrupting Python does not stop a command that has started; ``verify`` and
``sweep`` continue an interrupted run with ``resume=True``.
"""

from __future__ import annotations

import json as _json
import os
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Union

import numpy as np
import pandas as pd

from . import _native
from ._native import MoeOptError

__version__ = _native.__version__
__all__ = [
    "MoeOptError",
    "Instance",
    "Result",
    "run",
    "problems",
    "generate",
    "import_instance",
    "load",
    "solve",
    "compare",
    "write_lp",
    "claims",
    "verify",
    "recheck",
    "family",
    "sweep",
    "merge",
    "replay",
    "mrc",
    "route",
    "pareto",
    "offline",
    "export",
    "tpot",
    "migrate",
    "plan",
    "eplb",
    "redundancy",
    "migration_front",
    "report",
]

PathLike = Union[str, os.PathLike]


@dataclass(frozen=True)
class Instance:
    """An instance file and its parsed JSON."""

    path: Path
    data: dict

    def __repr__(self) -> str:
        return f"Instance({str(self.path)!r})"


@dataclass
class Result:
    """What a command gave: its JSON report, its tidy table and, for a folder, every CSV in it."""

    args: list
    json: Any = None
    table: Optional[pd.DataFrame] = None
    tables: dict = field(default_factory=dict)
    out: Optional[Path] = None

    def __repr__(self) -> str:
        parts = [f"moe-opt {' '.join(self.args)}"]
        if self.table is not None:
            parts.append(f"table: {len(self.table)} rows x {len(self.table.columns)} columns")
        if self.out is not None:
            parts.append(f"out: {self.out}")
        return "Result(" + "; ".join(parts) + ")"


def _call(args: list, progress: bool = True) -> str:
    """Runs the command line in a worker thread (the native call releases the GIL) and, while it
    runs, draws the run's progress with tqdm when it reports any. Returns its standard output;
    its notes (``wrote FILE``) go to ``sys.stderr``, which Jupyter shows under the cell."""
    box: dict = {}

    def work() -> None:
        try:
            box["out"] = _native.cli([str(a) for a in args])
        except BaseException as e:  # re-raised on the caller's thread
            box["error"] = e

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    bar, shown = None, None
    try:
        while worker.is_alive():
            worker.join(0.1)
            state = _native.progress() if progress else None
            if state is None:
                continue
            what, done, total = state
            if bar is None or shown != (what, total):
                if bar is not None:
                    bar.close()
                bar = _bar(what, total)
                shown = (what, total)
            if bar is not None:
                bar.n = done
                bar.refresh()
    finally:
        if bar is not None:
            bar.close()
    if "error" in box:
        raise box["error"]
    stdout, notes = box["out"]
    if notes:
        sys.stderr.write(notes)
    return stdout


def _bar(what: str, total: int):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=what, leave=False)


def run(*args: Any) -> str:
    """Runs ``moe-opt ARGS...`` in this process and returns what it printed."""
    return _call(list(args))


class _Files:
    """The temporary files of one call: dicts written as JSON, CSV tables to read back."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="moe_opt_")
        self._n = 0

    def path(self, name: str) -> Path:
        self._n += 1
        return Path(self._dir.name) / f"{self._n}-{name}"

    def file(self, value: Any, name: str = "input.json") -> str:
        """A path for ``value``: an :class:`Instance`'s file, a dict or list as a JSON file, a
        numpy array as a ``.npy`` file, a path as it is."""
        if isinstance(value, Instance):
            return str(value.path)
        if isinstance(value, np.ndarray):
            path = self.path(Path(name).with_suffix(".npy").name)
            np.save(path, value)
            return str(path)
        if isinstance(value, (dict, list)):
            path = self.path(name)
            path.write_text(_json.dumps(value))
            return str(path)
        return os.fspath(value)

    def close(self) -> None:
        self._dir.cleanup()


def _flags(files: _Files, flags: dict) -> list:
    """Keyword arguments as the command's flags (module doc)."""
    out = []
    for key, value in flags.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, (dict, Instance, np.ndarray)):
            out += [flag, files.file(value, f"{key}.json")]
        elif isinstance(value, (list, tuple)):
            out += [flag, ",".join(str(v) for v in value)]
        else:
            out += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return out


def _report(command: str, positional: Iterable[Any], flags: dict, table: bool = True) -> Result:
    """A reporting command with ``--json``, and with ``--csv`` when it has a table."""
    files = _Files()
    try:
        args = [command] + [files.file(p) for p in positional] + _flags(files, flags)
        csv = files.path("table.csv") if table else None
        line = args + ["--json"] + (["--csv", str(csv)] if csv else [])
        printed = _call(line)
        result = Result(args=args, json=_json.loads(printed) if printed.strip() else None)
        if csv is not None and csv.exists():
            result.table = pd.read_csv(csv)
        return result
    finally:
        files.close()


def _folder(command: str, positional: Iterable[Any], flags: dict, out: Optional[PathLike],
            default: str) -> Result:
    """A command that writes a folder: its CSVs as DataFrames. Without ``out``, a new folder
    under the system's temporary directory."""
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix=f"moe_opt_{default}_"))
    files = _Files()
    try:
        args = [command] + [files.file(p) for p in positional] + _flags(files, flags)
        args += ["--out", str(out)]
        _call(args)
    finally:
        files.close()
    tables = {p.stem: pd.read_csv(p) for p in sorted(out.glob("*.csv"))}
    main = {"verify": "claims", "sweep": "results", "merge": "results"}[command]
    return Result(args=args, table=tables.get(main), tables=tables, out=out)


# --- instances ---------------------------------------------------------------------------------


def problems() -> dict:
    """Every problem with its methods and presets (``moe-opt problems --json``)."""
    return _json.loads(_call(["problems", "--json"]))


def load(path: PathLike) -> Instance:
    """An instance file (JSON) of any problem."""
    path = Path(path)
    return Instance(path=path, data=_json.loads(path.read_text()))


def generate(problem: str, out: Optional[PathLike] = None, *, preset: Optional[str] = None,
             config: Optional[Union[dict, PathLike]] = None, seed: int = 0,
             family: Optional[str] = None, param: Optional[float] = None) -> Instance:
    """A seeded instance from a preset or a generator configuration, or a parametric family's
    instance at X = ``param`` (``moe-opt generate``); written to ``out``, or to a new temporary
    file."""
    flags = {"preset": preset, "config": config, "seed": seed}
    if family is not None:  # a family is not seeded
        flags = {"family": family, "param": param}
    return _made("generate", problem, out, flags)


def import_instance(problem: str, out: Optional[PathLike] = None, **flags: Any) -> Instance:
    """An instance from real data (``moe-opt import``: ``counts=`` a file or a numpy array
    ``[prompt, layer, expert]`` with ``top_k=`` and ``model=``, ``log=``, ``libcachesim=`` and
    the problem's flags)."""
    return _made("import", problem, out, flags)


def _made(command: str, problem: str, out: Optional[PathLike], flags: dict) -> Instance:
    if out is None:
        handle, name = tempfile.mkstemp(prefix=f"moe_opt_{problem}_", suffix=".json")
        os.close(handle)
        out = name
    files = _Files()
    try:
        _call([command, problem] + _flags(files, flags) + ["--output", os.fspath(out)])
    finally:
        files.close()
    return load(out)


# --- one instance --------------------------------------------------------------------------------


def solve(instance: Union[Instance, dict, PathLike], method: str = "milp", **flags: Any) -> Result:
    """One method on an instance (``moe-opt solve``): ``table`` has a row per element of the
    solution."""
    return _report("solve", [instance], {"method": method, **flags})


def compare(instance: Union[Instance, dict, PathLike], methods: Optional[Union[str, list]] = None,
            **flags: Any) -> Result:
    """Several methods against the exact optimum (``moe-opt compare``): ``table`` has a row per
    method."""
    return _report("compare", [instance], {"methods": methods, **flags})


def write_lp(instance: Union[Instance, dict, PathLike], out: PathLike, **flags: Any) -> Path:
    """The instance's MILP as a CPLEX LP or (``format="mps"``) MPS file (``moe-opt write-lp``)."""
    files = _Files()
    try:
        _call(["write-lp", files.file(instance)] + _flags(files, flags) + ["--output", os.fspath(out)])
    finally:
        files.close()
    return Path(out)


# --- claims --------------------------------------------------------------------------------------


def claims() -> Result:
    """The registered claims of the papers (``moe-opt claims``): ``table`` has a row per claim."""
    return _report("claims", [], {})


def verify(out: Optional[PathLike] = None, **flags: Any) -> Result:
    """Checks claims on generated and worst-case-searched instances (``moe-opt verify``):
    ``tables["claims"]`` (= ``table``) a row per claim, ``tables["instances"]`` a row per
    checked instance; ``out`` holds the journal and the counterexamples."""
    if "instance" in flags:
        raise ValueError("verify: to re-check one saved instance, use moe_opt.recheck")
    return _folder("verify", [], flags, out, "verify")


def recheck(claim: str, instance: PathLike, **flags: Any) -> dict:
    """Re-checks one saved instance (a counterexample) against one claim (``moe-opt verify
    --claim C --instance FILE --json``)."""
    files = _Files()
    try:
        args = ["verify", "--claim", claim, "--instance", os.fspath(instance), "--json"]
        return _json.loads(_call(args + _flags(files, flags)))
    finally:
        files.close()


def family(problem: str, name: str, folder: Optional[PathLike] = None) -> pd.DataFrame:
    """A parametric family's claim checked at each of its listed X (``moe-opt generate PROBLEM
    --family NAME --param X``, then :func:`recheck`): a row per X with the check's ``outcome``,
    ``tier`` and ``measured`` measure beside the closed form ``expected`` that ``moe-opt
    problems --json`` lists, the ``claimed`` bound and the ``limit``; the instances are written
    to ``folder`` (a new temporary folder without it)."""
    listed = [f for p in problems() if p["problem"] == problem for f in p["families"]]
    chosen = next((f for f in listed if f["name"] == name), None)
    if chosen is None:
        raise ValueError(f"{problem} has no family {name!r}: {[f['name'] for f in listed]}")
    folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="moe_opt_family_"))
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for x, expected in chosen["expected"]:
        path = folder / f"{name}-{x:g}.json"
        generate(problem, path, family=name, param=x)
        check = recheck(chosen["claim"], path)
        num, _, den = chosen["measure"].partition("/")
        measured = check[num] / check[den] if den else check[num]
        rows.append({"x": x, "measured": measured, "expected": expected,
                     "claimed": chosen["claimed"], "limit": chosen["limit"],
                     "outcome": check["outcome"], "tier": check["tier"]})
    return pd.DataFrame(rows)


# --- sweeps --------------------------------------------------------------------------------------


def sweep(spec: PathLike, out: Optional[PathLike] = None, **flags: Any) -> Result:
    """A grid of generator parameters x seeds x methods (``moe-opt sweep``): ``table`` is
    ``results.csv``, a row per cell and method."""
    return _folder("sweep", [spec], flags, out, "sweep")


def merge(inputs: Iterable[PathLike], out: PathLike) -> Result:
    """Joins the shards of a sweep (``moe-opt merge``)."""
    return _folder("merge", list(inputs), {}, out, "merge")


def report(folder: PathLike, out: Optional[PathLike] = None) -> Path:
    """One self-contained HTML page (tables, inline SVG figures) of a ``verify``, ``sweep`` or
    ``merge`` folder, or of an ``mrc`` table (``moe-opt report``); returns its path (default
    ``FOLDER/report.html``). In Jupyter: ``IPython.display.HTML(filename=...)``."""
    folder = Path(folder)
    if out is None:  # the command's default
        out = folder / "report.html" if folder.is_dir() else folder.with_suffix(".html")
    _call(["report", os.fspath(folder), "--out", os.fspath(out)])
    return Path(out)


# --- traces --------------------------------------------------------------------------------------


def replay(trace: Union[Instance, dict, PathLike], capacity: int, **flags: Any) -> Result:
    """A token stream through expert caches under its original routing (``moe-opt replay``)."""
    return _report("replay", [trace], {"capacity": capacity, **flags})


def mrc(trace: Union[Instance, dict, PathLike], **flags: Any) -> Result:
    """Miss-ratio curves of every capacity in one pass (``moe-opt mrc``)."""
    return _report("mrc", [trace], flags)


def route(trace: Union[Instance, dict, PathLike], method: str, capacity: int,
          **flags: Any) -> Result:
    """A token stream with one cache-aware router and LRU caches (``moe-opt route``)."""
    return _report("route", [trace], {"method": method, "capacity": capacity, **flags})


def pareto(trace: Union[Instance, dict, PathLike], **flags: Any) -> Result:
    """Every cache-aware router's knob at several capacities (``moe-opt pareto``)."""
    return _report("pareto", [trace], flags)


def offline(trace: Union[Instance, dict, PathLike], capacity: int, out: Optional[PathLike] = None,
            **flags: Any) -> Instance:
    """An offline caching instance (cache-offline) from one layer of a trace (``moe-opt
    offline``)."""
    if out is None:
        handle, out = tempfile.mkstemp(prefix="moe_opt_cache-offline_", suffix=".json")
        os.close(handle)
    files = _Files()
    try:
        _call(["offline", files.file(trace), "--capacity", str(capacity)] + _flags(files, flags)
              + ["--output", os.fspath(out)])
    finally:
        files.close()
    return load(out)


def export(trace: Union[Instance, dict, PathLike], out: PathLike, **flags: Any) -> Path:
    """A trace's request stream as a libCacheSim trace (``moe-opt export``)."""
    files = _Files()
    try:
        _call(["export", files.file(trace)] + _flags(files, flags) + ["--output", os.fspath(out)])
    finally:
        files.close()
    return Path(out)


def tpot(trace: Union[Instance, dict, PathLike], capacity: int, **flags: Any) -> Result:
    """SMoE's decode pipeline over a trace (``moe-opt tpot``)."""
    return _report("tpot", [trace], {"capacity": capacity, **flags})


# --- Prism and ZipMoE planning -------------------------------------------------------------------


def migrate(instance: Union[Instance, dict, PathLike], **flags: Any) -> Result:
    """Prism's online re-placement over windows (``moe-opt migrate``)."""
    return _report("migrate", [instance], flags)


def plan(file: Optional[Union[Instance, dict, PathLike]] = None, **flags: Any) -> Result:
    """ZipMoE's cache-pool plan (``moe-opt plan``)."""
    return _report("plan", [] if file is None else [file], flags)


# --- EPLB ----------------------------------------------------------------------------------------


def redundancy(instance: Union[Instance, dict, PathLike], **flags: Any) -> Result:
    """How many redundant slots a balance instance needs: the optimum's balancedness per slot
    count beside EPLB's (``moe-opt redundancy``; ``extra_per_gpu``, ``target``, ``time_limit``)."""
    return _report("redundancy", [instance], flags)


def migration_front(instance: Union[Instance, dict, PathLike], **flags: Any) -> Result:
    """The exact trade-off between the busiest GPU's load and the replicas moved from a balance
    instance's ``current`` placement, per layer, with EPLB's plan beside it (``moe-opt
    migration-front``; ``max_budget``, ``time_limit``)."""
    return _report("migration-front", [instance], flags)


def eplb(weight: Any, num_replicas: int, num_groups: int, num_nodes: int, num_gpus: int,
         method: str = "eplb", time_limit: Optional[float] = None):
    """DeepSeek EPLB's ``rebalance_experts(weight, num_replicas, num_groups, num_nodes,
    num_gpus)``: ``weight`` is ``[layers, logical experts]`` (a numpy array, anything numpy reads,
    or a torch tensor); returns ``(phy2log, log2phy, logcnt)`` of int64 with the reference's
    shapes ``[layers, num_replicas]``, ``[layers, experts, max replicas]`` (padded with -1) and
    ``[layers, experts]``: torch tensors when ``weight`` is one, numpy arrays otherwise. A torch
    tensor on the CPU reaches numpy without a copy (``Tensor.numpy``); float64 input is not
    copied either.

    ``method="exact"``: the best plan the balance problem's exact method finds under the
    locality EPLB's policy keeps (``time_limit`` seconds per layer, none by default), as the
    same three tensors plus a fourth value, a dict: ``status`` (``optimal`` only when every
    layer is proved), ``objective`` (sum over layers of the busiest GPU's load), ``best_bound``,
    ``gap``, ``solve_time_s`` and ``layers`` (each layer's status, objective, bound and gap)."""
    is_torch = type(weight).__module__.split(".")[0] == "torch"
    array = weight.detach().cpu().numpy() if is_torch else weight
    array = np.ascontiguousarray(array, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(
            f"eplb: weight must be 2-D [layers, logical experts], got shape {array.shape}")
    limit = None if time_limit is None else float(time_limit)
    outputs, account = _native.eplb(array, int(num_replicas), int(num_groups), int(num_nodes),
                                    int(num_gpus), str(method), limit)
    if is_torch:
        import torch

        outputs = tuple(torch.from_numpy(a) for a in outputs)
    if account is None:
        return outputs
    info = _json.loads(account)
    total = info.pop("total")
    total["layers"] = info["layers"]
    return (*outputs, total)
