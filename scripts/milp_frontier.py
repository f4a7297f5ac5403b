#!/usr/bin/env python3
"""The largest instance each exact model proves optimal within a time limit, per problem.

For every problem a ladder of generated instances of growing size (each rung from a preset's
generator configuration with one size changed) is solved by `moe-opt solve --method M
--time-limit T --json`; a ladder stops at its first rung not proved optimal. Then the papers'
own instances are solved once each and their status, gap and time reported. One row per solve:

    problem, ladder, rung, size, status, gap, seconds

Run through the project environment (the dev profile optimises HiGHS as release does):

    ./dev cargo build && python3 scripts/milp_frontier.py [--time-limit 60] [--only zipmoe ...]

`--csv FILE` also writes the rows as CSV. Seconds are the wall clock of the whole command
(reading, building the model, solving), on whatever else the machine runs at the time.
"""
import argparse
import csv
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("MOE_OPT_BIN", os.path.join(ROOT, "target", "debug", "moe-opt"))
DATA = os.environ.get("MOE_OPT_DATA", os.path.join(ROOT, "..", "shared", "data"))


def run(*args):
    return subprocess.run([BIN, *args], check=True, capture_output=True, text=True).stdout


def config(problem, preset):
    return json.loads(run("generate", problem, "--preset", preset, "--print-config"))


def generate(tmp, problem, cfg, seed, name):
    cfg_file = os.path.join(tmp, f"{name}.cfg.json")
    inst = os.path.join(tmp, f"{name}.json")
    with open(cfg_file, "w") as f:
        json.dump(cfg, f)
    run("generate", problem, "--config", cfg_file, "--seed", str(seed), "-o", inst)
    return inst


def solve(inst, method, limit):
    """Status, relative gap and wall seconds of one MILP solve (`refused` when moe-opt refuses
    the instance as too large for the exact model)."""
    start = time.monotonic()
    done = subprocess.run([BIN, "solve", inst, "--method", method, "--time-limit", str(limit),
                           "--json"], capture_output=True, text=True)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        return "refused", None, seconds, done.stderr.strip().splitlines()[-1:]
    report = json.loads(done.stdout)
    if "result" not in report:  # smoe: a report per (routing, split) method
        return report["methods"][0]["routing_status"], None, seconds, []
    # Most problems report the solver under `exact`; cache-offline in the result itself.
    exact = report["result"].get("exact") or report["result"]
    return exact.get("status", "?"), exact.get("gap"), seconds, []


def ladder(rows, args, problem, name, method, rungs):
    """Solves `rungs` (size label, instance path thunk) in order until one is not proved."""
    for label, make in rungs:
        status, gap, seconds, why = solve(make(), method, args.time_limit)
        rows.append([problem, name, method, label, status, gap, round(seconds, 2), " ".join(why)])
        print_row(rows[-1])
        if status != "optimal":
            break


def once(rows, args, problem, name, method, label, inst):
    status, gap, seconds, why = solve(inst, method, args.time_limit)
    rows.append([problem, name, method, label, status, gap, round(seconds, 2), " ".join(why)])
    print_row(rows[-1])


def print_row(r):
    gap = "-" if r[5] is None else f"{100 * r[5]:.2f} %"
    print(f"{r[0]:<13} {r[1]:<26} {r[2]:<16} {r[3]:<34} {r[4]:<11} {gap:>9} {r[6]:>8.1f} s {r[7]}",
          flush=True)


def slimcaching(rows, args, tmp):
    """The paper preset (20 users, Sec. VI-A) on N servers with the first M models of its
    library (the first three are Switch's, Top-1; then Top-2 and Top-4 models); then the whole
    preset (4 servers, 18 models)."""
    base = config("slimcaching", "paper")
    def rung(n, m):
        cfg = json.loads(json.dumps(base))
        cfg["servers"] = {"min": n, "max": n}
        cfg["library"] = {"paper": {"models": m}}
        cfg["models_per_user"] = {"min": min(3, m), "max": min(5, m)}
        return lambda: generate(tmp, "slimcaching", cfg, args.seed, f"slim-n{n}-m{m}")
    for n in (1, 2, 4):
        ladder(rows, args, "slimcaching", f"{n} servers, first M models", "milp",
               [(f"N = {n}, M = {m}", rung(n, m)) for m in (3, 4, 6, 9, 12, 18)])
    inst = os.path.join(tmp, "slim-paper.json")
    run("generate", "slimcaching", "--preset", "paper", "--seed", str(args.seed), "-o", inst)
    once(rows, args, "slimcaching", "paper preset", "milp", "4 servers, 20 users, 18 models", inst)


def prism(rows, args, tmp):
    """DeepSeek-V2-Lite's shape (26 x 64, top-6) on N servers of 2 GPUs; then both testbeds."""
    base = config("prism", "testbed-deepseek")
    def rung(n):
        cfg = json.loads(json.dumps(base))
        cfg["servers"] = {"random": {"servers": {"min": n, "max": n},
                                     "gpus_per_server": {"min": 2, "max": 2}}}
        return lambda: generate(tmp, "prism", cfg, args.seed, f"prism-n{n}")
    ladder(rows, args, "prism", "DeepSeek shape, 2 GPUs/server", "milp",
           [(f"{n} servers, {2 * n} GPUs", rung(n)) for n in (2, 8, 32, 64, 128, 256)])
    for preset in ("testbed-mixtral", "testbed-deepseek"):
        inst = os.path.join(tmp, f"{preset}.json")
        run("generate", "prism", "--preset", preset, "--seed", str(args.seed), "-o", inst)
        once(rows, args, "prism", "paper testbed", "milp", preset, inst)


def zipmoe(rows, args, tmp):
    """The small preset's layer (1 tensor of 2 shards an expert, L = 2 threads, random cache
    states) with E experts, all selected (top-E, one token); then the three device presets'
    real layers (Qwen1.5-MoE, DeepSeek-V2-Lite, Switch on the Orin, batch 16)."""
    base = config("zipmoe", "small")
    def rung(e):
        cfg = json.loads(json.dumps(base))
        cfg["layer_experts"] = e
        cfg["top_k"] = e
        cfg["batch_tokens"] = {"min": 1, "max": 1}
        return lambda: generate(tmp, "zipmoe", cfg, args.seed, f"zip-e{e}")
    for method in ("milp", "branch-and-bound"):
        ladder(rows, args, "zipmoe", "small preset, E experts", method,
               [(f"E = {e}", rung(e)) for e in (2, 4, 6, 8, 12, 16, 24, 32, 48, 64)])
    for preset in ("qwen-orin", "deepseek-orin", "switch-orin"):
        inst = os.path.join(tmp, f"{preset}.json")
        run("generate", "zipmoe", "--preset", preset, "--seed", str(args.seed), "-o", inst)
        for method in ("milp", "branch-and-bound"):
            once(rows, args, "zipmoe", "paper device preset", method, preset, inst)


def cache(rows, args, tmp):
    """One layer of a generated OLMoE trace (E = 64, K = 8) at C = 32, T tokens; then the first
    layer of the real OLMoE log (299 tokens) when the shared data are present."""
    base = config("cache-trace", "olmoe")
    base["layers"] = 1
    base["tokens_per_sequence"] = 6400
    trace = generate(tmp, "cache-trace", base, args.seed, "olmoe-trace")
    def rung(t, extra=()):
        def make():
            out = os.path.join(tmp, f"offline-{t}.json")
            run("offline", trace, "--capacity", "32", "--tokens", str(t), *extra, "-o", out)
            return out
        return make
    for method in ("milp-fixed", "milp-flexible"):
        ladder(rows, args, "cache-offline", "generated OLMoE, C = 32", method,
               [(f"T = {t} tokens", rung(t)) for t in (200, 400, 800, 1600, 3200, 6400)])
    logs = sorted(glob.glob(os.path.join(DATA, "token-traces", "*olmoe*")))
    if not logs:
        print(f"no OLMoE log under {DATA}/token-traces: the real layer is skipped", file=sys.stderr)
        return
    out = os.path.join(tmp, "offline-olmoe-log.json")
    # The log holds no router ranks: the flexible model may choose any K experts (top-J = 0).
    run("offline", logs[0], "--capacity", "32", "--layer", "0", "--top-j", "0", "-o", out)
    for method in ("milp-fixed", "milp-flexible"):
        once(rows, args, "cache-offline", "real OLMoE log, layer 0", method,
             os.path.basename(logs[0]), out)


def smoe(rows, args, tmp):
    """The qwen2-57b preset's layer: the routing MILP of (1)."""
    inst = os.path.join(tmp, "smoe.json")
    run("generate", "smoe", "--preset", "qwen2-57b", "--seed", str(args.seed), "-o", inst)
    once(rows, args, "smoe", "paper preset", "milp", "qwen2-57b", inst)


PROBLEMS = {"slimcaching": slimcaching, "prism": prism, "zipmoe": zipmoe, "cache": cache,
            "smoe": smoe}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--only", nargs="+", choices=sorted(PROBLEMS), default=list(PROBLEMS))
    p.add_argument("--csv", help="also write the rows to this CSV file")
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only:
            PROBLEMS[name](rows, args, tmp)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["problem", "ladder", "method", "rung", "status", "gap", "seconds", "note"])
            w.writerows(rows)


if __name__ == "__main__":
    main()
