"""Every MILP `moe-opt write-lp` writes, in LP and in MPS, solved by HiGHS's own Python package
(highspy, pinned in requirements-notebooks.txt), must reach the optimum `moe-opt solve --json`
reports for the same model; a .npy file written by numpy must give `moe-opt eplb` the same
report as the same weights in JSON; and activation counts saved by numpy (`np.save` of int64,
uint16 and float32 arrays) must import to the instance of the same counts as a
moe-activation-counts/v1 file. Run by `./dev test` (after the notebooks, in their venv):

    python scripts/test_formats.py [--moe-opt target/debug/moe-opt]

Models: the committed instances with a MILP that proves in seconds (SlimCaching, Prism and
ZipMoE tiny and small), a cache-offline instance made by `moe-opt offline` from a generated
trace (`--model fixed` and `flexible`), and a generated SMoE layer (`--model routing` and
`split`). The reference is what `solve --method M --json` reports as proved optimal; an
objective whose LP name ends in `_ms` (SlimCaching's F, ZipMoE's makespan, SMoE's split time)
is the report's seconds x 1000. HiGHS solves each file with mip_rel_gap = mip_abs_gap = 0; the
two must agree within TOLERANCE x max(1, |optimum|) (HiGHS's feasibility tolerance is 1e-7 and
its MPS writer keeps 15 significant digits). Prints `N passed, N failed` and exits 1 on any
failure.
"""

import argparse
import json
import os
import re
import sys
import tempfile

import highspy
import numpy as np

from moe_cli import run

TOLERANCE = 1e-6
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def highs_optimum(path):
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.0)
    h.setOptionValue("threads", 1)
    if h.readModel(path) != highspy.HighsStatus.kOk:
        raise RuntimeError(f"highspy could not read {path} cleanly")
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"{path}: highspy ended with {status}")
    return h.getInfo().objective_function_value


def objective_scale(lp_path):
    """1000 when the LP's objective is named in milliseconds, else 1."""
    with open(lp_path) as f:
        text = f.read()
    name = re.search(r"^(?:Maximize|Minimize)\n (\S+):", text, re.M).group(1)
    return 1e3 if name.endswith("_ms") else 1.0


def cases(moe_opt, tmp):
    """(label, instance, --model or None, the proved optimum from `solve --json`)."""
    def exact(report):
        e = report["result"]["exact"]
        assert e["status"] == "optimal", e
        return e["objective"]

    for name in ["slimcaching-tiny-1", "slimcaching-small-1", "prism-tiny-1", "prism-small-1",
                 "zipmoe-tiny-1", "zipmoe-small-1"]:
        path = os.path.join(ROOT, "instances", name + ".json")
        yield name, path, None, exact(json.loads(run(moe_opt, "solve", path, "--method", "milp", "--json")))

    config = json.loads(run(moe_opt, "generate", "cache-trace", "--print-config", "--preset", "mixtral-8x7b"))
    config.update(layers=1, sequences=2, tokens_per_sequence=20)
    config_path = os.path.join(tmp, "trace-config.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    trace = os.path.join(tmp, "trace.json")
    run(moe_opt, "generate", "cache-trace", "--config", config_path, "--seed", "1", "-o", trace)
    offline = os.path.join(tmp, "offline.json")
    run(moe_opt, "offline", trace, "--layer", "0", "--capacity", "4", "--tokens", "16",
        "--top-j", "1", "--max-rank", "4", "-o", offline)
    for model in ["fixed", "flexible"]:
        r = json.loads(run(moe_opt, "solve", offline, "--method", f"milp-{model}", "--json"))["result"]
        assert r["proved_optimal"], r
        yield f"cache-offline {model}", offline, model, float(r["loads"])

    smoe = os.path.join(tmp, "smoe.json")
    run(moe_opt, "generate", "smoe", "--preset", "tiny", "--seed", "3", "-o", smoe)
    routing = json.loads(run(moe_opt, "solve", smoe, "--method", "milp", "--json"))["methods"][0]
    assert routing["routing_status"] == "optimal", routing
    yield "smoe routing", smoe, "routing", float(routing["hits"])
    split = json.loads(run(moe_opt, "solve", smoe, "--method", "smoe+milp", "--json"))["methods"][0]
    assert split["split_status"] == "optimal", split
    yield "smoe split", smoe, "split", split["split"]["objective_s"]


def npy_case(moe_opt, tmp):
    """A .npy file written by numpy gives `eplb` the report of the same weights in JSON."""
    weights = np.arange(1, 25, dtype="<f4").reshape(2, 12) * 3.5
    npy = os.path.join(tmp, "weights.npy")
    np.save(npy, weights)
    js = os.path.join(tmp, "weights.json")
    with open(js, "w") as f:
        json.dump(weights.astype(float).tolist(), f)
    args = ["--replicas", "16", "--groups", "4", "--nodes", "2", "--gpus", "4", "--json"]
    a = json.loads(run(moe_opt, "eplb", "--weights", npy, *args))
    b = json.loads(run(moe_opt, "eplb", "--weights", js, *args))
    for r in (a, b):
        r.pop("weights_file")
    if a != b:
        raise RuntimeError("eplb on the .npy and on the JSON matrix differ")


def counts_case(moe_opt, tmp):
    """numpy's .npy counts import (Prism, ZipMoE pool) as the same counts in a v1 file do."""
    rng = np.random.default_rng(7)
    # DeepSeek-V2-Lite's shape, so that --model gives Prism its expert bytes.
    model, prompts, layers, experts, top_k = "DeepSeek-V2-Lite-Chat", 5, 3, 64, 6
    counts = np.zeros((prompts, layers, experts), dtype=np.int64)
    for p in range(prompts):
        for t in range(int(rng.integers(4, 12))):
            for l in range(layers):
                counts[p, l, rng.choice(experts, size=top_k, replace=False)] += 1
    v1 = os.path.join(tmp, "counts.json")
    with open(v1, "w") as f:
        json.dump({"format": "moe-activation-counts/v1", "model": model, "top_k": top_k,
                   "experts_per_layer": experts, "prompts": prompts, "layers": layers,
                   "counts": counts.tolist()}, f)
    for dtype in ("<i8", "<u2", "<f4"):
        npy = os.path.join(tmp, f"counts-{dtype[1:]}.npy")
        np.save(npy, counts.astype(dtype))
        for problem in ("prism", "zipmoe-pool"):
            out = {}
            for path, flags in ((v1, []), (npy, ["--top-k", str(top_k), "--model", model])):
                dest = os.path.join(tmp, f"{problem}-out.json")
                run(moe_opt, "import", problem, "--counts", path, *flags, "-o", dest)
                with open(dest) as f:
                    out[path] = json.load(f)
                # Prism names its instance after the count file.
                out[path].pop("name")
            if out[v1] != out[npy]:
                raise RuntimeError(f"import {problem} of {dtype} .npy counts differs from the v1 file's")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moe-opt", default=os.path.join(ROOT, "target", "debug", "moe-opt"))
    moe_opt = parser.parse_args().moe_opt
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="moe-opt-formats-") as tmp:
        for label, instance, model, optimum in cases(moe_opt, tmp):
            stem = os.path.join(tmp, re.sub(r"\W", "-", label))
            extra = ["--model", model] if model else []
            run(moe_opt, "write-lp", instance, "-o", stem + ".lp", *extra)
            run(moe_opt, "write-lp", instance, "--format", "mps", "-o", stem + ".mps", *extra)
            expected = optimum * objective_scale(stem + ".lp")
            for ext in ("lp", "mps"):
                got = highs_optimum(f"{stem}.{ext}")
                ok = abs(got - expected) <= TOLERANCE * max(1.0, abs(expected))
                print(f"{'ok  ' if ok else 'FAIL'} {label} .{ext}: highspy {got!r}, moe-opt {expected!r}")
                passed, failed = passed + ok, failed + (not ok)
        for case, ok, failure in (
            (npy_case, "eplb: numpy's .npy reads as its JSON matrix", "eplb .npy"),
            (counts_case, "import: numpy's .npy counts read as their v1 file", "import .npy counts"),
        ):
            try:
                case(moe_opt, tmp)
                print(f"ok   {ok}")
                passed += 1
            except RuntimeError as e:
                print(f"FAIL {failure}: {e}")
                failed += 1
    print(f"formats: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
