//! Golden snapshots of the command line's machine-readable outputs: the JSON of every `--json`,
//! the CSV of every `--csv`, the LP of `write-lp` and the files written by `-o` / `--out`, for
//! every command of docs/command-line.md's list, on the committed instances (and on small
//! instances and traces generated here from fixed presets and seeds) of every problem.
//!
//! They pin the current behaviour before a large refactor of the command line: after it, these
//! snapshots must be unchanged byte for byte, except for fields renamed on purpose and listed in
//! CHANGELOG.md (whoever renames a field updates the snapshots in the same commit).
//! A snapshot that changes for any other reason is a regression of the refactor.
//!
//! Covered: `generate` (every preset's `--print-config`, written instances), `solve` (every
//! method, `--json` and `--csv`), `compare`, `write-lp`, `eplb`, `migrate`, `plan`, `replay`,
//! `mrc`, `route`, `pareto`, `offline`, `export`, `tpot`, `claims`, `verify` (runs and re-checks), `sweep`,
//! `merge` (equal to the unsharded run) and `import` (only where ../shared/data exists, see
//! `import_real_data`). `demo` prints text tables only and is not pinned.
//!
//! What is left out, so that the snapshots do not depend on the machine or on the last bits:
//! * wall-clock fields (`runtime_s`, `solve_time_s`, in JSON at any depth and as CSV columns,
//!   also nested ones such as `exact.solve_time_s`) are replaced by `[runtime]`;
//! * every float is rounded to 9 significant digits (as `rounded()` in `tests/cli.rs`), and
//!   magnitudes below 1e-12 (a MILP's gap of 3e-16, an IPF residual of 1e-17) are written as
//!   0, in JSON, in CSV cells (also JSON arrays inside cells) and in LP files;
//! * the scratch folder's path (it holds the process id) is replaced by `[scratch]`;
//! * human text tables are not snapshotted (they will be redesigned), only JSON, CSV, LP and
//!   written files. Written instance files over 20 KB are pinned by their SHA-256, size and
//!   top-level fields instead of their whole text.
//!
//! Every MILP here runs with `--time-limit 60` on instances it proves in milliseconds, and the
//! tests assert that no solver status reports a limit (`time_limit`, `gap_limit`, `too_large`):
//! a snapshot never depends on how far a solver got before a limit. Commands run in the repository root with relative instance paths,
//! so outputs that echo a path (`eplb`'s `weights_file`) are the same on every machine.
//!
//! Refresh (only for an intended change): `INSTA_UPDATE=always ./dev cargo test --test golden`,
//! then review the diff of `tests/snapshots/golden__*.snap`.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

mod common;

use common::{
    moe_opt, ok, scratch, shared_data, verify_paper, EPLB_EXAMPLE, EPLB_EXAMPLE_FLAGS, PAPERS,
    SLIMCACHING_METHODS,
};

/// The repository root: commands run there, with instance paths relative to it.
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// MILP time limit of every solve: far above what the tiny instances need.
const TIME_LIMIT: &str = "60";

/// Keys (and CSV columns, alone or after a `.`) holding wall-clock seconds.
const TIMING: [&str; 2] = ["runtime_s", "solve_time_s"];

/// Written files up to this size are snapshotted whole; larger ones by hash and top level.
const WHOLE_FILE_LIMIT: usize = 20_000;

// ---------------------------------------------------------------------------------------------
// Running commands and cleaning their outputs.

/// Runs `moe-opt ARGS` in the repository root; it must succeed. Returns stdout.
fn run(args: &[&str]) -> String {
    ok(moe_opt().current_dir(ROOT).args(args))
}

/// Runs `moe-opt ARGS` (which must print JSON) and returns the cleaned JSON.
fn run_json(args: &[&str]) -> Value {
    let out = run(args);
    let value: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("moe-opt {args:?}: not JSON ({e}):\n{out}"));
    clean(value)
}

/// Runs a command that must fail: its exit code and stderr.
fn run_failing(args: &[&str]) -> Value {
    let out = moe_opt().current_dir(ROOT).args(args).output().unwrap();
    assert!(!out.status.success(), "moe-opt {args:?} succeeded");
    json!({
        "exit_code": out.status.code(),
        "stderr": unscratch(&String::from_utf8_lossy(&out.stderr)),
    })
}

/// A path as a command-line argument.
fn arg(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// Runs `moe-opt ARGS --json --csv DIR/TABLE.csv`: the cleaned JSON and the table's path (some
/// commands write no table, or a second one beside it).
fn run_json_csv(dir: &Path, table: &str, args: &[&str]) -> (Value, PathBuf) {
    let table = dir.join(format!("{table}.csv"));
    let mut args = args.to_vec();
    args.extend(["--json", "--csv", arg(&table)]);
    (run_json(&args), table)
}

/// Pins a command's JSON as NAME and its cleaned CSV table as NAME_csv.
fn assert_json_and_csv(name: &str, report: &Value, table: &str) {
    insta::assert_json_snapshot!(name, report);
    insta::assert_snapshot!(format!("{name}_csv"), table);
}

/// The scratch folders' common prefix (temp dir, `moe-opt-`, the process id).
fn scratch_prefix() -> String {
    std::env::temp_dir()
        .join(format!("moe-opt-{}-", std::process::id()))
        .display()
        .to_string()
}

/// `text` with the scratch folders' prefix replaced by `[scratch]-`.
fn unscratch(text: &str) -> String {
    text.replace(&scratch_prefix(), "[scratch]-")
}

/// Below this magnitude a float is rounding noise (a MILP gap of 3e-16, an IPF residual of
/// 1e-17): it is written as 0.
const NOISE: f64 = 1e-12;

/// `x` rounded to 9 significant digits (0 below [`NOISE`]).
fn round(x: f64) -> Value {
    if x.abs() < NOISE {
        return json!(0.0);
    }
    let r: f64 = format!("{x:.8e}").parse().unwrap();
    json!(r)
}

/// Rounds every float, redacts the wall-clock fields and the scratch paths.
fn clean(mut value: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Number(n) if n.is_f64() => *v = round(n.as_f64().unwrap()),
            Value::String(s) => *s = unscratch(s),
            Value::Array(a) => a.iter_mut().for_each(walk),
            Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    if TIMING.contains(&k.as_str()) && !x.is_null() {
                        *x = json!("[runtime]");
                    } else {
                        walk(x);
                    }
                }
            }
            _ => {}
        }
    }
    walk(&mut value);
    value
}

/// True for a CSV column of wall-clock seconds.
fn timing_column(column: &str) -> bool {
    TIMING
        .iter()
        .any(|t| column == *t || column.ends_with(&format!(".{t}")))
}

/// One CSV cell, cleaned: timing redacted, floats (also inside JSON arrays) rounded.
fn clean_cell(column: &str, cell: &str) -> String {
    if timing_column(column) && !cell.is_empty() {
        return "[runtime]".into();
    }
    if cell.starts_with('[') || cell.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(cell) {
            return serde_json::to_string(&clean(v)).unwrap();
        }
    }
    if cell.contains(['.', 'e', 'E']) {
        if let Ok(x) = cell.parse::<f64>() {
            if x.is_finite() {
                return round(x).to_string();
            }
        }
    }
    unscratch(cell)
}

/// A CSV file parsed with the `csv` crate, every cell cleaned, written back as CSV text.
fn clean_csv(path: &Path) -> String {
    let mut reader =
        csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header = reader.headers().unwrap().clone();
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(&header).unwrap();
    for record in reader.records() {
        let record = record.unwrap();
        assert_eq!(record.len(), header.len(), "{}", path.display());
        let cells: Vec<String> = header
            .iter()
            .zip(record.iter())
            .map(|(h, c)| clean_cell(h, c))
            .collect();
        writer.write_record(cells).unwrap();
    }
    String::from_utf8(writer.into_inner().unwrap()).unwrap()
}

/// An LP file with its numbers rounded (a token with `.` or an exponent that parses as a float).
fn clean_lp(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let tokens: Vec<String> = line
            .split(' ')
            .map(|t| match t.parse::<f64>() {
                Ok(x) if x.is_finite() && t.contains(['.', 'e', 'E']) => round(x).to_string(),
                _ => t.to_string(),
            })
            .collect();
        out.push_str(&unscratch(&tokens.join(" ")));
        out.push('\n');
    }
    out
}

/// SHA-256 of bytes, hex.
fn sha256(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// A written JSON file: whole (cleaned) up to [`WHOLE_FILE_LIMIT`] bytes; above, its SHA-256,
/// size and an outline (see [`outline`]).
fn file_summary(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    if bytes.len() <= WHOLE_FILE_LIMIT {
        return clean(value);
    }
    let mut summary = Map::new();
    summary.insert("sha256".into(), sha256(&bytes).into());
    summary.insert("bytes".into(), bytes.len().into());
    if let Value::Object(top) = value {
        summary.extend(outline(top, 1));
    }
    Value::Object(summary)
}

/// The scalars of an object (cleaned), the lengths of its arrays (`KEY.len`) and, `depth`
/// levels down, the outlines of its objects (below that, their keys: `KEY.keys`).
fn outline(object: Map<String, Value>, depth: usize) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in object {
        match v {
            Value::Array(a) => {
                out.insert(format!("{k}.len"), a.len().into());
            }
            Value::Object(o) if depth > 0 => {
                out.insert(k, Value::Object(outline(o, depth - 1)));
            }
            Value::Object(o) => {
                out.insert(format!("{k}.keys"), o.keys().cloned().collect());
            }
            scalar => {
                out.insert(k, clean(scalar));
            }
        }
    }
    out
}

/// `COMMAND FILE --method METHOD` within [`TIME_LIMIT`], as [`run_json_csv`] runs it, every
/// exact method of its report proved: the one run of the method goldens (`solve`, `migrate`).
fn run_method_proved(
    dir: &Path,
    table: &str,
    command: &str,
    file: &str,
    method: &str,
) -> (Value, PathBuf) {
    let args = [
        command,
        file,
        "--method",
        method,
        "--time-limit",
        TIME_LIMIT,
    ];
    let (report, table) = run_json_csv(dir, table, &args);
    assert_proved(&report);
    (report, table)
}

/// Asserts that every exact method of a report proved its optimum (no solver limit reached),
/// so the snapshot does not depend on the machine's speed.
fn assert_proved(report: &Value) {
    fn walk(v: &Value, at: &str) {
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    if k == "status" || k == "solver_status" || k == "split_status" {
                        if let Some(s) = x.as_str() {
                            assert!(
                                !s.contains("limit") && s != "too_large",
                                "{at}.{k} = {s}: a solver limit was reached"
                            );
                        }
                    }
                    walk(x, &format!("{at}.{k}"));
                }
            }
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| walk(x, &format!("{at}[{i}]"))),
            _ => {}
        }
    }
    walk(report, "");
}

/// `solve FILE --method M --json --csv T` for every method: one JSON object (method -> report)
/// and one text (the CSV of each method under a `# method` line; methods whose `solve` writes
/// no table say so).
fn solve_all(dir: &Path, file: &str, methods: &[&str]) -> (Value, String) {
    let mut reports = Map::new();
    let mut tables = String::new();
    for (i, method) in methods.iter().enumerate() {
        let (report, table) = run_method_proved(dir, &format!("solve-{i}"), "solve", file, method);
        reports.insert(method.to_string(), report);
        tables.push_str(&format!("# {method}\n"));
        if table.exists() {
            tables.push_str(&clean_csv(&table));
        } else {
            tables.push_str("(no file written)\n");
        }
    }
    (Value::Object(reports), tables)
}

/// `compare FILE [--methods ...] --json --csv T`: the JSON and the cleaned CSV.
fn compare(dir: &Path, file: &str, methods: Option<&str>) -> (Value, String) {
    let mut args = vec!["compare", file, "--time-limit", TIME_LIMIT];
    if let Some(m) = methods {
        args.extend(["--methods", m]);
    }
    let (report, table) = run_json_csv(dir, "compare", &args);
    assert_proved(&report);
    (report, clean_csv(&table))
}

/// `write-lp FILE -o OUT`: the LP text, numbers rounded.
fn write_lp(dir: &Path, file: &str) -> String {
    write_lp_model(dir, file, &[])
}

/// `write-lp FILE -o OUT` with more arguments (`--model fixed`).
fn write_lp_model(dir: &Path, file: &str, extra: &[&str]) -> String {
    let lp = dir.join("model.lp");
    let mut args = vec!["write-lp", file, "-o", arg(&lp)];
    args.extend(extra);
    run(&args);
    clean_lp(&lp)
}

/// Pins `write-lp` of each (snapshot name, file, more arguments).
fn assert_write_lps(dir: &Path, cases: &[(&str, &str, &[&str])]) {
    for (name, file, extra) in cases {
        insta::assert_snapshot!(*name, write_lp_model(dir, file, extra));
    }
}

/// `generate PROBLEM --print-config --preset P` for each preset: preset -> configuration.
fn print_configs(problem: &str, presets: &[&str]) -> Value {
    let mut configs = Map::new();
    for preset in presets {
        let c = run_json(&["generate", problem, "--print-config", "--preset", preset]);
        configs.insert(preset.to_string(), c);
    }
    Value::Object(configs)
}

/// `generate PROBLEM --preset P --seed S -o FILE`: the file.
/// `generate PROBLEM [--preset P] --seed S -o FILE` (no `--preset` when `preset` is empty:
/// zipmoe-pool has none).
fn generate(dir: &Path, problem: &str, preset: &str, seed: u64) -> PathBuf {
    let file = dir.join(format!("{problem}-{preset}-{seed}.json"));
    let seed = seed.to_string();
    let mut args = vec!["generate", problem, "--seed", &seed, "-o", arg(&file)];
    if !preset.is_empty() {
        args.extend(["--preset", preset]);
    }
    run(&args);
    file
}

/// `generate PROBLEM --config CFG --seed S -o FILE` from a configuration value.
fn generate_from(dir: &Path, problem: &str, name: &str, config: &Value, seed: u64) -> PathBuf {
    let cfg = dir.join(format!("{name}-config.json"));
    std::fs::write(&cfg, serde_json::to_vec_pretty(config).unwrap()).unwrap();
    let file = dir.join(format!("{name}.json"));
    run(&[
        "generate",
        problem,
        "--config",
        arg(&cfg),
        "--seed",
        &seed.to_string(),
        "-o",
        arg(&file),
    ]);
    file
}

/// The generated trace of the cache commands: Mixtral-8x7B's preset (E = 8, K = 2) cut to 2
/// layers and 2 sequences of 20 tokens (`--print-config`, edited, `--config`), seed 1.
fn small_trace(dir: &Path) -> (Value, PathBuf) {
    let mut config = run_json(&[
        "generate",
        "cache-trace",
        "--print-config",
        "--preset",
        "mixtral-8x7b",
    ]);
    config["layers"] = json!(2);
    config["sequences"] = json!(2);
    config["tokens_per_sequence"] = json!(20);
    let file = generate_from(dir, "cache-trace", "trace", &config, 1);
    (config, file)
}

/// The offline instances of the cache commands, from [`small_trace`]: layer 0, C = 4, the
/// first 12 tokens, J = 1, M = 4; and layer 1, C = 4, 16 tokens, the mass rule tau = 0.8.
fn offline_instances(dir: &Path, trace: &Path) -> (PathBuf, PathBuf) {
    let rank = dir.join("offline-rank.json");
    run(&[
        "offline",
        arg(trace),
        "--layer",
        "0",
        "--capacity",
        "4",
        "--tokens",
        "12",
        "--top-j",
        "1",
        "--max-rank",
        "4",
        "-o",
        arg(&rank),
    ]);
    let mass = dir.join("offline-mass.json");
    run(&[
        "offline",
        arg(trace),
        "--layer",
        "1",
        "--capacity",
        "4",
        "--tokens",
        "16",
        "--top-j",
        "0",
        "--min-mass",
        "0.8",
        "-o",
        arg(&mass),
    ]);
    (rank, mass)
}

// ---------------------------------------------------------------------------------------------
// The committed instances.

/// Every committed preset instance is what `generate` makes today, byte for byte (the
/// instances/README's commands): the committed files are goldens of the generators.
#[test]
fn committed_instances_regenerate_byte_for_byte() {
    let dir = scratch("golden-regenerate");
    for (problem, preset, file) in [
        ("slimcaching", "tiny", "slimcaching-tiny-1.json"),
        ("slimcaching", "small", "slimcaching-small-1.json"),
        ("prism", "tiny", "prism-tiny-1.json"),
        ("prism", "small", "prism-small-1.json"),
        ("prism", "testbed-deepseek", "prism-testbed-deepseek-1.json"),
        ("zipmoe", "tiny", "zipmoe-tiny-1.json"),
        ("zipmoe", "small", "zipmoe-small-1.json"),
        ("zipmoe", "deepseek-orin", "zipmoe-deepseek-orin-1.json"),
        ("zipmoe-pool", "", "zipmoe-pool-1.json"),
    ] {
        let made = std::fs::read(generate(&dir, problem, preset, 1)).unwrap();
        let committed = std::fs::read(Path::new(ROOT).join("instances").join(file)).unwrap();
        assert!(
            made == committed,
            "generate {problem} --preset {preset} --seed 1 != {file}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// SlimCaching (paper 000).

/// The goldens every problem with methods has: `generate` at its presets (`--print-config` of
/// each, three instance files), `solve` with every method on the tiny committed instance (JSON
/// and CSV), `compare` on the tiny and small ones (each proved optimal), `write-lp`.
fn problem_goldens(problem: &str, presets: &[&str], generated: [(&str, u64); 3], methods: &[&str]) {
    let dir = scratch(&format!("golden-{problem}"));
    let tiny = format!("instances/{problem}-tiny-1.json");
    let small = format!("instances/{problem}-small-1.json");
    let mut made = serde_json::Map::new();
    made.insert("print_config".into(), print_configs(problem, presets));
    for (preset, seed) in generated {
        made.insert(
            format!("{preset}-seed{seed}"),
            file_summary(&generate(&dir, problem, preset, seed)),
        );
    }
    insta::assert_json_snapshot!(format!("generate_{problem}"), Value::Object(made));

    let (reports, tables) = solve_all(&dir, &tiny, methods);
    assert_json_and_csv(&format!("solve_{problem}_tiny"), &reports, &tables);

    for (name, file) in [("tiny", &tiny), ("small", &small)] {
        let (report, table) = compare(&dir, file, None);
        assert_eq!(report["reference"]["kind"], "optimum", "{file}");
        assert_json_and_csv(&format!("compare_{problem}_{name}"), &report, &table);
    }

    insta::assert_snapshot!(format!("write_lp_{problem}_tiny"), write_lp(&dir, &tiny));
}

#[test]
fn slimcaching() {
    problem_goldens(
        "slimcaching",
        &["tiny", "small", "paper"],
        [("tiny", 1), ("small", 1), ("tiny", 2)],
        &SLIMCACHING_METHODS,
    );
}

// ---------------------------------------------------------------------------------------------
// Prism (paper 001), with `eplb` and `migrate`.

#[test]
fn prism() {
    problem_goldens(
        "prism",
        &["tiny", "small", "testbed-mixtral", "testbed-deepseek"],
        [("tiny", 1), ("small", 1), ("testbed-mixtral", 1)],
        &[
            "milp",
            "exhaustive",
            "prism",
            "uniform",
            "redundance",
            "smartmoe",
            "eplb",
        ],
    );
}

/// `eplb` on DeepSeek's published example, with the flags of EPLB's README.
#[test]
fn eplb() {
    let dir = scratch("golden-eplb");
    let mut args = vec!["eplb", "--weights", EPLB_EXAMPLE];
    args.extend(EPLB_EXAMPLE_FLAGS);
    let (report, table) = run_json_csv(&dir, "eplb", &args);
    assert_json_and_csv("eplb_readme_example", &report, &clean_csv(&table));
}

/// `migrate` on prism-tiny-1 (its default planner, Prism's Alg. 1, finds no feasible count
/// there: the error is pinned; the MILP planner runs) and on prism-small-1 (migrations happen).
#[test]
fn migrate() {
    let dir = scratch("golden-migrate");
    let failed = run_failing(&["migrate", "instances/prism-tiny-1.json", "--json"]);
    insta::assert_json_snapshot!("migrate_prism_tiny_default_error", failed);
    for (name, file, method) in [
        ("prism_tiny_milp", "instances/prism-tiny-1.json", "milp"),
        ("prism_small_prism", "instances/prism-small-1.json", "prism"),
    ] {
        let (report, table) = run_method_proved(&dir, name, "migrate", file, method);
        assert_json_and_csv(&format!("migrate_{name}"), &report, &clean_csv(&table));
    }
}

// ---------------------------------------------------------------------------------------------
// ZipMoE (paper 003): a layer's schedule, and the cache-pool plan.

#[test]
fn zipmoe() {
    problem_goldens(
        "zipmoe",
        &["tiny", "small", "qwen-orin", "deepseek-orin", "switch-orin"],
        [("tiny", 1), ("small", 1), ("qwen-orin", 1)],
        &[
            "milp",
            "exhaustive",
            "cache-affinity",
            "cache-affinity-text",
            "fifo",
            "type1-first",
            "random",
        ],
    );
}

/// `generate zipmoe-pool` (the default `--print-config`, passed back with `--config`) and
/// `plan` on the committed planning instance and on synthetic counts (`--generate`).
#[test]
fn zipmoe_pool() {
    let dir = scratch("golden-zipmoe-pool");
    let config = run_json(&["generate", "zipmoe-pool", "--print-config"]);
    let instance = generate_from(&dir, "zipmoe-pool", "pool", &config, 1);
    let mut small = config.clone();
    small["synthetic"]["experts"] = json!(16);
    small["synthetic"]["top_k"] = json!(2);
    small["synthetic"]["prompts"] = json!(40);
    let small_instance = generate_from(&dir, "zipmoe-pool", "pool-small", &small, 2);
    let generated = json!({
        "print_config": config,
        "default-seed1": file_summary(&instance),
        "16x2-seed2": file_summary(&small_instance),
    });
    insta::assert_json_snapshot!("generate_zipmoe_pool", generated);

    for (name, source) in [
        ("pool_1", vec!["instances/zipmoe-pool-1.json"]),
        ("pool_small", vec![arg(&small_instance)]),
        ("generate_3", vec!["--generate", "3"]),
    ] {
        let mut args = vec!["plan"];
        args.extend(source);
        let (report, table) = run_json_csv(&dir, name, &args);
        assert_json_and_csv(&format!("plan_{name}"), &report, &clean_csv(&table));
    }
}

// ---------------------------------------------------------------------------------------------
// Expert caches over token streams (papers 002 and 004).

/// `generate cache-trace` (every preset's configuration; the small trace), and the trace
/// commands on it: `replay`, `route`, `pareto`, `offline`, `tpot`.
#[test]
fn cache_trace() {
    let dir = scratch("golden-cache-trace");
    let configs = print_configs(
        "cache-trace",
        &[
            "mixtral-8x7b",
            "phi-3.5-moe",
            "deepseek-v2-lite",
            "qwen1.5-moe",
            "olmoe",
            "kimi",
            "switch",
        ],
    );
    let (config, trace) = small_trace(&dir);
    let mut switch = config.clone();
    switch["model"] = json!("switch-like");
    switch["experts"] = json!(4);
    switch["top_k"] = json!(1);
    switch["layers"] = json!(1);
    switch["sequences"] = json!(2);
    switch["tokens_per_sequence"] = json!(4);
    switch["hidden_dim"] = json!(8);
    let tiny_trace = generate_from(&dir, "cache-trace", "tiny-trace", &switch, 2);
    let generated = json!({
        "print_config": configs,
        "small_config": config,
        "small-seed1": file_summary(&trace),
        "tiny_config": switch,
        "tiny-seed2": file_summary(&tiny_trace),
    });
    insta::assert_json_snapshot!("generate_cache_trace", generated);
    let trace = arg(&trace);

    // replay: every policy per layer, and one pool over both layers.
    for (name, capacity, scope) in [("per_layer_c4", "4", "per-layer"), ("pool_c6", "6", "pool")] {
        let (report, table) = run_json_csv(
            &dir,
            &format!("replay-{name}"),
            &[
                "replay",
                trace,
                "--capacity",
                capacity,
                "--scope",
                scope,
                "--policies",
                "all",
            ],
        );
        assert_json_and_csv(&format!("replay_{name}"), &report, &clean_csv(&table));
    }
    // mrc: LRU and Belady at every capacity, per layer and in one pool.
    for (name, scope) in [("per_layer", "per-layer"), ("pool", "pool")] {
        let (report, table) = run_json_csv(
            &dir,
            &format!("mrc-{name}"),
            &["mrc", trace, "--scope", scope],
        );
        assert_json_and_csv(&format!("mrc_{name}"), &report, &clean_csv(&table));
    }
    let some = run_json(&[
        "replay",
        trace,
        "--capacity",
        "3",
        "--policies",
        "lru,belady,smoe-window:n=4,zipmoe-freq",
        "--json",
    ]);
    insta::assert_json_snapshot!("replay_some_policies_c3", some);

    // route: each router family, per layer; one in a pool.
    let mut routes = Map::new();
    for (router, scope, capacity) in [
        ("top-k", "per-layer", "4"),
        ("pruning:h=1", "per-layer", "4"),
        ("max-rank:m=4,j=1", "per-layer", "4"),
        ("cumsum:p=0.9,j=1", "per-layer", "4"),
        ("cache-prior:lambda=0.5,j=1", "per-layer", "4"),
        ("max-rank:m=3,j=1", "pool", "6"),
    ] {
        let report = run_json(&[
            "route",
            trace,
            "--router",
            router,
            "--capacity",
            capacity,
            "--scope",
            scope,
            "--json",
        ]);
        routes.insert(format!("{router} {scope} C={capacity}"), report);
    }
    insta::assert_json_snapshot!("route", Value::Object(routes));

    // pareto: a few routers at two capacities (JSON, points and baselines CSV); the default
    // knob grid at one capacity (points CSV only: 106 points).
    let (report, points) = run_json_csv(
        &dir,
        "points",
        &[
            "pareto",
            trace,
            "--capacities",
            "2,4",
            "--routers",
            "top-k,pruning:h=1,max-rank:m=4,j=1,cumsum:p=0.9,j=1,cache-prior:lambda=0.5,j=1",
        ],
    );
    assert_json_and_csv("pareto_routers", &report, &clean_csv(&points));
    insta::assert_snapshot!(
        "pareto_routers_baselines_csv",
        clean_csv(&dir.join("points-baselines.csv"))
    );
    let grid = dir.join("grid.csv");
    run(&["pareto", trace, "--capacities", "4", "--csv", arg(&grid)]);
    insta::assert_snapshot!("pareto_default_grid_c4_csv", clean_csv(&grid));

    // offline: the written cache-offline instances.
    let (rank, mass) = offline_instances(&dir, Path::new(trace));
    let written = json!({
        "layer0-c4-t12-j1-m4": file_summary(&rank),
        "layer1-c4-t16-j0-tau0.8": file_summary(&mass),
    });
    insta::assert_json_snapshot!("offline_written", written);

    // tpot: one alpha (defaults; then another split and predictor), and eq. (5)'s selection.
    let mut runs = Map::new();
    for (name, extra) in [
        ("defaults c8", vec!["--capacity", "8"]),
        (
            "c6 alpha0.3 earliest_finish previous-token prefetch2",
            vec![
                "--capacity",
                "6",
                "--alpha",
                "0.3",
                "--split",
                "earliest_finish",
                "--predictor",
                "previous-token",
                "--prefetch",
                "2",
            ],
        ),
        (
            "c10 optimal split, costs",
            vec![
                "--capacity",
                "10",
                "--split",
                "optimal",
                "--load-s",
                "0.004",
                "--cpu-s",
                "0.003",
            ],
        ),
    ] {
        let mut args = vec!["tpot", trace];
        args.extend(extra);
        args.push("--json");
        runs.insert(name.to_string(), run_json(&args));
    }
    insta::assert_json_snapshot!("tpot", Value::Object(runs));
    let (report, table) = run_json_csv(
        &dir,
        "alpha",
        &[
            "tpot",
            trace,
            "--capacity",
            "8",
            "--alphas",
            "0,0.1,0.2,0.3,0.4",
            "--budget-s",
            "0.011",
        ],
    );
    assert_json_and_csv("tpot_alphas", &report, &clean_csv(&table));
}

/// `solve`, `compare` and `write-lp` of cache-offline instances made with `offline`.
/// `export`: layer 0 of the small trace as libCacheSim csv (whole), the pooled stream as
/// oracleGeneral (its size and SHA-256).
#[test]
fn export_libcachesim() {
    let dir = scratch("golden-export");
    let (_, trace) = small_trace(&dir);
    let (csv, bin) = (dir.join("layer0.csv"), dir.join("pool.oracleGeneral"));
    run(&[
        "export",
        arg(&trace),
        "--format",
        "csv",
        "--layer",
        "0",
        "-o",
        arg(&csv),
    ]);
    insta::assert_snapshot!(
        "export_libcachesim_layer0_csv",
        std::fs::read_to_string(&csv).unwrap()
    );
    run(&["export", arg(&trace), "-o", arg(&bin)]);
    let bytes = std::fs::read(&bin).unwrap();
    insta::assert_json_snapshot!(
        "export_libcachesim_pool_oracle_general",
        json!({"bytes": bytes.len(), "sha256": sha256(&bytes)})
    );
}

#[test]
fn cache_offline() {
    let dir = scratch("golden-cache-offline");
    let (_, trace) = small_trace(&dir);
    let (rank, mass) = offline_instances(&dir, &trace);
    let (rank, mass) = (arg(&rank), arg(&mass));

    let methods = [
        "milp-fixed",
        "milp-flexible",
        "exhaustive-fixed",
        "exhaustive-flexible",
        "belady",
        "lru",
        "top-k",
        "max-rank:m=4,j=1",
        "cumsum:p=0.9,j=1",
        "cache-prior:lambda=0.5,j=1",
    ];
    // `solve --csv` of a cache-offline instance writes no table today (pinned as such).
    let (reports, tables) = solve_all(&dir, rank, &methods);
    assert_json_and_csv("solve_cache_offline_rank", &reports, &tables);

    for (name, file, methods) in [
        ("rank_default", rank, None),
        (
            "rank_routers",
            rank,
            Some(concat!(
                "milp-fixed,milp-flexible,belady,lru,",
                "max-rank:m=4,j=1,cumsum:p=0.9,j=1,cache-prior:lambda=0.5,j=1"
            )),
        ),
        ("mass_default", mass, None),
    ] {
        let (report, table) = compare(&dir, file, methods);
        insta::assert_json_snapshot!(format!("compare_cache_offline_{name}"), report);
        insta::assert_snapshot!(format!("compare_cache_offline_{name}_csv"), table);
    }

    assert_write_lps(
        &dir,
        &[
            ("write_lp_cache_offline_rank", rank, &[]),
            ("write_lp_cache_offline_mass", mass, &[]),
            (
                "write_lp_cache_offline_rank_fixed",
                rank,
                &["--model", "fixed"],
            ),
        ],
    );
}

/// SMoE layers (paper 004): `generate`, `solve` (routing + split), `compare`, `write-lp`.
#[test]
fn smoe() {
    let dir = scratch("golden-smoe");
    // Seeds where the methods differ: on tiny seed 0 the printed Alg. 1 and top-k lose hits;
    // on tiny-per-expert seed 4 the splits reach three different objectives.
    let uniform = generate(&dir, "smoe", "tiny", 0);
    let per_expert = generate(&dir, "smoe", "tiny-per-expert", 4);
    let generated = json!({
        "print_config": print_configs("smoe", &["tiny", "tiny-per-expert", "qwen2-57b"]),
        "tiny-seed0": file_summary(&uniform),
        "tiny-per-expert-seed4": file_summary(&per_expert),
        "qwen2-57b-seed1": file_summary(&generate(&dir, "smoe", "qwen2-57b", 1)),
    });
    insta::assert_json_snapshot!("generate_smoe", generated);
    let (uniform, per_expert) = (arg(&uniform), arg(&per_expert));

    // `solve --csv` of an SMoE layer writes no table today (pinned as such).
    let routings = ["top-k", "smoe", "smoe-literal", "exhaustive", "milp"];
    let (reports, tables) = solve_all(&dir, uniform, &routings);
    assert_json_and_csv("solve_smoe_tiny0_routings", &reports, &tables);
    let combos = [
        "top-k+alg2",
        "smoe-literal+cpu",
        "smoe+alg2",
        "smoe+earliest-finish",
        "smoe+optimal",
        "smoe+milp",
        "smoe+load",
        "smoe+cpu",
        "milp+optimal",
        "exhaustive+milp",
    ];
    let (reports, _) = solve_all(&dir, per_expert, &combos);
    insta::assert_json_snapshot!("solve_smoe_per_expert4_splits", reports);

    for (name, file) in [("tiny0", uniform), ("per_expert4", per_expert)] {
        let (report, table) = compare(&dir, file, None);
        assert_json_and_csv(&format!("compare_smoe_{name}"), &report, &table);
    }

    assert_write_lps(
        &dir,
        &[
            ("write_lp_smoe_tiny0", uniform, &[]),
            ("write_lp_smoe_per_expert4", per_expert, &[]),
            ("write_lp_smoe_tiny0_split", uniform, &["--model", "split"]),
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Claims and their verification.

#[test]
fn claims() {
    insta::assert_json_snapshot!("claims", run_json(&["claims", "--json"]));
}

/// `verify --paper P` for each paper with a tiny budget (3 generated instances per claim, one
/// search of 10 neighbours, one worker): claims.csv, instances.csv and the counterexamples
/// written. (`--paper` rather than one `--claim` per paper: it covers every claim and stays
/// under a second per paper.)
#[test]
fn verify_papers() {
    let dir = scratch("golden-verify");
    let mut written = Map::new();
    for paper in PAPERS {
        let out = dir.join(paper);
        verify_paper(
            paper,
            "10",
            &["--jobs", "1", "--time-limit", TIME_LIMIT],
            &out,
        );
        // Every check of the run restates itself consistently (`Check::inconsistencies`).
        let journal = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
        for line in journal.lines() {
            let r: moe_opt::verify::Record = serde_json::from_str(line).unwrap();
            let found = r.check.inconsistencies();
            assert!(found.is_empty(), "{} {}: {found:?}", r.claim, r.index);
        }
        let claims = clean_csv(&out.join("claims.csv"));
        let instances = clean_csv(&out.join("instances.csv"));
        // A solver limit would make an instance inconclusive for the wrong reason.
        assert!(!instances.contains("time_limit"), "{paper}");
        let prefix = &paper[..3];
        insta::assert_snapshot!(format!("verify_{prefix}_claims_csv"), claims);
        insta::assert_snapshot!(format!("verify_{prefix}_instances_csv"), instances);
        let mut files = Map::new();
        let cx = out.join("counterexamples");
        if cx.exists() {
            let mut names: Vec<PathBuf> = std::fs::read_dir(&cx)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            names.sort();
            for f in names {
                let name = f.file_name().unwrap().to_string_lossy().to_string();
                files.insert(name, file_summary(&f));
            }
        }
        written.insert(paper.to_string(), Value::Object(files));
    }
    insta::assert_json_snapshot!("verify_counterexamples_written", Value::Object(written));
}

/// `verify --claim ID --instance FILE` on every committed counterexample (its file name is
/// the claim's id with the problem's `/` as `-`).
#[test]
fn verify_committed_counterexamples() {
    let folder = Path::new(ROOT).join("instances/counterexamples");
    let mut files: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 13, "{files:?}");
    let mut checks = Map::new();
    for name in files {
        let stem = name.trim_end_matches(".json");
        let (problem, rest) = stem.split_once('-').unwrap();
        let claim = format!("{problem}/{rest}");
        let path = format!("instances/counterexamples/{name}");
        let check = run_json(&[
            "verify",
            "--json",
            "--claim",
            &claim,
            "--instance",
            &path,
            "--time-limit",
            TIME_LIMIT,
        ]);
        assert_eq!(check["outcome"], "fail", "{claim}: {check}");
        let parsed: moe_opt::claims::Check = serde_json::from_value(check.clone()).unwrap();
        assert_eq!(parsed.inconsistencies(), Vec::<String>::new(), "{claim}");
        checks.insert(claim, check);
    }
    insta::assert_json_snapshot!("verify_committed_counterexamples", Value::Object(checks));
}

// ---------------------------------------------------------------------------------------------
// Sweeps.

/// A sweep spec: 2 seeds, 1 axis value, every method of the problem that runs on the preset.
fn sweep_spec(dir: &Path, name: &str, body: &str) -> PathBuf {
    let spec = dir.join(format!("{name}.toml"));
    std::fs::write(&spec, body).unwrap();
    spec
}

fn sweep(spec: &Path, out: &Path, shard: Option<&str>) {
    let mut args = vec!["sweep", arg(spec), "--out", arg(out), "--jobs", "1"];
    if let Some(s) = shard {
        args.extend(["--shard", s]);
    }
    run(&args);
}

/// `sweep` on tiny specs of each problem (results.csv, sweep.json), and `merge` of two shards:
/// the same bytes as the unsharded run.
#[test]
fn sweep_and_merge() {
    let dir = scratch("golden-sweep");
    let specs = [
        (
            "prism",
            // instances/sweeps/prism-tiny-small.toml cut to 2 seeds and one axis value.
            "problem = \"prism\"\npreset = \"tiny\"\nseeds = 2\n\
             methods = [\"milp\", \"prism\", \"uniform\", \"redundance\", \"smartmoe\", \"eplb\"]\n\
             time_limit_s = 60\n\n[[axes]]\npath = \"memory.model_fraction\"\nvalues = [0.3]\n",
        ),
        (
            "slimcaching",
            "problem = \"slimcaching\"\npreset = \"tiny\"\nseeds = [1, 2]\n\
             methods = [\"milp\", \"exhaustive\", \"successive-maxconv\", \"greedy\", \"lfu\", \
             \"random\", \"u-shaped\"]\ntime_limit_s = 60\n\n[[axes]]\n\
             path = \"storage.library_fraction\"\nvalues = [0.4]\n",
        ),
        (
            "zipmoe",
            "problem = \"zipmoe\"\npreset = \"tiny\"\nseeds = 2\n\
             methods = [\"exhaustive\", \"milp\", \"cache-affinity\", \"cache-affinity-text\", \
             \"fifo\", \"type1-first\", \"random\"]\ntime_limit_s = 60\n\n[[axes]]\n\
             path = \"threads\"\nvalues = [2]\n",
        ),
    ];
    for (name, body) in specs {
        let spec = sweep_spec(&dir, name, body);
        let out = dir.join(format!("{name}-all"));
        sweep(&spec, &out, None);
        let results = clean_csv(&out.join("results.csv"));
        assert!(!results.contains("time_limit"), "{name}");
        insta::assert_snapshot!(format!("sweep_{name}_results_csv"), results);
        let meta: Value = serde_json::from_slice(&std::fs::read(out.join("sweep.json")).unwrap())
            .map(clean)
            .unwrap();
        insta::assert_json_snapshot!(format!("sweep_{name}_sweep_json"), meta);

        // Two shards merged: byte-identical to the unsharded run.
        let (a, b, merged) = (
            dir.join(format!("{name}-0")),
            dir.join(format!("{name}-1")),
            dir.join(format!("{name}-merged")),
        );
        sweep(&spec, &a, Some("0/2"));
        sweep(&spec, &b, Some("1/2"));
        run(&["merge", arg(&a), arg(&b), "--out", arg(&merged)]);
        for file in ["results.csv", "results.jsonl", "sweep.json"] {
            assert!(
                std::fs::read(out.join(file)).unwrap() == std::fs::read(merged.join(file)).unwrap(),
                "{name}: merged {file} differs from the unsharded run's"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Imports from the real data (optional).

/// `import` of every problem from the smallest real files, `plan --counts` and `replay` of the
/// imported log. The data are not part of the repository: without them the test returns
/// early (and says so on stderr), as the other tests that read them do, so that a clone
/// without ../shared still passes; the snapshots are then neither checked nor removed.
#[test]
fn import_real_data() {
    let (Some(counts), Some(log)) = (
        shared_data("activation-counts/switch.json.gz"),
        shared_data("token-traces/switch_base8_encoder_top1.jsonl.gz"),
    ) else {
        return;
    };
    let dir = scratch("golden-import");
    let (counts, log) = (arg(&counts), arg(&log));
    let mut written = Map::new();
    for (problem, extra) in [
        (
            "slimcaching",
            vec![
                "--servers",
                "2",
                "--users",
                "3",
                "--local-experts",
                "4",
                "--storage-bytes",
                "100000000",
                "--seed",
                "1",
            ],
        ),
        ("prism", vec!["--seed", "1"]),
        ("zipmoe", vec![]),
        ("zipmoe-pool", vec![]),
    ] {
        let file = dir.join(format!("{problem}.json"));
        let mut args = vec!["import", problem, "--counts", counts, "-o", arg(&file)];
        args.extend(extra);
        run(&args);
        written.insert(problem.to_string(), file_summary(&file));
    }
    let trace = dir.join("trace.json");
    run(&["import", "cache-trace", "--log", log, "-o", arg(&trace)]);
    written.insert("cache-trace".into(), file_summary(&trace));
    insta::assert_json_snapshot!("import_switch", Value::Object(written));

    let zipmoe = dir.join("zipmoe.json");
    let (report, table) = compare(&dir, arg(&zipmoe), Some("cache-affinity,fifo,random"));
    insta::assert_json_snapshot!("import_switch_zipmoe_compare", report);
    insta::assert_snapshot!("import_switch_zipmoe_compare_csv", table);
    let plan = run_json(&["plan", "--counts", counts, "--json"]);
    insta::assert_json_snapshot!("import_switch_plan_counts", plan);
    let replay = run_json(&["replay", arg(&trace), "--capacity", "4", "--json"]);
    insta::assert_json_snapshot!("import_switch_replay_c4", replay);
}
