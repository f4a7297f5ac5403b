#!/usr/bin/env python3
"""EPLB against the optimum on the real activation counts, at the shapes serving uses.

For every count file of ../shared/data/activation-counts (summed over its prompts by `moe-opt
import balance`), every GPU count (8, 16, 32), every number of redundant slots per GPU (0, 1,
2) and, where EPLB's groups divide over 2 nodes, the hierarchical option (4 groups, 2 nodes):
`moe-opt solve --method milp --time-limit T --json` (the exact method, T seconds per layer) and
`--method eplb` (EPLB's own policy). One row per model and shape:

    model (the count file's stem), gpus, slots, extra_per_gpu, hierarchical, layers, proved, within_0_1pct,
    eplb_balancedness, eplb_min_layer, best_balancedness, best_min_layer, upper_balancedness,
    eplb_excess, eplb_excess_over_bound, worst_layer_gap, seconds

Balancedness over layers is a step's (sum of the layers' means / sum of their busiest GPUs);
`upper_balancedness` uses the proved bounds (no plan does better); `eplb_excess` is EPLB's sum
of maxima over the best plan's, minus 1, and `eplb_excess_over_bound` the same over the bound
(an upper estimate of EPLB's true excess: the true excess lies between the two).

Rows are appended to the CSV as each shape finishes, and a rerun skips the shapes already in
it (resume after an interruption). `--markdown` prints the table from the CSV. `--gap 0.001`
stops each layer within 0.1 % of its bound (the issue's 60 s criterion).

    ./dev cargo build && python3 scripts/balance_tables.py --time-limit 60 --csv balance-real.csv
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("MOE_OPT_BIN", os.path.join(ROOT, "target", "debug", "moe-opt"))
DATA = os.environ.get("MOE_OPT_DATA", os.path.join(ROOT, "..", "shared", "data"))
MODELS = ["deepseek", "qwen", "switch"]
NAMES = {"deepseek": "DeepSeek-V2-Lite", "qwen": "Qwen1.5-MoE-A2.7B", "switch": "switch-large-128"}
FIELDS = ["model", "gpus", "slots", "extra_per_gpu", "hierarchical", "layers", "proved",
          "within_0_1pct", "eplb_balancedness", "eplb_min_layer", "best_balancedness",
          "best_min_layer", "upper_balancedness", "eplb_excess", "eplb_excess_over_bound",
          "worst_layer_gap", "seconds"]


def run(*args):
    return subprocess.run([BIN, *args], check=True, capture_output=True, text=True).stdout


def shapes():
    for gpus in (8, 16, 32):
        for extra in (0, 1, 2):
            yield gpus, extra, False
            yield gpus, extra, True


def one(model, gpus, extra, hierarchical, time_limit, work, gap=None):
    counts = os.path.join(DATA, "activation-counts", f"{model}.json.gz")
    deployment = {"gpus": gpus, "extra_per_gpu": extra, "nodes": 2 if hierarchical else 1,
                  "groups": 4 if hierarchical else 1, "hierarchical": hierarchical}
    config = os.path.join(work, "config.json")
    with open(config, "w") as f:
        json.dump(deployment, f)
    instance = os.path.join(work, "instance.json")
    run("import", "balance", "--counts", counts, "--config", config, "-o", instance)
    began = time.time()
    stop = ["--gap", str(gap)] if gap is not None else []
    best = json.loads(run("solve", instance, "--method", "milp", "--time-limit", str(time_limit),
                          *stop, "--json"))
    seconds = time.time() - began
    eplb = json.loads(run("solve", instance, "--method", "eplb", "--json"))
    layers = best["layers"]
    means = sum(l["mean_load"] for l in layers)
    best_sum = sum(l["max_load"] for l in layers)
    bound_sum = sum(l["exact"]["bound"] for l in layers)
    eplb_sum = sum(l["max_load"] for l in eplb["layers"])
    return {
        "model": model,
        "gpus": gpus,
        "slots": best["instance"]["slots"],
        "extra_per_gpu": extra,
        "hierarchical": hierarchical,
        "layers": len(layers),
        "proved": sum(l["exact"]["status"] == "optimal" for l in layers),
        "within_0_1pct": sum(l["exact"]["gap"] <= 1e-3 for l in layers),
        "eplb_balancedness": means / eplb_sum,
        "eplb_min_layer": min(l["balancedness"] for l in eplb["layers"]),
        "best_balancedness": means / best_sum,
        "best_min_layer": min(l["balancedness"] for l in layers),
        "upper_balancedness": means / bound_sum,
        "eplb_excess": eplb_sum / best_sum - 1,
        "eplb_excess_over_bound": eplb_sum / bound_sum - 1,
        "worst_layer_gap": max(l["exact"]["gap"] for l in layers),
        "seconds": round(seconds, 1),
    }


def markdown(path):
    rows = list(csv.DictReader(open(path)))
    print("| model | GPUs | slots | hierarchical | EPLB | best found | no plan above | EPLB's excess "
          "| layers proved (within 0.1 %) | s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        f = lambda k: float(r[k])
        print(f"| {NAMES[r['model']]} | {r['gpus']} | {r['slots']} | {'yes' if r['hierarchical'] == 'True' else 'no'} "
              f"| {f('eplb_balancedness'):.4f} | {f('best_balancedness'):.4f} "
              f"| {f('upper_balancedness'):.4f} "
              f"| {100 * f('eplb_excess'):.2f} .. {100 * f('eplb_excess_over_bound'):.2f} % "
              f"| {r['proved']} ({r['within_0_1pct']}) of {r['layers']} | {f('seconds'):.0f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--gap", type=float, help="stop a layer within this gap (solve's --gap)")
    parser.add_argument("--csv", default="balance-real.csv")
    parser.add_argument("--only", nargs="*", default=MODELS)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if args.markdown:
        markdown(args.csv)
        return
    done = set()
    if os.path.exists(args.csv):
        for r in csv.DictReader(open(args.csv)):
            done.add((r["model"], r["gpus"], r["extra_per_gpu"], r["hierarchical"]))
    new = not os.path.exists(args.csv)
    with open(args.csv, "a", newline="") as out, tempfile.TemporaryDirectory() as work:
        writer = csv.DictWriter(out, FIELDS)
        if new:
            writer.writeheader()
        for model in args.only:
            for gpus, extra, hierarchical in shapes():
                if (model, str(gpus), str(extra), str(hierarchical)) in done:
                    continue
                try:
                    row = one(model, gpus, extra, hierarchical, args.time_limit, work, args.gap)
                except subprocess.CalledProcessError as e:
                    print(f"{model} {gpus} GPUs +{extra} hierarchical={hierarchical}: "
                          f"{e.stderr.strip()}", file=sys.stderr)
                    continue
                writer.writerow(row)
                out.flush()
                print(f"{row['model']} {gpus} GPUs, {row['slots']} slots, hierarchical "
                      f"{hierarchical}: EPLB {row['eplb_balancedness']:.4f}, best "
                      f"{row['best_balancedness']:.4f} (<= {row['upper_balancedness']:.4f}), "
                      f"{row['proved']} of {row['layers']} proved, {row['seconds']} s",
                      file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
