#!/usr/bin/env python3
"""Checks moe-opt's LRU and Belady against libCacheSim's on the real token logs (run by
`./dev libcachesim-test`, which installs the pinned `libcachesim` package into
.tools/lcs-venv and builds target/debug/moe-opt first).

Each log of ../shared/data/token-traces/ (skipped where absent) is exported with `moe-opt export`
(oracleGeneral, object size 1) once per layer and once as the pool; libCacheSim's LRU and Belady
run on each file with a cache of C objects, one request at a time (`cache.get`, misses counted
here), and are compared with `moe-opt replay --json` (per layer: each layer's loads; pool: the
total loads).

What must be equal, and why:
  * K = 1 (the Switch log): every step is one request, so moe-opt's step-batched caches are the
    textbook ones: LRU and Belady loads equal at every C, per layer and pooled.
  * K > 1: libCacheSim serves a step's K requests one after another, so it may evict an expert
    the same step already used (moe-opt keeps a step's experts resident together) and LRU may
    evict an expert the step is about to hit. libCacheSim's Belady solves that relaxed problem
    optimally, so it may load fewer, never more: libCacheSim Belady <= moe-opt Belady is
    asserted; LRU is only reported.
Also checked: the csv export read with libCacheSim's csv reader (columns time=1, obj_id=2,
size=3, header) gives the same LRU misses as the binary.

Prints `libcachesim: N passed, N failed` and exits 1 on a failure.
"""
import json
import os
import sys
import tempfile
from pathlib import Path

import libcachesim as lcs

from moe_cli import run

ROOT = Path(__file__).resolve().parent.parent
BIN = os.environ.get("MOE_OPT_BIN", str(ROOT / "target" / "debug" / "moe-opt"))
DATA = ROOT.parent / "shared" / "data" / "token-traces"
LOGS = [
    "switch_base8_encoder_top1.jsonl.gz",
    "olmoe_1b7b_0924_warp_decode.jsonl.gz",
    "kimi_linear_48b_a3b_warp_decode.jsonl.gz",
]


def moe_opt(*args):
    return run(BIN, *args)


def reader(path, csv=False):
    if not csv:
        return lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
    params = lcs.ReaderInitParam(has_header=True, delimiter=",")
    params.time_field, params.obj_id_field, params.obj_size_field = 1, 2, 3
    return lcs.TraceReader(str(path), lcs.TraceType.CSV_TRACE, params)


def lcs_misses(policy, capacity, trace_reader):
    cache = {"lru": lcs.LRU, "belady": lcs.Belady}[policy](capacity)
    return sum(1 for req in trace_reader if not cache.get(req))


def replay(log, capacity, scope):
    out = json.loads(moe_opt("replay", log, "--capacity", capacity, "--methods", "lru,belady",
                             "--scope", scope, "--json"))
    return {r["policy"]: r for r in out["results"]}


def main():
    passed = failed = 0
    rows = []

    def check(ok, what):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        if not ok:
            print("  FAIL", what)

    work = Path(tempfile.mkdtemp(prefix="moe-opt-lcs-"))
    for name in LOGS:
        log = DATA / name
        if not log.exists():
            print(f"skip {name}: {log} is absent")
            continue
        moe_opt("import", "cache-trace", "--log", log, "-o", work / "t.json")
        meta = json.loads((work / "t.json").read_text())
        e, k, layers = meta["experts"], meta["top_k"], meta["layers"]
        exact = k == 1
        for scope, universe in (("per-layer", e), ("pool", e * layers)):
            caps = sorted({c for c in (k, universe // 8, universe // 4, universe // 2,
                                       3 * universe // 4) if k <= c < universe})
            files = {}
            if scope == "per-layer":
                for layer in range(layers):
                    files[layer] = work / f"{name}.{layer}.oracleGeneral.bin"
                    moe_opt("export", log, "--layer", layer, "-o", files[layer])
            else:
                files[None] = work / f"{name}.pool.oracleGeneral.bin"
                moe_opt("export", log, "-o", files[None])
            for c in caps:
                ours = replay(log, c, scope)
                for policy in ("lru", "belady"):
                    if scope == "per-layer":
                        mine = sum(l["loads"] for l in ours[policy]["layers"])
                        theirs = sum(lcs_misses(policy, c, reader(f)) for f in files.values())
                    else:
                        mine = ours[policy]["total"]["loads"]
                        theirs = lcs_misses(policy, c, reader(files[None]))
                    rows.append((name.split("_")[0], k, scope, c, policy, mine, theirs))
                    if exact:
                        check(mine == theirs, f"{name} {scope} C={c} {policy}: moe-opt {mine}, "
                                              f"libCacheSim {theirs}")
                    elif policy == "belady":
                        check(theirs <= mine, f"{name} {scope} C={c} belady: libCacheSim "
                                              f"{theirs} > moe-opt {mine}")
        # The csv export through libCacheSim's csv reader: the binary's LRU misses.
        csv = work / f"{name}.csv"
        moe_opt("export", log, "--format", "csv", "-o", csv)
        c = max(k, e * layers // 4)
        check(lcs_misses("lru", c, reader(csv, csv=True))
              == lcs_misses("lru", c, reader(files[None])), f"{name} csv reader at C={c}")

    print(f"{'log':<8} {'K':>2} {'scope':<9} {'C':>5} {'policy':<7} {'moe-opt':>8} "
          f"{'libCacheSim':>11}")
    for log, k, scope, c, policy, mine, theirs in rows:
        print(f"{log:<8} {k:>2} {scope:<9} {c:>5} {policy:<7} {mine:>8} {theirs:>11}")
    print(f"libcachesim: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
