//! Sizes from files and flags that would drive allocations past any machine's memory (issue 13):
//! each is refused against its documented limit before anything is allocated. One case per
//! file kind and size flag: the files it writes, the command, and what the one error line must
//! name (the file or the flag, and the field). Every command runs under a 4 GB address-space
//! cap (`ulimit -v`), so a regression aborts fast instead of eating the machine's memory.
//!
//! Each case asserts: exit code 2, exactly one line on stderr, that line naming the file or
//! flag and the field (and the limit's constant where there is one), and no file at `-o`.

mod common;

use std::path::Path;

use common::{bin, moe_opt, ok, scratch};
use serde_json::{json, Value};

/// 4 GB of address space for the command under test.
const MEMORY_CAP_KB: u64 = 4_000_000;

/// One hostile input.
struct Case {
    /// What is hostile.
    what: &'static str,
    /// Files written in the case's folder before the command: name and content.
    files: Vec<(&'static str, Vec<u8>)>,
    /// The command's arguments (run in the case's folder).
    args: Vec<String>,
    /// Pieces the error line must contain: the file or flag, the field, the limit.
    names: Vec<&'static str>,
}

fn case(
    what: &'static str,
    files: Vec<(&'static str, String)>,
    args: &str,
    names: &[&'static str],
) -> Case {
    Case {
        what,
        files: files
            .into_iter()
            .map(|(n, t)| (n, t.into_bytes()))
            .collect(),
        args: args.split_whitespace().map(String::from).collect(),
        names: names.to_vec(),
    }
}

/// A committed instance with `edit` applied, as JSON text.
fn edited(instance: &str, edit: impl FnOnce(&mut Value)) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("instances").join(instance)).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    edit(&mut v);
    v.to_string()
}

/// A generator's configuration (`--print-config` of its default) with `edit` applied.
fn config(problem: &str, edit: impl FnOnce(&mut Value)) -> String {
    let text = ok(moe_opt().args(["generate", problem, "--print-config"]));
    let mut v: Value = serde_json::from_str(&text).unwrap();
    edit(&mut v);
    v.to_string()
}

/// `generate PROBLEM --config C.json` of the generator's default configuration with `edit`
/// applied, refused naming `names`.
fn generator_case(
    what: &'static str,
    problem: &str,
    edit: impl FnOnce(&mut Value),
    names: &[&'static str],
) -> Case {
    case(
        what,
        vec![("C.json", config(problem, edit))],
        &format!("generate {problem} --config C.json -o out.json"),
        names,
    )
}

/// One line of a token log.
fn log_line(layer: &str) -> String {
    format!(
        "{{\"seq\":0,\"token\":0,\"layer\":{layer},\"experts\":[1],\"weights\":null,\"phase\":\"decode\"}}\n"
    )
}

/// An activation-count file whose header claims `layers` x `experts` over one tiny prompt.
fn counts(layers: u64, experts: u64, prompts: Value) -> String {
    json!({
        "format": "moe-activation-counts/v1", "model": "m", "top_k": 1,
        "experts_per_layer": experts, "prompts": 1, "layers": layers,
        "source": "hostile", "counts": prompts,
    })
    .to_string()
}

/// A slimcaching instance whose model 0 has `layers` x `experts`.
fn slimcaching(layers: u64, experts: u64) -> String {
    edited("slimcaching-tiny-1.json", |v| {
        v["models"][0]["layers"] = layers.into();
        v["models"][0]["experts_per_layer"] = experts.into();
    })
}

/// The tiny SlimCaching instance on 32 servers (every server, link and user's link a copy of
/// server 0's) with a model nobody requests of 8 layers x 65536 experts: each size within its
/// limit, and 32 x 2^19 placement binaries above the MILP's 16 million variables.
fn slimcaching_32_servers() -> String {
    edited("slimcaching-tiny-1.json", |v| {
        let n = 32;
        let server = v["servers"][0].clone();
        v["servers"] = vec![server; n].into();
        let link = v["backhaul"]["edge_to_edge"][0][1].clone();
        v["backhaul"]["edge_to_edge"] = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| if i == j { Value::Null } else { link.clone() })
                    .collect::<Value>()
            })
            .collect();
        for side in ["edge_to_cloud", "cloud_to_edge"] {
            let l = v["backhaul"][side][0].clone();
            v["backhaul"][side] = vec![l; n].into();
        }
        for user in v["users"].as_array_mut().unwrap() {
            for side in ["uplink", "downlink"] {
                let l = user[side][0].clone();
                user[side] = vec![l; n].into();
            }
        }
        let mut wide = v["models"][0].clone();
        wide["layers"] = 8.into();
        wide["experts_per_layer"] = 65536.into();
        v["models"].as_array_mut().unwrap().push(wide);
    })
}

/// A ZipMoE layer of `experts` missed experts x `tensors` x `shards`.
fn zipmoe(experts: u64, tensors: u64, shards: u64) -> String {
    edited("zipmoe-tiny-1.json", |v| {
        let first = v["experts"][0].clone();
        v["experts"] = (0..experts)
            .map(|id| {
                let mut e = first.clone();
                e["id"] = id.into();
                e["state"] = "missed".into();
                e
            })
            .collect();
        v["tensors_per_expert"] = tensors.into();
        v["shards"] = shards.into();
    })
}

fn gzip(text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    gz.finish().unwrap()
}

const HUGE: &str = "1000000000000";

/// The cases, their shared inputs written into `dir`.
fn cases(dir: &Path) -> Vec<Case> {
    let trace_json = std::fs::read_to_string(common::trace(dir, "switch")).unwrap();
    let eplb = edited("eplb-readme-example.json", |_| {});
    // An offline instance of 1024 steps x 2048 experts: beyond the cache MILP's memory
    // estimate (about 9 GiB against its 4 GiB limit) and the exhaustive search's 12 experts.
    let wide = dir.join("wide-config.json");
    std::fs::write(
        &wide,
        config("cache-trace", |v| {
            v["experts"] = 2048.into();
            v["layers"] = 1.into();
            v["tokens_per_sequence"] = 1024.into();
        }),
    )
    .unwrap();
    let (wide_trace, offline) = (dir.join("wide.json"), dir.join("offline.json"));
    ok(moe_opt()
        .args(["generate", "cache-trace", "--config"])
        .arg(&wide)
        .arg("-o")
        .arg(&wide_trace));
    ok(moe_opt()
        .arg("offline")
        .arg(&wide_trace)
        .args(["--capacity", "4", "-o"])
        .arg(&offline));
    let offline = std::fs::read_to_string(offline).unwrap();
    let spec = |seeds: &str, axes: &str| {
        format!("problem = \"slimcaching\"\nseeds = {seeds}\nmethods = [\"greedy\"]\n{axes}")
    };
    let many_values: Vec<String> = (1..=2000).map(|i| i.to_string()).collect();
    let wide_axis = format!(
        "[[axes]]\npath = \"activations.tokens_per_layer\"\nvalues = [{}]\n",
        many_values.join(", ")
    );
    vec![
        // ---- token logs (cache-trace import, replay, offline) ----
        case(
            "a token log's layer of 2^64 - 1 (was a panic)",
            vec![("L.jsonl", log_line("18446744073709551615"))],
            "import cache-trace --log L.jsonl --experts 8 -o out.json",
            &["L.jsonl", "line 1.layer", "MAX_LAYERS"],
        ),
        case(
            "a token log's layer of 10^9 (was an abort)",
            vec![("L.jsonl", log_line("1000000000"))],
            "import cache-trace --log L.jsonl --experts 8 -o out.json",
            &["L.jsonl", "line 1.layer", "MAX_LAYERS"],
        ),
        case(
            "replay of a token log with layer 10^9",
            vec![("L.jsonl", log_line("1000000000"))],
            "replay L.jsonl --experts 8 --capacity 2",
            &["L.jsonl", "line 1.layer"],
        ),
        case(
            "offline from a token log with layer 1024",
            vec![("L.jsonl", log_line("1024"))],
            "offline L.jsonl --experts 8 --capacity 2 -o out.json",
            &["L.jsonl", "line 1.layer", "1024"],
        ),
        case(
            "a cache-trace file declaring 2000 layers",
            vec![("T.json", {
                let mut v: Value = serde_json::from_str(&trace_json).unwrap();
                v["layers"] = 2000.into();
                v.to_string()
            })],
            "replay T.json --capacity 2",
            &["T.json", "layers", "MAX_LAYERS"],
        ),
        // ---- SlimCaching instances ----
        case(
            "10^9 experts per layer: solve greedy (was an abort)",
            vec![("big.json", slimcaching(1, 1_000_000_000))],
            "solve big.json --method greedy",
            &[
                "big.json",
                "models[0].experts_per_layer",
                "MAX_EXPERTS_PER_LAYER",
            ],
        ),
        case(
            "10^9 experts per layer: write-lp (was an abort)",
            vec![("big.json", slimcaching(1, 1_000_000_000))],
            "write-lp big.json -o out.lp",
            &["big.json", "models[0].experts_per_layer", "65536"],
        ),
        case(
            "4 x 10^9 experts in a model nobody requests: solve lfu (was an abort)",
            vec![(
                "big.json",
                edited("slimcaching-tiny-1.json", |v| {
                    let mut m = v["models"][0].clone();
                    m["experts_per_layer"] = 4_000_000_000u64.into();
                    v["models"].as_array_mut().unwrap().push(m);
                }),
            )],
            "solve big.json --method lfu",
            &["big.json", "models[2].experts_per_layer"],
        ),
        case(
            "10^9 layers",
            vec![("big.json", slimcaching(1_000_000_000, 4))],
            "compare big.json",
            &["big.json", "models[0].layers", "MAX_LAYERS"],
        ),
        case(
            "each size within its limit, the total above",
            vec![("big.json", slimcaching(1024, 65536))],
            "solve big.json --method lfu",
            &["big.json", "models", "MAX_TOTAL_EXPERTS"],
        ),
        case(
            "a SlimCaching MILP of 32 servers x 2^19 experts: solve milp",
            vec![("big.json", slimcaching_32_servers())],
            "solve big.json --method milp",
            &["big.json", "slimcaching MILP", "MAX_MILP_VARIABLES"],
        ),
        case(
            "a SlimCaching MILP of 32 servers x 2^19 experts: write-lp",
            vec![("big.json", slimcaching_32_servers())],
            "write-lp big.json -o out.lp",
            &["big.json", "slimcaching MILP", "MAX_MILP_VARIABLES"],
        ),
        case(
            "the cache MILP's size refusal names the file",
            vec![("O.json", offline.clone())],
            "solve O.json --method milp-fixed",
            &["O.json", "offline caching MILP", "MAX_MILP_BYTES"],
        ),
        case(
            "the exhaustive search's size refusal names the file",
            vec![("O.json", offline.clone())],
            "solve O.json --method exhaustive-fixed",
            &["O.json", "exhaustive search"],
        ),
        case(
            "the cache MILP's size refusal in write-lp",
            vec![("O.json", offline)],
            "write-lp O.json -o out.lp",
            &["O.json", "offline caching MILP"],
        ),
        case(
            "import prism: a server of 4 x 10^9 GPUs",
            vec![
                ("C.json.gz", String::new()),
                ("I.json", {
                    let mut c =
                        serde_json::to_value(moe_opt::prism::import::ImportConfig::default())
                            .unwrap();
                    c["gpus"] = json!([1, 4_000_000_000u64]);
                    c.to_string()
                }),
            ],
            "import prism --counts C.json.gz --config I.json -o out.json",
            &["I.json", "gpus[1]", "MAX_GPUS_PER_SERVER"],
        ),
        case(
            "2000 models",
            vec![(
                "big.json",
                edited("slimcaching-tiny-1.json", |v| {
                    let m = v["models"][1].clone();
                    v["models"] = vec![m; 2000].into();
                }),
            )],
            "solve big.json --method lfu",
            &["big.json", "models", "MAX_MODELS"],
        ),
        // ---- activation-count files ----
        case(
            "an LFU warm start whose header claims 10^12 layers (was an abort)",
            vec![
                ("T.json", trace_json.clone()),
                (
                    "C.json",
                    counts(1_000_000_000_000, 1_000_000_000, json!([[[1]]])),
                ),
            ],
            "replay T.json --capacity 2 --methods lfu --warm-start C.json",
            &["C.json", "counts[0]"],
        ),
        case(
            "an LFU warm start with no prompt and a huge header",
            vec![
                ("T.json", trace_json.clone()),
                (
                    "C.json",
                    counts(1_000_000_000_000, 1_000_000_000, json!([])),
                ),
            ],
            "replay T.json --capacity 2 --methods lfu --warm-start C.json",
            &["C.json", "counts"],
        ),
        case(
            "import zipmoe-pool of a count file with no prompt and a huge header",
            vec![(
                "C.json",
                counts(1_000_000, 4_000_000_000, json!([]))
                    .replace("\"prompts\":1", "\"prompts\":0"),
            )],
            "import zipmoe-pool --counts C.json -o out.json",
            &["C.json", "prompts"],
        ),
        Case {
            what: "import slimcaching of a gzip count file with no prompt and a huge header",
            files: vec![(
                "C.json.gz",
                gzip(
                    &counts(1_000_000_000_000, 8, json!([]))
                        .replace("\"prompts\":1", "\"prompts\":0"),
                ),
            )],
            args: "import slimcaching --counts C.json.gz -o out.json"
                .split(' ')
                .map(String::from)
                .collect(),
            names: vec!["C.json.gz", "prompts"],
        },
        // ---- EPLB ----
        case(
            "eplb --replicas 8 x 10^11 (was an abort)",
            vec![("W.json", eplb)],
            "eplb --weights W.json --replicas 800000000000 --groups 4 --nodes 2 --gpus 8",
            &["W.json", "replicas", "MAX_REPLICAS_PER_EXPERT"],
        ),
        // ---- sweep specs ----
        case(
            "a sweep of 10^13 seeds (was an abort)",
            vec![("S.toml", spec("10000000000000", ""))],
            "sweep S.toml -o out",
            &["S.toml", "seeds", "MAX_SEEDS"],
        ),
        case(
            "a sweep of 1000 seeds x 2000 axis values",
            vec![("S.toml", spec("1000", &wide_axis))],
            "sweep S.toml -o out",
            &["S.toml", "axes", "MAX_CELLS"],
        ),
        // ---- ZipMoE layers ----
        case(
            "4096 experts x 64 tensors x 256 shards, each within its limit (was an abort)",
            vec![("Z.json", zipmoe(4096, 64, 256))],
            "solve Z.json --method fifo",
            &["Z.json", "shards", "MAX_SHARD_OPS"],
        ),
        case(
            "5 experts x 64 x 256 shards, just above the product's limit",
            vec![("Z.json", zipmoe(5, 64, 256))],
            "compare Z.json",
            &["Z.json", "shards", "65536"],
        ),
        case(
            "the ZipMoE MILP's size refusal names the file",
            vec![("Z.json", zipmoe(9, 1, 2))],
            "solve Z.json --method milp",
            &["Z.json", "zipmoe MILP"],
        ),
        case(
            "the ZipMoE MILP's size refusal in write-lp",
            vec![("Z.json", zipmoe(9, 1, 2))],
            "write-lp Z.json -o out.lp",
            &["Z.json", "zipmoe MILP"],
        ),
        // ---- Prism instances ----
        case(
            "a Prism workload of 4 x 10^9 requests per server",
            vec![(
                "P.json",
                edited("prism-tiny-1.json", |v| {
                    v["workload"]["requests_per_server"] = 4_000_000_000u64.into();
                }),
            )],
            "solve P.json --method prism",
            &[
                "P.json",
                "workload.requests_per_server",
                "MAX_SIMULATED_SELECTIONS",
            ],
        ),
        // ---- generator configurations ----
        generator_case(
            "slimcaching: users.max 10^9",
            "slimcaching",
            |v| v["users"]["max"] = 1_000_000_000.into(),
            &["C.json", "users.max", "MAX_USERS"],
        ),
        generator_case(
            "slimcaching: experts_per_layer.max 10^9",
            "slimcaching",
            |v| v["library"]["synthetic"]["experts_per_layer"]["max"] = 1_000_000_000.into(),
            &["C.json", "library.synthetic.experts_per_layer.max"],
        ),
        generator_case(
            "slimcaching: layers.max 10^9",
            "slimcaching",
            |v| v["library"]["synthetic"]["layers"]["max"] = 1_000_000_000.into(),
            &["C.json", "library.synthetic.layers.max"],
        ),
        generator_case(
            "slimcaching: tokens_per_layer 4 x 10^9",
            "slimcaching",
            |v| v["activations"]["tokens_per_layer"] = 4_000_000_000u64.into(),
            &[
                "C.json",
                "activations.tokens_per_layer",
                "MAX_TOKENS_PER_LAYER",
            ],
        ),
        generator_case(
            "prism: model.layers.max 10^9",
            "prism",
            |v| v["model"]["layers"]["max"] = 1_000_000_000.into(),
            &["C.json", "model.layers.max"],
        ),
        generator_case(
            "prism: requests_per_server 4 x 10^9",
            "prism",
            |v| v["workload"]["requests_per_server"] = 4_000_000_000u64.into(),
            &["C.json", "workload.requests_per_server"],
        ),
        generator_case(
            "cache-trace: layers 10^9",
            "cache-trace",
            |v| v["layers"] = 1_000_000_000.into(),
            &["C.json", "layers", "MAX_LAYERS"],
        ),
        generator_case(
            "cache-trace: sequences x tokens_per_sequence 10^18",
            "cache-trace",
            |v| {
                v["sequences"] = 1_000_000_000.into();
                v["tokens_per_sequence"] = 1_000_000_000.into();
            },
            &["C.json", "tokens_per_sequence", "MAX_TOKENS"],
        ),
        generator_case(
            "zipmoe: shards.max 10^9",
            "zipmoe",
            |v| v["shards"]["max"] = 1_000_000_000.into(),
            &["C.json", "shards.max", "MAX_SHARDS"],
        ),
        generator_case(
            "zipmoe: batch_tokens.max 4 x 10^9",
            "zipmoe",
            |v| v["batch_tokens"]["max"] = 4_000_000_000u64.into(),
            &["C.json", "batch_tokens.max", "MAX_BATCH_TOKENS"],
        ),
        generator_case(
            "zipmoe-pool: synthetic prompts 4 x 10^9",
            "zipmoe-pool",
            |v| v["synthetic"]["prompts"] = 4_000_000_000u64.into(),
            &["C.json", "prompts", "MAX_SYNTHETIC_COUNTS"],
        ),
        case(
            "plan --synthetic: experts 10^9",
            vec![(
                "C.json",
                config("zipmoe-pool", |v| {
                    v["synthetic"]["experts"] = 1_000_000_000.into()
                }),
            )],
            "plan --synthetic --config C.json",
            &["C.json", "experts", "MAX_EXPERTS"],
        ),
        // ---- size flags ----
        case(
            "replay --methods smoe-window:n=10^12",
            vec![("T.json", trace_json.clone())],
            "replay T.json --capacity 2 --methods smoe-window:n=1000000000000",
            &["--methods", "MAX_SMOE_WINDOW"],
        ),
        case(
            "migrate --windows 10^12",
            vec![("P.json", edited("prism-tiny-1.json", |_| {}))],
            &format!("migrate P.json --windows {HUGE}"),
            &["windows", "MAX_MIGRATE_WINDOWS"],
        ),
        case(
            "verify --instances 10^12",
            vec![],
            &format!("verify --claim slimcaching/prop1-submodular --instances {HUGE} -o out"),
            &["--instances", "MAX_INSTANCES"],
        ),
        case(
            "verify --search 10^12",
            vec![],
            &format!("verify --claim slimcaching/prop1-submodular --search {HUGE} -o out"),
            &["--search", "MAX_SEARCH_ITERATIONS"],
        ),
        case(
            "verify --restarts 10^12",
            vec![],
            &format!("verify --claim slimcaching/prop1-submodular --restarts {HUGE} -o out"),
            &["--restarts", "MAX_SEARCH_RESTARTS"],
        ),
        case(
            "demo --instances 10^12",
            vec![],
            &format!("demo --instances {HUGE} -o out"),
            &["--instances", "MAX_DEMO_INSTANCES"],
        ),
        case(
            "demo seeds past 2^64 - 1",
            vec![],
            "demo --seed 18446744073709551615 --instances 2 -o out",
            &["--seed"],
        ),
    ]
}

#[test]
fn every_hostile_size_is_refused_in_one_line_naming_the_file_or_flag() {
    let inputs = scratch("hostile-sizes-inputs");
    let cases = cases(&inputs);
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let mut failures = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let dir = scratch(&format!("hostile-sizes-{i}"));
        for (name, text) in &c.files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v {MEMORY_CAP_KB}; exec \"$0\" \"$@\""))
            .arg(bin())
            .args(&c.args)
            .current_dir(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let mut wrong = Vec::new();
        if out.status.code() != Some(2) {
            wrong.push(format!("exit {:?}", out.status.code()));
        }
        if lines.len() != 1 {
            wrong.push(format!("{} stderr lines", lines.len()));
        }
        let line = lines.first().copied().unwrap_or("");
        if !line.starts_with("error: ") {
            wrong.push("the line is not an `error: ` line".into());
        }
        for piece in &c.names {
            if !line.contains(piece) {
                wrong.push(format!("the line lacks `{piece}`"));
            }
        }
        for left in ["out.json", "out.lp", "out"] {
            if dir.join(left).exists() {
                wrong.push(format!("{left} was left behind"));
            }
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "{}: {}\n    {}",
                c.what,
                wrong.join("; "),
                stderr.trim()
            ));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
