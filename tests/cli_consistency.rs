//! One command line for every problem: the registry's lists, the shared flag names (old names
//! as aliases), a wrong kind of file named as what it is, and a table for every report.

use std::path::Path;

mod common;

use common::{csv_table, moe_opt, ok, refused, scratch, trace, EPLB_EXAMPLE, EPLB_EXAMPLE_FLAGS};

/// The single stderr line of a command that must be refused (exit code 2).
fn refused_line(args: &[&str]) -> String {
    let text = refused(moe_opt().args(args));
    assert_eq!(text.trim_end().lines().count(), 1, "{args:?}: {text}");
    text
}

#[test]
fn problems_list_every_problem_with_its_methods_presets_and_claims() {
    let list: serde_json::Value =
        serde_json::from_str(&ok(moe_opt().args(["problems", "--json"]))).unwrap();
    let tags: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["problem"].as_str().unwrap())
        .collect();
    assert_eq!(
        tags,
        [
            "slimcaching",
            "prism",
            "cache-trace",
            "cache-offline",
            "zipmoe",
            "zipmoe-pool",
            "smoe",
            "balance"
        ]
    );
    let slim = &list[0];
    let methods: Vec<&str> = slim["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(methods.contains(&"successive-maxconv") && methods.contains(&"milp"));
    assert_eq!(slim["claims"].as_array().unwrap().len(), 14);
    // Every problem's presets, as `--list-presets` and `--preset help` print them.
    let presets = ok(moe_opt().args(["generate", "zipmoe", "--list-presets"]));
    assert!(
        presets.contains("qwen-orin") && presets.contains("Jetson"),
        "{presets}"
    );
    assert_eq!(
        ok(moe_opt().args(["generate", "zipmoe", "--preset", "help"])),
        presets
    );
    let none = ok(moe_opt().args(["generate", "zipmoe-pool", "--list-presets"]));
    assert!(none.contains("no presets"), "{none}");
}

#[test]
fn a_wrong_kind_of_file_is_named_with_the_command_to_use() {
    let e = refused_line(&["replay", "instances/prism-tiny-1.json", "--capacity", "2"]);
    assert!(
        e.contains("prism-tiny-1.json")
            && e.contains("a prism instance")
            && e.contains("cache-trace"),
        "{e}"
    );
    let e = refused_line(&[
        "replay",
        "instances/slimcaching-tiny-1.json",
        "--capacity",
        "2",
    ]);
    assert!(e.contains("SlimCaching"), "{e}");
    let dir = scratch("consistency-kind");
    let trace = trace(&dir, "switch");
    let t = trace.to_str().unwrap();
    let e = refused_line(&["solve", t]);
    assert!(
        e.contains("cache-trace") && e.contains("moe-opt replay"),
        "{e}"
    );
    let e = refused_line(&["generate", "knapsack", "-o", "x.json"]);
    assert!(
        e.contains("unknown problem `knapsack`") && e.contains("smoe"),
        "{e}"
    );
}

#[test]
fn the_old_flag_names_are_aliases_of_the_shared_ones() {
    let dir = scratch("consistency-aliases");
    let trace = trace(&dir, "switch");
    let t = trace.to_str().unwrap();
    let replay = |flag: &str| {
        ok(moe_opt().args(["replay", t, "--capacity", "4", flag, "lru,belady", "--json"]))
    };
    assert_eq!(replay("--methods"), replay("--policies"));
    let route = |flag: &str| {
        ok(moe_opt().args([
            "route",
            t,
            "--capacity",
            "4",
            flag,
            "cumsum:p=0.6,j=1",
            "--json",
        ]))
    };
    assert_eq!(route("--method"), route("--router"));
    // Hyphenated values, with the underscore spelling read the same (on a trace with decode
    // tokens).
    let mixtral = common::trace(&dir, "mixtral-8x7b");
    let m = mixtral.to_str().unwrap();
    let tpot = |split: &str| {
        ok(moe_opt().args(["tpot", m, "--capacity", "16", "--split", split, "--json"]))
    };
    assert_eq!(tpot("earliest-finish"), tpot("earliest_finish"));
    // `plan --synthetic --seed S` is the earlier `--generate S`.
    assert_eq!(
        ok(moe_opt().args(["plan", "--synthetic", "--seed", "3", "--json"])),
        ok(moe_opt().args(["plan", "--generate", "3", "--json"]))
    );
}

#[test]
fn route_and_claims_write_tables_and_verify_instance_prints_text() {
    let dir = scratch("consistency-tables");
    let trace = trace(&dir, "switch");
    let route_csv = dir.join("route.csv");
    let rows = csv_table(
        moe_opt().arg("route").arg(&trace).args([
            "--capacity",
            "4",
            "--method",
            "max-rank:m=4,j=1",
        ]),
        &route_csv,
    );
    // switch: 6 MoE layers, then the total.
    assert_eq!(rows.len(), 7);
    assert_eq!(rows[6]["layer"], "total");
    assert_eq!(rows[0]["router"], "max-rank:m=4,j=1");
    assert!(
        rows[0].contains_key("quality.mass_kept"),
        "{:?}",
        rows[0].keys()
    );
    let claims_csv = dir.join("claims.csv");
    let rows = csv_table(moe_opt().arg("claims"), &claims_csv);
    let claims: serde_json::Value =
        serde_json::from_str(&ok(moe_opt().args(["claims", "--json"]))).unwrap();
    assert_eq!(rows.len(), claims.as_array().unwrap().len());
    assert_eq!(rows[0]["id"], claims[0]["id"].as_str().unwrap());
    let text = ok(moe_opt().args([
        "verify",
        "--claim",
        "smoe/alg2-uniform-optimal",
        "--instance",
        "instances/counterexamples/smoe-alg2-uniform-optimal.json",
    ]));
    assert!(
        text.starts_with("smoe/alg2-uniform-optimal (") && text.contains(": fail"),
        "{text}"
    );
}

#[test]
fn eplb_takes_a_bare_matrix_and_csv_weights() {
    let dir = scratch("consistency-eplb");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(EPLB_EXAMPLE).unwrap()).unwrap();
    let matrix = dir.join("w.json");
    std::fs::write(&matrix, json["weight"].to_string()).unwrap();
    let csv = dir.join("w.csv");
    let lines: Vec<String> = json["weight"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let cells: Vec<String> = row
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.to_string())
                .collect();
            cells.join(",")
        })
        .collect();
    std::fs::write(&csv, lines.join("\n") + "\n").unwrap();
    let plan = |weights: &Path| -> serde_json::Value {
        let out = ok(moe_opt()
            .arg("eplb")
            .arg("--weights")
            .arg(weights)
            .args(EPLB_EXAMPLE_FLAGS)
            .arg("--json"));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["plan"].clone()
    };
    let reference = plan(Path::new(EPLB_EXAMPLE));
    assert_eq!(plan(&matrix), reference);
    assert_eq!(plan(&csv), reference);
}

#[test]
fn numeric_flags_are_checked_like_instance_fields() {
    let dir = scratch("consistency-flags");
    let switch = trace(&dir, "switch");
    let t = switch.to_str().unwrap();
    let prism = "instances/prism-tiny-1.json";
    // (arguments, the flag and value the error must name, the rule it must state)
    let cases: [(&[&str], &str, &str); 8] = [
        (
            &["migrate", prism, "--tokens-per-window", "nan"],
            "'nan' for '--tokens-per-window",
            "> 0",
        ),
        (
            &["migrate", prism, "--tokens-per-window=-5"],
            "'-5' for '--tokens-per-window",
            "> 0",
        ),
        (
            &["migrate", prism, "--remote-invocation-s=-1"],
            "'-1' for '--remote-invocation-s",
            ">= 0",
        ),
        (
            &["migrate", prism, "--mix", "1.5"],
            "'1.5' for '--mix",
            "[0, 1]",
        ),
        (
            &["tpot", t, "--capacity", "4", "--alpha", "7"],
            "'7' for '--alpha",
            "[0, 1]",
        ),
        (
            &["tpot", t, "--capacity", "4", "--alphas", "0,2"],
            "'2' for '--alphas",
            "[0, 1]",
        ),
        (&["verify", "--jobs", "0"], "'0' for '--jobs", "at least 1"),
        (&["solve", prism, "--gap=-0.1"], "'-0.1' for '--gap", ">= 0"),
    ];
    for (args, names, rule) in cases {
        let err = refused(moe_opt().args(args));
        assert!(err.contains(names) && err.contains(rule), "{args:?}: {err}");
    }
    // A capacity above what a cache can choose from (E = 8 per layer for switch).
    let err = refused_line(&["replay", t, "--capacity", "9"]);
    assert!(
        err.contains("switch.json: capacity: must be at most 8"),
        "{err}"
    );
    let out = dir.join("o.json");
    let out = out.to_str().unwrap();
    let err = refused_line(&["offline", t, "--layer", "6", "--capacity", "4", "-o", out]);
    assert!(err.contains("switch.json: layer"), "{err}");
    assert!(
        ok(moe_opt().args(["replay", t, "--capacity", "8", "--json"])).contains("\"capacity\": 8")
    );
}

#[test]
fn a_generator_configuration_error_names_its_file() {
    let dir = scratch("consistency-config");
    let mut config: serde_json::Value = serde_json::from_str(&ok(moe_opt().args([
        "generate",
        "slimcaching",
        "--print-config",
    ])))
    .unwrap();
    config["servers"] = serde_json::json!({"min": 40, "max": 40});
    let file = dir.join("c.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let err = refused_line(&[
        "generate",
        "slimcaching",
        "--config",
        file.to_str().unwrap(),
        "-o",
        dir.join("i.json").to_str().unwrap(),
    ]);
    assert!(err.contains("c.json: servers.max"), "{err}");
}

#[test]
fn cache_files_refuse_unknown_fields_like_every_other_format() {
    let dir = scratch("consistency-unknown");
    let mut trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(trace(&dir, "switch")).unwrap()).unwrap();
    trace["tokens"][0]["extra"] = serde_json::json!(1);
    let file = dir.join("t.json");
    std::fs::write(&file, trace.to_string()).unwrap();
    let err = refused_line(&["replay", file.to_str().unwrap(), "--capacity", "4"]);
    assert!(
        err.contains("t.json") && err.contains("unknown field `extra`"),
        "{err}"
    );
}

/// `text` with every run of whitespace one space: the papers' extraction breaks lines and
/// doubles spaces around formulas, which a quote need not copy.
fn one_spaced(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every registered claim carries the paper's sentence verbatim: each part of its quote
/// (between `[...]` elisions) occurs in the paper's file, in order, whitespace aside. Where the
/// papers are absent the check is skipped, and says so.
#[test]
fn every_claim_quotes_its_paper_verbatim() {
    let claims: serde_json::Value =
        serde_json::from_str(&ok(moe_opt().args(["claims", "--json"]))).unwrap();
    let claims = claims.as_array().unwrap();
    // The registries end their claims with `..ClaimInfo::DEFAULTS`, whose text is empty: no
    // claim may leave a text field to it.
    for c in claims {
        for field in [
            "id",
            "paper",
            "place",
            "statement",
            "measured",
            "bound",
            "family",
            "quote",
        ] {
            let text = c[field]
                .as_str()
                .unwrap_or_else(|| panic!("{c}: no {field}"));
            assert!(!text.trim().is_empty(), "{}: an empty {field}", c["id"]);
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(papers) = [
        root.join("../shared/papers"),
        root.join("../../shared/papers"),
    ]
    .into_iter()
    .find(|d| d.is_dir()) else {
        eprintln!("skipped: ../shared/papers is absent; the quotes are not checked");
        return;
    };
    // The premises quote their papers too (`claims --premises`).
    let premises: serde_json::Value =
        serde_json::from_str(&ok(moe_opt().args(["claims", "--premises", "--json"]))).unwrap();
    let premises: Vec<serde_json::Value> = premises
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let mut p = p.clone();
            p["id"] = format!("premise {}", p["name"].as_str().unwrap()).into();
            p["kind"] = "premise".into();
            p["quantifier"] = "-".into();
            p
        })
        .collect();
    assert!(premises.len() >= 40, "{} premises", premises.len());
    for c in claims.iter().chain(&premises) {
        let (id, quote) = (c["id"].as_str().unwrap(), c["quote"].as_str().unwrap());
        assert!(!quote.trim().is_empty(), "{id}: no quote");
        for field in ["kind", "quantifier"] {
            assert!(c[field].is_string(), "{id}: no {field}");
        }
        let file = papers.join(c["paper"].as_str().unwrap());
        let paper = one_spaced(&std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!("{id}: {}: {e}", file.display());
        }));
        let mut from = 0;
        for part in quote.split("[...]") {
            let part = one_spaced(part);
            assert!(!part.is_empty(), "{id}: an empty part around [...]");
            let at = paper[from..].find(&part).unwrap_or_else(|| {
                panic!(
                    "{id}: {part:?} is not in {} (after the part before)",
                    c["paper"]
                )
            });
            from += at + part.len();
        }
    }
}
