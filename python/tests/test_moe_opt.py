"""The Python package against the command line: the same tables, the same JSON, the same
errors; EPLB against the reference's published example. Run by `./dev test` (pytest in the
notebooks' venv); the binary is the shared build's target/debug/moe-opt."""

import json
import os
import re
import subprocess
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import moe_opt
from moe_opt import _native

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "target" / "debug" / "moe-opt"
INSTANCES = ROOT / "instances"


def cli(*args):
    """The command line itself, as a subprocess: the independent side of every comparison."""
    done = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_version_is_the_workspace_version():
    cargo = (ROOT / "Cargo.toml").read_text()
    version = re.search(r'\[workspace\.package\]\nversion = "([^"]+)"', cargo).group(1)
    assert moe_opt.__version__ == version


def test_compare_gives_the_cli_json_and_csv(tmp_path):
    instance = INSTANCES / "prism-tiny-1.json"
    result = moe_opt.compare(instance, methods=["milp", "prism", "uniform"])
    csv = tmp_path / "compare.csv"
    printed = cli("compare", instance, "--methods", "milp,prism,uniform", "--json", "--csv", csv)
    expected_table = pd.read_csv(csv)
    expected_json = json.loads(printed)
    # The same columns in the same order, one row per method, the same values but the
    # wall-clock times.
    assert list(result.table.columns) == list(expected_table.columns)
    timing = [c for c in expected_table.columns if c.endswith(("runtime_s", "time_s"))]
    pd.testing.assert_frame_equal(result.table.drop(columns=timing),
                                  expected_table.drop(columns=timing))
    assert list(result.table["method"]) == ["milp", "prism", "uniform"]
    assert result.json["instance"]["sha256"] == expected_json["instance"]["sha256"]
    assert result.json["reference"] == expected_json["reference"]
    assert result.args[:2] == ["compare", str(instance)]


def test_solve_takes_an_instance_as_a_dict():
    data = json.loads((INSTANCES / "prism-tiny-1.json").read_text())
    from_dict = moe_opt.solve(data, method="uniform")
    from_file = moe_opt.solve(INSTANCES / "prism-tiny-1.json", method="uniform")
    # Whitespace and key order do not change the instance's hash (canonical JSON).
    assert from_dict.json["instance"]["sha256"] == from_file.json["instance"]["sha256"]
    assert from_dict.table.equals(from_file.table)
    assert len(from_dict.table) > 0


def test_generate_writes_the_cli_bytes(tmp_path, capsys):
    ours = moe_opt.generate("slimcaching", tmp_path / "ours.json", preset="tiny", seed=7)
    # The command's note reaches Python's stderr (Jupyter shows it under the cell).
    assert f"wrote {tmp_path / 'ours.json'}" in capsys.readouterr().err
    cli("generate", "slimcaching", "--preset", "tiny", "--seed", "7", "-o", tmp_path / "cli.json")
    assert ours.path.read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert ours.data == json.loads((tmp_path / "cli.json").read_text())
    # Without a path: a temporary file, the same instance.
    again = moe_opt.generate("slimcaching", preset="tiny", seed=7)
    assert again.data == ours.data


def test_family_checks_each_listed_x_against_its_closed_form(tmp_path):
    # prop3-size-ratio's closed form is 2/X (proved in src/slimcaching/parametric.rs): 2/4 at X = 4.
    d = moe_opt.family("slimcaching", "prop3-size-ratio", tmp_path)
    assert list(d.columns) == ["x", "measured", "expected", "claimed", "limit", "outcome", "tier"]
    assert d.x.iloc[0] == 4 and d.expected.iloc[0] == 0.5
    assert np.allclose(d.measured, 2 / d.x, rtol=1e-9, atol=0)
    assert (d.outcome == "fail").all() and (d.tier != "extension").all()
    assert sorted(p.name for p in tmp_path.iterdir())[0].startswith("prop3-size-ratio-")
    with pytest.raises(ValueError, match="no family"):
        moe_opt.family("slimcaching", "nope")


def test_import_takes_counts_as_a_numpy_array(tmp_path):
    rng = np.random.default_rng(0)
    counts = np.zeros((3, 2, 8), dtype=np.int64)  # [prompt, layer, expert], 40 tokens of top-2
    for p in range(3):
        for l in range(2):
            for _ in range(40):
                counts[p, l, rng.choice(8, 2, replace=False)] += 1
    ours = moe_opt.import_instance("zipmoe", tmp_path / "ours.json", counts=counts, top_k=2,
                                   model="DeepSeek")
    np.save(tmp_path / "c.npy", counts)
    cli("import", "zipmoe", "--counts", tmp_path / "c.npy", "--top-k", 2, "--model", "DeepSeek",
        "-o", tmp_path / "cli.json")
    assert ours.path.read_bytes() == (tmp_path / "cli.json").read_bytes()


def test_bad_input_raises_with_the_cli_message_and_code(tmp_path):
    missing = tmp_path / "absent.json"
    with pytest.raises(moe_opt.MoeOptError) as e:
        moe_opt.solve(missing)
    message, code = e.value.args
    assert code == 2
    assert "absent.json" in message
    with pytest.raises(moe_opt.MoeOptError) as e:
        moe_opt.compare(INSTANCES / "prism-tiny-1.json", no_such_flag=1)
    assert e.value.args[1] == 2 and "--no-such-flag" in e.value.args[0]
    with pytest.raises(moe_opt.MoeOptError) as e:
        moe_opt.solve(INSTANCES / "prism-tiny-1.json", method="no-such-method")
    assert e.value.args[1] == 2 and "no-such-method" in e.value.args[0]


def test_help_and_csv_commands_agree_with_the_cli():
    assert "--capacity" in moe_opt.run("replay", "--help")
    # Every command the package asks for a table takes --csv, and every one that takes --csv
    # is asked (the tables are never lost).
    top = cli("--help")
    commands = [c for c in re.findall(r"^  ([a-z][a-z-]+)\s", top, flags=re.M) if c != "help"]
    with_csv = {c for c in commands if re.search(r"^\s+--csv <", cli(c, "--help"), flags=re.M)}
    assert with_csv == {"solve", "compare", "claims", "eplb", "migrate", "plan", "replay", "mrc",
                        "route", "pareto", "tpot", "redundancy", "migration-front"}
    for name in with_csv - {"eplb"}:
        assert callable(getattr(moe_opt, name.replace("-", "_")))


def test_claims_table_lists_every_registered_claim():
    result = moe_opt.claims()
    ids = [c["id"] for c in json.loads(cli("claims", "--json"))]
    assert list(result.table["id"]) == ids
    assert len(ids) > 20


def test_verify_reads_the_output_folder(tmp_path):
    claim = "prism/alg2-coverage"
    if claim not in moe_opt.claims().table["id"].tolist():
        claim = moe_opt.claims().table["id"].iloc[0]
    result = moe_opt.verify(tmp_path / "v", claim=claim, instances=3, search=0, jobs=1)
    assert result.out == tmp_path / "v"
    assert set(result.tables) >= {"claims", "instances"}
    assert result.table is result.tables["claims"]
    assert list(result.table["claim"] if "claim" in result.table else result.table["id"]) == [claim]
    instances = result.tables["instances"]
    # 3 generated instances, no search: 3 rows, indices 0, 1, 2.
    assert len(instances) == 3
    on_disk = pd.read_csv(tmp_path / "v" / "instances.csv")
    pd.testing.assert_frame_equal(instances, on_disk)


def test_report_of_a_verify_folder(tmp_path):
    run = moe_opt.verify(tmp_path / "v", claim="zipmoe/thm31-ratio", instances=5, search=0, jobs=1)
    page = moe_opt.report(run.out)
    # The command's own default path, and the command's page byte for byte.
    assert page == tmp_path / "v" / "report.html"
    cli("report", run.out, "-o", tmp_path / "cli.html")
    assert page.read_bytes() == (tmp_path / "cli.html").read_bytes()
    # One ratio claim checked: its section and its one figure.
    text = page.read_text()
    assert "zipmoe/thm31-ratio" in text and text.count("<svg") == 1


def test_sweep_has_a_row_per_cell_and_method(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'problem = "prism"\npreset = "tiny"\nseeds = 2\nmethods = ["milp", "uniform"]\n'
        'time_limit_s = 20\n\n[[axes]]\npath = "memory.model_fraction"\nvalues = [0.3, 0.45]\n'
    )
    result = moe_opt.sweep(spec, tmp_path / "out", jobs=1)
    # 2 values x 2 seeds cells, 2 methods each.
    assert len(result.table) == 2 * 2 * 2
    assert sorted(set(result.table["method"])) == ["milp", "uniform"]
    # The MILP is every cell's proved optimum: ratio 1 (none where the optimum is 0).
    milp = result.table[result.table["method"] == "milp"]
    assert (milp["objective"] == milp["reference"]).all()
    assert (milp["ratio"].dropna() == 1).all()
    assert milp["ratio"].isna().tolist() == (milp["reference"] == 0).tolist()
    pd.testing.assert_frame_equal(result.table, pd.read_csv(tmp_path / "out" / "results.csv"))


def test_trace_commands(tmp_path):
    trace = moe_opt.generate("cache-trace", tmp_path / "t.json", preset="olmoe", seed=1)
    curve = moe_opt.mrc(trace, policies=["lru", "belady"])
    assert {"policy", "capacity", "layer", "loads"} <= set(curve.table.columns)
    # The curve at capacity 8 equals replay's loads at capacity 8, layer by layer (one pass
    # against one run).
    one = moe_opt.replay(trace, capacity=8)
    lru = curve.table[(curve.table["policy"] == "lru") & (curve.table["capacity"] == 8)]
    replayed = one.table[one.table["policy"] == "lru"]
    assert lru["loads"].tolist() == replayed["loads"].tolist()
    assert len(replayed) > 1


def test_progress_is_polled_while_a_run_goes(monkeypatch, tmp_path):
    seen = []

    class Bar:
        def __init__(self, what, total):
            seen.append((what, total))
            self.n = 0

        def refresh(self):
            seen.append(("at", self.n))

        def close(self):
            pass

    monkeypatch.setattr(moe_opt, "_bar", Bar)
    # About a second of MILPs: the poller (every 0.1 s) sees the run.
    moe_opt.verify(tmp_path / "v", claim="prism/alg12-milp-gap", instances=150, search=0, jobs=1)
    assert ("generated instances", 150) in seen
    positions = [n for what, n in seen if what == "at"]
    assert positions == sorted(positions) and all(0 <= n <= 150 for n in positions)
    # Nothing in progress once the run is over.
    assert _native.progress() is None


def test_the_gil_is_released_while_a_command_runs(tmp_path):
    # This thread runs Python while the command (about a second of MILPs) runs on another.
    worker = threading.Thread(target=_native.cli, args=(
        ["verify", "--claim", "prism/alg12-milp-gap", "--instances", "150", "--search", "0",
         "--jobs", "1", "--out", str(tmp_path / "v")],))
    worker.start()
    # Held through the command, the GIL would let this loop see only the time before the
    # command and after it, when no run is in progress.
    seen_running = False
    while worker.is_alive() and not seen_running:
        seen_running = _native.progress() is not None
    worker.join()
    assert seen_running


# --- EPLB ----------------------------------------------------------------------------------------

# The example of DeepSeek's EPLB README ("Interface and Example"): its weights, arguments and
# printed phy2log.
WEIGHT = [[90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86],
          [20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27]]
PHY2LOG = [[5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1, 11, 1],
           [7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0, 3, 1]]


def test_eplb_reproduces_the_reference_example():
    phy2log, log2phy, logcnt = moe_opt.eplb(np.array(WEIGHT), 16, 4, 2, 8)
    assert phy2log.dtype == log2phy.dtype == logcnt.dtype == np.int64
    assert phy2log.tolist() == PHY2LOG
    # logcnt: how often phy2log lists each expert.
    expected_cnt = [[row.count(e) for e in range(12)] for row in PHY2LOG]
    assert logcnt.tolist() == expected_cnt
    # log2phy: [layers, experts, max replicas], each expert's slots in rank order, -1 after.
    width = max(max(r) for r in expected_cnt)
    assert log2phy.shape == (2, 12, width)
    for l in range(2):
        for e in range(12):
            slots = [int(p) for p in log2phy[l, e] if p != -1]
            assert sorted(slots) == [p for p in range(16) if PHY2LOG[l][p] == e]
            assert list(log2phy[l, e, len(slots):]) == [-1] * (width - len(slots))


def test_eplb_accepts_lists_and_other_dtypes():
    as_list = moe_opt.eplb(WEIGHT, 16, 4, 2, 8)
    as_f32 = moe_opt.eplb(np.array(WEIGHT, dtype=np.float32), 16, 4, 2, 8)
    transposed = moe_opt.eplb(np.array(WEIGHT, dtype=np.float64).T.copy().T, 16, 4, 2, 8)
    for a, b, c in zip(as_list, as_f32, transposed):
        assert np.array_equal(a, b) and np.array_equal(a, c)


def test_eplb_refuses_bad_weights():
    with pytest.raises(ValueError, match="2-D"):
        moe_opt.eplb(np.ones(12), 16, 4, 2, 8)
    bad = np.array(WEIGHT, dtype=np.float64)
    bad[0, 1] = -2
    with pytest.raises(ValueError, match=r"weight\[0\]\[1\]"):
        moe_opt.eplb(bad, 16, 4, 2, 8)
    with pytest.raises(ValueError, match="replicas"):
        moe_opt.eplb(np.array(WEIGHT), 15, 4, 2, 8)


def test_eplb_with_torch():
    torch = pytest.importorskip("torch")
    weight = torch.tensor(WEIGHT, dtype=torch.float64)
    phy2log, log2phy, logcnt = moe_opt.eplb(weight, 16, 4, 2, 8)
    assert isinstance(phy2log, torch.Tensor) and phy2log.tolist() == PHY2LOG


def test_notebook_spec_reads_back_as_written(tmp_path):
    import tomllib

    from moe_opt.notebook import write_spec

    spec = {
        "problem": "zipmoe",
        "seeds": 2,
        "record_runtime": False,
        "methods": ["milp", "cache-affinity"],
        "time_limit_s": 2.5,
        "axes": [{"path": "threads", "values": [1, 2]}, {"path": "name", "values": ["a \"b\""]}],
    }
    write_spec(spec, tmp_path / "spec.toml")
    assert tomllib.loads((tmp_path / "spec.toml").read_text()) == spec


def test_notebook_folders_run_and_save(monkeypatch, tmp_path, capsys):
    from moe_opt import notebook

    # A repository of its own: a Cargo.toml beside a notebooks folder.
    (tmp_path / "Cargo.toml").write_text("")
    (tmp_path / "notebooks" / "sub").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "notebooks" / "sub")
    nb = notebook.Notebook("nb", small=True)
    # Found from a subfolder, and made the working folder.
    assert (nb.root, Path.cwd()) == (tmp_path, tmp_path)
    assert nb.out == tmp_path / "notebooks" / "out" / "nb" / "small" and nb.out.is_dir()
    assert nb.figures == tmp_path / "notebooks" / "out" / "figures"
    assert notebook.Notebook("nb", small=False).out == tmp_path / "notebooks" / "out" / "nb" / "full"
    (nb.out / "stale").write_text("x")
    assert not (notebook.Notebook("nb", small=True, clean=True).out / "stale").exists()
    # The command line printed with paths relative to the root; its output, parsed.
    instance = INSTANCES / "zipmoe-tiny-1.json"
    report = nb.run_json(nb.out / "solve.json", "solve", instance, "--method", "fifo")
    relative = os.path.relpath(instance, tmp_path)
    assert f"$ moe-opt solve {relative} --method fifo --json" in capsys.readouterr().out
    expected = json.loads(cli("solve", instance, "--method", "fifo", "--json"))
    for r in (report, expected):
        r["result"].pop("runtime_s")  # the one field that differs run to run
    assert report == expected

    class Figure:
        def savefig(self, path, **options):
            self.saved = (path, options["metadata"])

    fig = Figure()
    assert nb.save(fig, "x.png") == nb.figures / "x.png"
    assert fig.saved == (nb.figures / "x.png", {"Software": None})
    with pytest.raises(moe_opt.MoeOptError):
        nb.run("solve", "no-such-file.json")


# The FlashLB example of issue 31 (loads 600, 560, 120, 120, 20, 10, 10, 10; 16 slots on 8 GPUs):
# its optimum, 590 / 3 on the busiest GPU, was derived by an independent exhaustive search in
# exact rational arithmetic (every count vector, every pairing of the replicas onto GPUs); EPLB's
# plan carries 232.
FLASHLB = [[600, 560, 120, 120, 20, 10, 10, 10]]


def _busiest(phy2log, logcnt, weight, gpus):
    loads = [0.0] * gpus
    per = len(phy2log) // gpus
    for slot, e in enumerate(phy2log):
        loads[slot // per] += weight[e] / logcnt[e]
    return max(loads)


def test_eplb_exact_returns_tensors_whose_loads_give_the_optimum():
    phy2log, log2phy, logcnt, info = moe_opt.eplb(FLASHLB, 16, 1, 1, 8, method="exact",
                                                  time_limit=60)
    assert info["status"] == "optimal" and info["layers"][0]["status"] == "optimal"
    busiest = _busiest(phy2log[0].tolist(), logcnt[0].tolist(), FLASHLB[0], 8)
    assert abs(busiest - 590 / 3) < 1e-9 and abs(info["objective"] - 590 / 3) < 1e-9
    assert abs(info["best_bound"] - 590 / 3) < 1e-9
    # The three tensors agree with each other, as EPLB's do.
    assert logcnt[0].tolist() == [phy2log[0].tolist().count(e) for e in range(8)]
    for e in range(8):
        slots = [int(p) for p in log2phy[0, e] if p != -1]
        assert sorted(slots) == [p for p in range(16) if phy2log[0, p] == e]
    # EPLB's own (the default, three outputs, unchanged): 232.
    p, _, c = moe_opt.eplb(FLASHLB, 16, 1, 1, 8)
    assert _busiest(p[0].tolist(), c[0].tolist(), FLASHLB[0], 8) == 232
    with pytest.raises(ValueError, match="method"):
        moe_opt.eplb(FLASHLB, 16, 1, 1, 8, method="best")
    with pytest.raises(ValueError, match="time_limit"):
        moe_opt.eplb(FLASHLB, 16, 1, 1, 8, time_limit=5)


def test_migration_front_is_the_exhaustive_front():
    # Loads 10, 7, 4, 2, 1 on 8 slots and 4 GPUs from [0 1 | 0 2 | 1 3 | 4 0]: an exhaustive
    # search over all 5^8 plans in exact rationals (outside moe-opt) gives OPT(0) = 22/3,
    # OPT(1) = 7 and OPT(B >= 2) = 41/6 (tests/balance.rs holds the same numbers).
    instance = {"problem": "balance", "name": "front", "loads": [[10, 7, 4, 2, 1]],
                "num_replicas": 8, "num_gpus": 4, "num_nodes": 1, "num_groups": 1,
                "current": [[0, 1, 0, 2, 1, 3, 4, 0]]}
    result = moe_opt.migration_front(instance)
    front = [(p["budget"], p["max_load"]) for p in result.json["layers"][0]["front"]]
    assert [b for b, _ in front] == [0, 1, 2]
    assert [v for _, v in front] == pytest.approx([22 / 3, 7, 41 / 6], rel=1e-9)
    assert list(result.table.budget) == [0, 1, 2]
