//! The command line as a user meets it: generate, solve, compare, write-lp and the errors.
//!
//! JSON outputs are snapshotted with the wall-clock fields redacted; error cases assert the
//! exit code 2 and a single `error:` line on stderr that names the file and the field.

use std::path::PathBuf;

use assert_cmd::Command;

mod common;
use common::{bin, json_with_csv, moe_opt, ok, refused, scratch, SLIMCACHING_METHODS};

fn generate(dir: &std::path::Path, preset: &str, seed: u64) -> PathBuf {
    let file = dir.join(format!("{preset}-{seed}.json"));
    moe_opt()
        .args(["generate", "slimcaching", "--preset", preset, "--seed"])
        .arg(seed.to_string())
        .arg("-o")
        .arg(&file)
        .assert()
        .success();
    file
}

/// Rounds every float to 9 significant digits so snapshots do not depend on the last bits, and
/// redacts the wall-clock fields (`runtime_s`, `solve_time_s`).
fn rounded(mut v: serde_json::Value) -> serde_json::Value {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                let x = n.as_f64().unwrap();
                let r: f64 = format!("{x:.8e}").parse().unwrap();
                *v = serde_json::json!(r);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(walk),
            serde_json::Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    if ["runtime_s", "solve_time_s"].contains(&k.as_str()) && !x.is_null() {
                        *x = serde_json::json!("[runtime]");
                    } else {
                        walk(x);
                    }
                }
            }
            _ => {}
        }
    }
    walk(&mut v);
    v
}

/// Runs a command that must be refused as bad input and returns its one stderr line.
fn error_line(cmd: &mut Command) -> String {
    let text = refused(cmd);
    assert_eq!(text.lines().count(), 1, "one line on stderr, got: {text}");
    text
}

#[test]
fn generate_is_deterministic_per_seed() {
    let dir = scratch("generate");
    let a = std::fs::read(generate(&dir, "tiny", 3)).unwrap();
    let b_file = dir.join("again.json");
    moe_opt()
        .args([
            "generate",
            "slimcaching",
            "--preset",
            "tiny",
            "--seed",
            "3",
            "-o",
        ])
        .arg(&b_file)
        .assert()
        .success();
    assert_eq!(a, std::fs::read(b_file).unwrap());
    let c = std::fs::read(generate(&dir, "tiny", 4)).unwrap();
    assert_ne!(a, c);
}

#[test]
fn compare_json_rates_every_method_against_the_proved_optimum() {
    let dir = scratch("compare");
    let file = generate(&dir, "tiny", 1);
    let text = ok(moe_opt().arg("compare").arg(&file).arg("--json"));
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["reference"]["kind"], "optimum");
    let names: Vec<&str> = report["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    assert_eq!(names, SLIMCACHING_METHODS);
    for m in report["methods"].as_array().unwrap() {
        let ratio = m["ratio"].as_f64().unwrap();
        assert!(ratio <= 1.0 + 1e-6, "{}: ratio {ratio}", m["method"]);
    }
    insta::assert_json_snapshot!("compare_tiny_1", rounded(report));
}

#[test]
fn solve_json_reports_placement_and_users() {
    let dir = scratch("solve");
    let file = generate(&dir, "tiny", 2);
    let text = ok(moe_opt()
        .arg("solve")
        .arg(&file)
        .args(["--method", "successive-dp", "--json"]));
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    insta::assert_json_snapshot!("solve_tiny_2_successive_dp", rounded(report));
}

#[test]
fn text_compare_names_every_method_and_the_reference() {
    let dir = scratch("text");
    let file = generate(&dir, "small", 1);
    let text = ok(moe_opt().arg("compare").arg(&file));
    assert!(text.contains("proved optimum F* ="), "{text}");
    for name in ["milp", "greedy", "successive-maxconv", "lfu", "u-shaped"] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
}

/// `--format mps` is HiGHS's writer; `--model` is refused where the problem has no such MILP.
#[test]
fn write_lp_writes_mps_and_names_a_refused_model() {
    let dir = scratch("mps");
    let file = generate(&dir, "tiny", 1);
    let mps = dir.join("p1.mps");
    moe_opt()
        .args(["write-lp", "--format", "mps", "-o"])
        .arg(&mps)
        .arg(&file)
        .assert()
        .success();
    let text = std::fs::read_to_string(&mps).unwrap();
    for section in ["OBJSENSE", "ROWS", "COLUMNS", "RHS", "BOUNDS", "ENDATA"] {
        assert!(text.contains(section), "{section} missing from:\n{text}");
    }
    let out = moe_opt()
        .args(["write-lp", "--model", "split", "-o"])
        .arg(dir.join("x.lp"))
        .arg(&file)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.starts_with("error: --model: slimcaching has one MILP"),
        "{stderr}"
    );
    assert!(!dir.join("x.lp").exists());
}

#[test]
fn write_lp_writes_a_cplex_lp_file() {
    let dir = scratch("lp");
    let file = generate(&dir, "tiny", 1);
    let lp = dir.join("p1.lp");
    moe_opt()
        .arg("write-lp")
        .arg(&file)
        .arg("-o")
        .arg(&lp)
        .assert()
        .success();
    let text = std::fs::read_to_string(lp).unwrap();
    assert!(text.starts_with("\\ SlimCaching P1 (18)"));
    assert!(text.contains("\nSubject To\n") && text.contains("\nBinaries\n"));
    assert!(text.ends_with("End\n"));
}

#[test]
fn a_missing_file_is_bad_input() {
    let line = error_line(moe_opt().args(["compare", "/nonexistent/instance.json"]));
    assert!(
        line.starts_with("error: /nonexistent/instance.json: "),
        "{line}"
    );
}

#[test]
fn malformed_json_names_line_and_column() {
    let dir = scratch("malformed");
    let file = dir.join("bad.json");
    std::fs::write(&file, "{\n  \"servers\": [,]\n}\n").unwrap();
    let line = error_line(moe_opt().arg("solve").arg(&file));
    assert!(line.contains("bad.json: line 2, column"), "{line}");
}

#[test]
fn an_invalid_probability_names_the_field() {
    let dir = scratch("invalid");
    let file = generate(&dir, "tiny", 1);
    let mut instance: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    instance["users"][0]["requests"][0]["p"] = serde_json::json!(1.5);
    std::fs::write(&file, serde_json::to_vec(&instance).unwrap()).unwrap();
    let line = error_line(moe_opt().arg("solve").arg(&file));
    assert!(
        line.contains("users[0].requests[0].p: probability 1.5 is outside [0, 1]"),
        "{line}"
    );
}

#[test]
fn an_unknown_method_lists_the_known_ones() {
    let dir = scratch("method");
    let file = generate(&dir, "tiny", 1);
    let line = error_line(
        moe_opt()
            .arg("solve")
            .arg(&file)
            .args(["--method", "simplex"]),
    );
    assert!(line.contains("unknown method `simplex`") && line.contains("successive-maxconv"));
}

#[test]
fn exhaustive_search_refuses_a_large_instance() {
    let dir = scratch("large");
    let file = generate(&dir, "small", 1);
    error_line(
        moe_opt()
            .arg("solve")
            .arg(&file)
            .args(["--method", "exhaustive"]),
    );
}

#[test]
fn compare_and_solve_write_tidy_tables() {
    let dir = scratch("csv");
    let file = generate(&dir, "tiny", 2);
    let table = dir.join("compare.csv");
    ok(moe_opt().arg("compare").arg(&file).arg("--csv").arg(&table));
    let mut reader = csv::Reader::from_path(&table).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    for column in [
        "instance_sha256",
        "reference_kind",
        "method",
        "objective_s",
        "ratio",
    ] {
        assert!(
            header.contains(&column.to_string()),
            "{column} in {header:?}"
        );
    }
    let at = |c: &str| header.iter().position(|h| h == c).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    // One row per method: the tiny instance runs all nine.
    assert_eq!(rows.len(), 9);
    for row in &rows {
        // P1 maximises F: against the proved optimum no ratio exceeds 1.
        assert_eq!(&row[at("reference_kind")], "optimum");
        let ratio: f64 = row[at("ratio")].parse().unwrap_or(0.0);
        assert!(ratio <= 1.0 + 1e-9, "{row:?}");
        if &row[at("method")] == "milp" {
            assert_eq!(&row[at("exact.status")], "optimal");
        }
    }

    let placement = dir.join("placement.csv");
    let report = json_with_csv(moe_opt().arg("solve").arg(&file), &placement);
    let cached: usize = report["placement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_array().unwrap().len())
        .sum();
    // A row per cached expert, as many as the JSON report's placement lists.
    let rows = csv::Reader::from_path(&placement)
        .unwrap()
        .records()
        .count();
    assert_eq!(rows, cached);
}

/// A reader that closes the pipe early (`moe-opt claims --json | head -1`) ends the command
/// quietly with exit code 0; before, the first write panicked ("failed printing to stdout").
#[test]
fn a_closed_standard_output_ends_quietly() {
    for args in [
        &["claims", "--json"][..],
        &["claims"][..],
        &["--version"][..],
    ] {
        // A pipe whose read end is closed before the command starts: every write to it fails
        // with EPIPE, whatever the timing.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(bin())
            .args(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert!(
            out.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The demo walks every problem of the registry that has a demo instance (all but the trace
/// and the pool plan, which have no `compare`), each against a proved optimum, then every
/// registered claim; the re-check commands it prints point at files it kept.
#[test]
fn the_demo_walks_every_problem_and_every_claim() {
    let dir = scratch("demo");
    let text = ok(moe_opt().args(["demo", "--out"]).arg(dir.join("out")));
    for problem in [
        "slimcaching",
        "prism",
        "cache-offline",
        "zipmoe",
        "smoe",
        "balance",
    ] {
        assert!(
            text.contains(&format!("== {problem} (")),
            "{problem} missing:\n{text}"
        );
    }
    // slimcaching, prism, zipmoe and balance name their reference so.
    assert_eq!(text.matches("proved optimum").count(), 4, "{text}");
    let claims = moe_opt().args(["claims", "--json"]).output().unwrap();
    let claims: serde_json::Value = serde_json::from_slice(&claims.stdout).unwrap();
    for claim in claims.as_array().unwrap() {
        let id = claim["id"].as_str().unwrap();
        assert!(text.contains(&format!(" {id} ")), "{id} missing:\n{text}");
    }
    for line in text
        .lines()
        .filter(|l| l.contains("re-check: moe-opt verify"))
    {
        let file = line.rsplit(' ').next().unwrap();
        assert!(std::path::Path::new(file).exists(), "{file}");
    }
}
