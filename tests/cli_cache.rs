//! The command line on expert caches over token streams (papers 002 and 004): the offline
//! bounds beside the routers (`offline`, `compare --methods` with routers), the Pareto sweep's
//! tables (`pareto --csv`), eq. (5)'s alpha selection (`tpot --alphas --csv`) and libCacheSim's
//! formats (`export`, `import cache-trace --libcachesim`), end to end.

mod common;

use common::{csv_records, csv_table, moe_opt, ok, refused, scratch, shared_data, trace};

#[test]
fn compare_puts_the_routers_beside_belady_and_both_exact_bounds() {
    let dir = scratch("compare");
    let trace = trace(&dir, "mixtral-8x7b");
    let instance = dir.join("layer.json");
    ok(moe_opt()
        .arg("offline")
        .arg(&trace)
        .args(["--layer", "3", "--capacity", "4", "--tokens", "60"])
        .args(["--top-j", "1", "--max-rank", "4", "-o"])
        .arg(&instance));
    let csv = dir.join("compare.csv");
    // Routers with two knobs keep their commas inside the comma-separated list.
    let rows = csv_table(
        moe_opt().arg("compare").arg(&instance).args([
            "--methods",
            "milp-fixed,milp-flexible,belady,lru,max-rank:m=4,j=1,cache-prior:lambda=1,j=1",
        ]),
        &csv,
    );
    let names: Vec<&str> = rows.iter().map(|r| r["method"].as_str()).collect();
    assert_eq!(
        names,
        [
            "milp-fixed",
            "milp-flexible",
            "belady",
            "lru",
            "max-rank:m=4,j=1",
            "cache-prior:lambda=1,j=1"
        ]
    );
    let loads = |i: usize| rows[i]["loads"].parse::<u64>().unwrap();
    assert_eq!(rows[0]["proved_optimal"], "true");
    assert_eq!(rows[1]["proved_optimal"], "true");
    // Belady is the fixed-routing optimum; LRU does no better; the flexible optimum bounds
    // both and every router that stays within J = 1, M = 4.
    assert_eq!(loads(2), loads(0));
    assert!(loads(3) >= loads(2));
    assert!(loads(1) <= loads(0));
    assert_eq!(
        rows[4]["within_freedom"], "true",
        "Max-Rank(M, J) stays within"
    );
    assert!(loads(4) >= loads(1));
    assert_eq!(rows[4]["used_top_j"], "1");
    // Cache-Prior has no rank limit: its ratio to the flexible optimum is given only when
    // it stayed within the freedom.
    let prior = &rows[5];
    assert_eq!(
        prior["ratio_to_flexible_optimum"].is_empty(),
        prior["within_freedom"] == "false"
    );
    // Pruning runs fewer than K experts: refused as bad input.
    let err = refused(
        moe_opt()
            .arg("compare")
            .arg(&instance)
            .args(["--methods", "pruning:h=1"]),
    );
    assert!(err.contains("fewer than K"));
}

#[test]
fn pareto_tables_name_each_router_whole_and_carry_the_baselines() {
    let dir = scratch("pareto");
    let trace = trace(&dir, "mixtral-8x7b");
    let csv = dir.join("points.csv");
    let points = csv_table(
        moe_opt().arg("pareto").arg(&trace).args([
            "--capacities",
            "2,4",
            "--routers",
            "max-rank:m=4,j=1,cumsum:p=0.5,j=1",
        ]),
        &csv,
    );
    let routers: Vec<(&str, &str)> = points
        .iter()
        .map(|r| (r["router"].as_str(), r["capacity"].as_str()))
        .collect();
    assert_eq!(
        routers,
        [
            ("max-rank:m=4,j=1", "2"),
            ("max-rank:m=4,j=1", "4"),
            ("cumsum:p=0.5,j=1", "2"),
            ("cumsum:p=0.5,j=1", "4"),
        ]
    );
    let baselines = csv_records(&dir.join("points-baselines.csv"));
    let at = |policy: &str, c: &str| -> f64 {
        baselines
            .iter()
            .find(|r| r["policy"] == policy && r["capacity"] == c)
            .unwrap()["miss_rate"]
            .parse()
            .unwrap()
    };
    // At C = K every policy loads each step's experts alike; at C = E/2 Belady beats LRU.
    assert_eq!(at("lru", "2"), at("belady", "2"));
    assert!(at("belady", "4") < at("lru", "4"));
}

#[test]
fn tpot_fits_t_alpha_and_names_a_bad_predictor() {
    let dir = scratch("tpot");
    let trace = trace(&dir, "mixtral-8x7b");
    let csv = dir.join("tpot.csv");
    let rows = csv_table(
        moe_opt()
            .arg("tpot")
            .arg(&trace)
            .args([
                "--capacity",
                "64",
                "--alphas",
                "0,0.2,0.4",
                "--budget-s",
                "1",
            ])
            .args(["--predictor", "previous-token"]),
        &csv,
    );
    assert_eq!(rows.len(), 3);
    // alpha = 0 is the original top-k: all the router mass is kept.
    assert_eq!(rows[0]["alpha"], "0.0");
    assert_eq!(rows[0]["mass_kept"], "1.0");
    let err = refused(moe_opt().arg("tpot").arg(&trace).args([
        "--capacity",
        "64",
        "--predictor",
        "bogus",
    ]));
    assert!(
        err.contains("expected one of: oracle, previous-token"),
        "{err}"
    );
}

#[test]
fn a_real_log_replays_under_every_weight_free_policy() {
    let Some(log) = shared_data("token-traces/olmoe_1b7b_0924_warp_decode.jsonl.gz") else {
        return;
    };
    let dir = scratch("replay");
    let csv = dir.join("replay.csv");
    let totals: Vec<_> = csv_table(
        moe_opt().arg("replay").arg(&log).args(["--capacity", "32"]),
        &csv,
    )
    .into_iter()
    .filter(|r| r["layer"] == "total")
    .collect();
    let loads = |policy: &str| -> u64 {
        let r = totals.iter().find(|r| r["policy"] == policy).unwrap();
        // 299 decode tokens x K = 8 x 16 layers (the log's README).
        assert_eq!(r["requests"], "38272", "{policy}");
        r["loads"].parse().unwrap()
    };
    let belady = loads("belady");
    for policy in ["lru", "lfu", "fifo", "zipmoe-freq"] {
        assert!(loads(policy) >= belady, "{policy} beats Belady");
    }
    // SMoE's score window needs router scores, which a log of selected experts lacks.
    let err = refused(moe_opt().arg("replay").arg(&log).args([
        "--capacity",
        "32",
        "--policies",
        "smoe-window:n=4",
    ]));
    assert!(err.contains("no logits"));
}

/// `mrc --csv` on the real Switch log (E = 8, K = 1, 6 layers, 215 tokens): a row per policy,
/// capacity and layer plus a total, each total equal to `replay --capacity C`'s; a policy
/// that is not a stack algorithm is refused on the flag.
#[test]
fn mrc_writes_every_capacity_and_agrees_with_replay() {
    let Some(log) = shared_data("token-traces/switch_base8_encoder_top1.jsonl.gz") else {
        return;
    };
    let dir = scratch("mrc");
    let csv = dir.join("mrc.csv");
    let rows = csv_table(moe_opt().arg("mrc").arg(&log), &csv);
    // 2 policies x 8 capacities x (6 layers + total).
    assert_eq!(rows.len(), 2 * 8 * 7);
    for policy in ["lru", "belady"] {
        for capacity in 1..=8 {
            let total = rows
                .iter()
                .find(|r| {
                    r["policy"] == policy
                        && r["capacity"] == capacity.to_string()
                        && r["layer"] == "total"
                })
                .unwrap_or_else(|| panic!("{policy} C = {capacity}: no total row"));
            assert_eq!(total["requests"], "1290", "215 tokens x 6 layers x K = 1");
            let replay: serde_json::Value =
                serde_json::from_str(&ok(moe_opt().arg("replay").arg(&log).args([
                    "--capacity",
                    &capacity.to_string(),
                    "--methods",
                    policy,
                    "--json",
                ])))
                .unwrap();
            assert_eq!(
                total["loads"],
                replay["results"][0]["total"]["loads"].to_string(),
                "{policy} C = {capacity}"
            );
        }
    }
    let err = refused(moe_opt().arg("mrc").arg(&log).args(["--methods", "lfu"]));
    assert!(
        err.contains("--methods") && err.contains("stack algorithm"),
        "{err}"
    );
}

#[test]
fn libcachesim_export_imports_back_to_the_same_routing_and_bytes() {
    let dir = scratch("libcachesim");
    // A generated trace (E = 8, K = 2, 32 layers).
    let trace = trace(&dir, "mixtral-8x7b");
    let original: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let experts = |v: &serde_json::Value| -> Vec<serde_json::Value> {
        v["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| {
                t["layers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["experts"].clone())
            })
            .collect()
    };
    let (e, k, l) = (
        original["experts"].to_string(),
        original["top_k"].to_string(),
        original["layers"].to_string(),
    );
    for name in ["t.oracleGeneral", "t.csv"] {
        let format = if name.ends_with("csv") {
            "csv"
        } else {
            "oracle-general"
        };
        let (first, back, again) = (
            dir.join(name),
            dir.join("back.json"),
            dir.join(format!("again-{name}")),
        );
        ok(moe_opt()
            .arg("export")
            .arg(&trace)
            .args(["--format", format, "-o"])
            .arg(&first));
        ok(moe_opt()
            .args(["import", "cache-trace", "--libcachesim"])
            .arg(&first)
            .args(["--experts", &e, "--layers", &l, "--top-k", &k, "-o"])
            .arg(&back));
        let imported: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&back).unwrap()).unwrap();
        assert_eq!(experts(&imported), experts(&original), "{name}");
        ok(moe_opt()
            .arg("export")
            .arg(&back)
            .args(["--format", format, "-o"])
            .arg(&again));
        assert_eq!(
            std::fs::read(&again).unwrap(),
            std::fs::read(&first).unwrap(),
            "{name}"
        );
    }
    // One layer's export is a one-layer trace; --renumber reads it as a foreign trace, whose
    // experts are numbered by first appearance.
    let layer = dir.join("layer2.oracleGeneral");
    ok(moe_opt()
        .arg("export")
        .arg(&trace)
        .args(["--layer", "2", "-o"])
        .arg(&layer));
    let bytes = std::fs::read(&layer).unwrap();
    let tokens = original["tokens"].as_array().unwrap();
    assert_eq!(bytes.len(), 24 * tokens.len() * k.parse::<usize>().unwrap());
    let one = dir.join("one.json");
    ok(moe_opt()
        .args(["import", "cache-trace", "--libcachesim"])
        .arg(&layer)
        .args(["--experts", &e, "--layers", "1", "--top-k", &k, "-o"])
        .arg(&one));
    let one: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&one).unwrap()).unwrap();
    let layer2: Vec<serde_json::Value> = tokens
        .iter()
        .map(|t| t["layers"][2]["experts"].clone())
        .collect();
    assert_eq!(experts(&one), layer2);
    let renumbered = dir.join("renumbered.json");
    ok(moe_opt()
        .args(["import", "cache-trace", "--libcachesim"])
        .arg(&layer)
        .args(["--renumber", "-o"])
        .arg(&renumbered));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&renumbered).unwrap()).unwrap();
    // By hand: the layer's requests in order, each id replaced by its rank of first appearance.
    let mut order: Vec<u64> = Vec::new();
    let mut want = Vec::new();
    for id in layer2.iter().flat_map(|x| x.as_array().unwrap()) {
        let id = id.as_u64().unwrap();
        if !order.contains(&id) {
            order.push(id);
        }
        want.push(serde_json::json!([order
            .iter()
            .position(|&x| x == id)
            .unwrap()]));
    }
    assert_eq!(experts(&r), want);
    assert_eq!(r["experts"], serde_json::json!(order.len()));
}

/// A JSON trace written as a binary one (`import cache-trace --trace --format bin`) and back:
/// the same bytes both ways; every trace command reads the binary file by its magic bytes,
/// whatever its name, with the same report but for the hash, which is the SHA-256 of the file.
#[test]
fn a_binary_trace_reads_as_its_json_and_hashes_its_bytes() {
    use sha2::{Digest, Sha256};
    let dir = scratch("cli-trace-bin");
    let json = trace(&dir, "mixtral-8x7b");
    let bin = dir.join("mixtral.bin");
    let import = |from: &std::path::Path, format: &str, to: &std::path::Path| {
        ok(moe_opt()
            .args(["import", "cache-trace", "--trace"])
            .arg(from)
            .args(["--format", format, "-o"])
            .arg(to))
    };
    import(&json, "bin", &bin);
    let bytes = std::fs::read(&bin).unwrap();
    assert_eq!(&bytes[..8], b"MOETRACE");
    let back = dir.join("back.json");
    import(&bin, "json", &back);
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&json).unwrap());
    let again = dir.join("again.bin");
    import(&back, "bin", &again);
    assert_eq!(std::fs::read(&again).unwrap(), bytes);
    // Named like a JSON file, still read as binary.
    let renamed = dir.join("renamed.json");
    std::fs::copy(&bin, &renamed).unwrap();
    let sha: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    for args in [
        &["replay", "FILE", "--capacity", "4", "--json"][..],
        &["mrc", "FILE", "--json"],
        &[
            "route",
            "FILE",
            "--method",
            "max-rank:m=4,j=1",
            "--capacity",
            "4",
            "--json",
        ],
        &["tpot", "FILE", "--capacity", "12", "--json"],
    ] {
        let run = |file: &std::path::Path| -> serde_json::Value {
            let args = args.iter().map(|a| match *a {
                "FILE" => file.as_os_str().to_owned(),
                a => a.into(),
            });
            serde_json::from_str(&ok(moe_opt().args(args))).unwrap()
        };
        let (mut from_json, from_bin) = (run(&json), run(&renamed));
        assert_eq!(from_bin["trace"]["sha256"], sha.as_str(), "{args:?}");
        assert_ne!(from_json["trace"]["sha256"], sha.as_str(), "{args:?}");
        from_json["trace"]["sha256"] = sha.as_str().into();
        assert_eq!(from_bin, from_json, "{args:?}");
    }
    let export = |file: &std::path::Path, out: &str| {
        let out = dir.join(out);
        ok(moe_opt().arg("export").arg(file).arg("-o").arg(&out));
        std::fs::read(out).unwrap()
    };
    assert_eq!(export(&bin, "bin.og"), export(&json, "json.og"));
    // Another problem's import refuses the binary format.
    let err = refused(moe_opt().args([
        "import", "prism", "--counts", "x.json", "--format", "bin", "-o", "out.json",
    ]));
    assert!(err.contains("--format: prism writes JSON"), "{err}");
}
