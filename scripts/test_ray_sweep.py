#!/usr/bin/env python3
"""Tests scripts/ray_sweep.py on a local Ray instance (run by `./dev ray-test`, which installs Ray
into .tools/ray-venv and builds target/debug/moe-opt first).

On a tiny spec (the `tiny` preset, 3 seeds x 2 storage values = 6 cells, 4 methods, MILP included)
run in 4 shards (cells 2, 2, 1, 1):
  1. the merged results.csv (and results.jsonl, sweep.json) equal a single-process `moe-opt sweep`
     of the same spec byte for byte;
  2. resuming: shard 1 cut back to its first cell plus a torn line (an interrupted run), its
     results.csv and the merged folder removed; the same command again keeps that cell, redoes
     nothing else, and gives the same bytes;
  3. without a shared filesystem (--no-shared-fs: the tasks work in temporary folders and stream
     their cells to the driver), from a folder holding a partial shard: the same bytes again.

Prints `ray_sweep: N passed, N failed` and exits 1 on a failure. Takes 40-55 s on 2 cores
(mostly Ray starting, three times).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = os.environ.get("MOE_OPT_BIN", str(ROOT / "target" / "debug" / "moe-opt"))
SPEC = """\
# scripts/test_ray_sweep.py: 6 cells, seconds to run
problem = "slimcaching"
preset = "tiny"
seeds = 3
methods = ["milp", "successive-maxconv", "greedy", "lfu"]
time_limit_s = 20

[[axes]]
path = "storage.library_fraction"
values = [0.2, 0.4]
"""
SHARDS = 4
FILES = ("results.csv", "results.jsonl", "sweep.json")


def ray_sweep(spec, out, *extra):
    cmd = [sys.executable, str(ROOT / "scripts" / "ray_sweep.py"), str(spec), "--out", str(out),
           "--shards", str(SHARDS), "--num-cpus", "2", "--bin", BIN, *extra]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "RAY_ADDRESS": ""})
    took = time.monotonic() - start
    print(f"  $ {' '.join(cmd[1:])}  ({took:.1f} s, exit {p.returncode})")
    for line in p.stdout.strip().splitlines():
        print("   ", line)
    if p.returncode != 0:
        print(p.stderr[-3000:])
    return p


def same_bytes(a, b):
    """Names of the files that differ between folders a and b."""
    return [f for f in FILES if (a / f).read_bytes() != (b / f).read_bytes()]


def cut_shard(shard):
    """Leaves a shard folder as an interrupted run would: its first cell and a torn line."""
    lines = (shard / "results.jsonl").read_text().splitlines(keepends=True)
    (shard / "results.jsonl").write_text(lines[0] + lines[1][: len(lines[1]) // 2])
    (shard / "results.csv").unlink()


def main():
    if not os.access(BIN, os.X_OK):
        sys.exit(f"test_ray_sweep.py: {BIN} missing: build it (./dev cargo build) or set MOE_OPT_BIN")
    results = []

    def check(name, ok, detail=""):
        results.append(ok)
        print(f"{'ok  ' if ok else 'FAIL'} {name}{'' if ok else ': ' + detail}", flush=True)

    with tempfile.TemporaryDirectory(prefix="moe-opt-ray-test-") as tmp:
        tmp = Path(tmp)
        spec = tmp / "tiny.toml"
        spec.write_text(SPEC)
        single = tmp / "single"
        subprocess.run([BIN, "sweep", str(spec), "--out", str(single), "--jobs", "1"], check=True,
                       capture_output=True)

        # 1. shards on Ray, merged = single process
        out = tmp / "ray"
        p = ray_sweep(spec, out)
        check("ray sweep in 4 shards finishes", p.returncode == 0, p.stderr[-500:])
        if p.returncode == 0:
            diff = same_bytes(out / "merged", single)
            check("merged files equal a single-process sweep byte for byte", not diff, f"differ: {diff}")

        # 2. resume after an interruption
        if p.returncode == 0:
            cut_shard(out / "shard-1")
            shutil.rmtree(out / "merged")
            p = ray_sweep(spec, out)
            check("re-run after an interruption finishes", p.returncode == 0, p.stderr[-500:])
            check("the interrupted shard resumes from its finished cell",
                  "shard 1/4: 2 cells (1 already there)" in p.stdout, p.stdout)
            check("finished shards redo nothing",
                  all(f"shard {i}/4: {n} cells ({n} already there)" in p.stdout for i, n in ((0, 2), (2, 1), (3, 1))),
                  p.stdout)
            if p.returncode == 0:
                diff = same_bytes(out / "merged", single)
                check("resumed merge equals the single-process sweep", not diff, f"differ: {diff}")

        # 3. no shared filesystem: tasks stream their cells to the driver
        if (out / "shard-1" / "results.csv").is_file():
            streamed = tmp / "ray-streamed"
            shutil.copytree(out / "shard-1", streamed / "shard-1")
            cut_shard(streamed / "shard-1")
            p = ray_sweep(spec, streamed, "--no-shared-fs")
            check("ray sweep with --no-shared-fs finishes", p.returncode == 0, p.stderr[-500:])
            check("streamed shards report so", "(streamed)" in p.stdout and "shard 1/4: 2 cells (1 already there)" in p.stdout,
                  p.stdout)
            if p.returncode == 0:
                diff = same_bytes(streamed / "merged", single)
                check("streamed merge equals the single-process sweep", not diff, f"differ: {diff}")
                diff = [i for i in range(SHARDS) if same_bytes(streamed / f"shard-{i}", out / f"shard-{i}")]
                check("streamed shard folders equal the shared ones", not diff, f"shards {diff}")

    failed = results.count(False)
    print(f"ray_sweep: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
