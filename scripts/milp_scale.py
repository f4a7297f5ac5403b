#!/usr/bin/env python3
"""How large a SlimCaching instance does HiGHS prove optimal within a time limit?

Generates instances of growing size from the `small` preset's configuration (3 models with
K = 1, 2, 2; 10 users; storage 20 % of the library; at most 6 activation sets per layer),
solves each with `moe-opt solve --method milp --time-limit T`, and prints one row per size:
servers, experts, N x E, status, seconds. Run through the project environment:

    ./dev cargo build && python3 scripts/milp_scale.py [--time-limit 60] [--seed 1]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("MOE_OPT_BIN", os.path.join(ROOT, "target", "debug", "moe-opt"))


def run(*args):
    return subprocess.run([BIN, *args], check=True, capture_output=True, text=True).stdout


def solve_config(tmp, cfg, args):
    """Generates an instance from a generator configuration and solves its MILP; returns the
    instance info, the MILP report and the wall-clock seconds."""
    cfg_file = os.path.join(tmp, "cfg.json")
    inst = os.path.join(tmp, "inst.json")
    with open(cfg_file, "w") as f:
        json.dump(cfg, f)
    run("generate", "slimcaching", "--config", cfg_file, "--seed", str(args.seed), "-o", inst)
    out = json.loads(run("solve", inst, "--method", "milp", "--time-limit", str(args.time_limit), "--json"))
    return out["instance"], out["result"]["exact"], out["result"]["runtime_s"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--servers", type=int, nargs="+", default=[2, 4])
    p.add_argument("--experts-per-layer", type=int, nargs="+", default=[4, 8, 12, 16, 24, 32])
    p.add_argument("--paper-models", type=int, nargs="*", default=[],
                   help="instead of the synthetic sweep: the paper preset (20 users) with the "
                        "first M models of its library, for each M given")
    args = p.parse_args()
    if args.paper_models:
        return paper_sweep(args)
    base = json.loads(run("generate", "slimcaching", "--preset", "small", "--print-config"))
    print(f"{'servers':>7} {'experts':>7} {'N x E':>6} {'K':>3} {'status':>10} {'seconds':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.servers:
            for e in args.experts_per_layer:
                cfg = json.loads(json.dumps(base))
                cfg["name"] = f"scale-n{n}-e{e}"
                cfg["servers"] = {"min": n, "max": n}
                cfg["users"] = {"min": 10, "max": 10}
                cfg["storage"] = {"library_fraction": {"min": 0.2, "max": 0.2}}
                lib = cfg["library"]["synthetic"]
                lib["layers"] = {"min": 4, "max": 4}
                lib["experts_per_layer"] = {"min": e, "max": e}
                info, exact, seconds = solve_config(tmp, cfg, args)
                print(f"{n:>7} {info['experts']:>7} {n * info['experts']:>6} {info['max_top_k']:>3} "
                      f"{exact['status']:>10} {seconds:>8.2f}", flush=True)


def paper_sweep(args):
    base = json.loads(run("generate", "slimcaching", "--preset", "paper", "--print-config"))
    print(f"{'servers':>7} {'models':>6} {'experts':>7} {'N x E':>6} {'K':>3} {'status':>10} {'gap':>8} {'seconds':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.servers:
            for m in args.paper_models:
                cfg = json.loads(json.dumps(base))
                cfg["name"] = f"paper-n{n}-m{m}"
                cfg["servers"] = {"min": n, "max": n}
                cfg["library"] = {"paper": {"models": m}}
                cfg["models_per_user"] = {"min": min(3, m), "max": min(5, m)}
                info, exact, seconds = solve_config(tmp, cfg, args)
                gap = "-" if exact["gap"] is None else f"{exact['gap']:.2%}"
                print(f"{n:>7} {m:>6} {info['experts']:>7} {n * info['experts']:>6} {info['max_top_k']:>3} "
                      f"{exact['status']:>10} {gap:>8} {seconds:>8.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
