//! `moe-opt sweep` / `moe-opt merge` as long runs must behave: the same spec gives the same bytes
//! whatever `--jobs`; an interrupted run resumed ends with the same files as an uninterrupted
//! one; shards merged equal the whole grid; mismatched specs are refused; every ratio against a
//! proved optimum is at most 1 (P1 maximises F).

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("moe-opt")
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moe-opt-sweep-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A 2 x 2 grid of tiny SlimCaching instances, 2 seeds each: 8 cells.
const SPEC: &str = r#"
problem = "slimcaching"
preset = "tiny"
seeds = 2
methods = ["exhaustive", "milp", "successive-maxconv", "greedy", "lfu", "random"]
time_limit_s = 30

[[axes]]
path = "storage.library_fraction"
values = [0.1, 0.3]

[[axes]]
path = "local_experts_per_user"
values = [0, 2]
"#;

fn write_spec(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("spec.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn sweep(spec: &Path, out: &Path, extra: &[&str]) {
    Command::new(bin())
        .arg("sweep")
        .arg(spec)
        .arg("--out")
        .arg(out)
        .args(extra)
        .assert()
        .success();
}

/// Runs a command; asserts its exit code and that stdout + stderr contain every `needle`.
fn expect(cmd: &mut Command, code: i32, needles: &[&str]) {
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(code), "{text}");
    for n in needles {
        assert!(text.contains(n), "{n:?} not in {text:?}");
    }
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn jobs_resume_and_shards_give_the_same_bytes() {
    let dir = scratch("bytes");
    let spec = write_spec(&dir, SPEC);
    let one = dir.join("one");
    let two = dir.join("two");
    sweep(&spec, &one, &["--jobs", "1"]);
    sweep(&spec, &two, &["--jobs", "2"]);
    for f in ["results.csv", "results.jsonl", "sweep.json"] {
        assert_eq!(read(&one, f), read(&two, f), "{f}");
    }
    // 8 cells x 6 methods, plus the header.
    let csv = read(&one, "results.csv");
    assert_eq!(csv.lines().count(), 1 + 8 * 6);

    // Interrupted: keep 3 finished cells and a torn fourth line, then resume.
    let cut = dir.join("cut");
    std::fs::create_dir_all(&cut).unwrap();
    std::fs::copy(one.join("sweep.json"), cut.join("sweep.json")).unwrap();
    let journal = read(&one, "results.jsonl");
    let lines: Vec<&str> = journal.lines().collect();
    let torn = format!(
        "{}\n{}",
        lines[..3].join("\n"),
        &lines[3][..lines[3].len() / 2]
    );
    std::fs::write(cut.join("results.jsonl"), torn).unwrap();
    sweep(&spec, &cut, &["--resume", "--jobs", "2"]);
    for f in ["results.csv", "results.jsonl"] {
        assert_eq!(read(&one, f), read(&cut, f), "{f} after resume");
    }

    // Shards 0/2 and 1/2 merged equal the whole grid; a missing shard is reported.
    let s0 = dir.join("s0");
    let s1 = dir.join("s1");
    sweep(&spec, &s0, &["--shard", "0/2"]);
    sweep(&spec, &s1, &["--shard", "1/2"]);
    assert_eq!(read(&s0, "results.csv").lines().count(), 1 + 4 * 6);
    let merged = dir.join("merged");
    expect(
        Command::new(bin())
            .arg("merge")
            .args([&s0, &s1])
            .arg("--out")
            .arg(&merged),
        0,
        &["8 of 8 cells merged"],
    );
    for f in ["results.csv", "results.jsonl"] {
        assert_eq!(read(&one, f), read(&merged, f), "{f} merged");
    }
    let partial = dir.join("partial");
    expect(
        Command::new(bin())
            .args(["merge"])
            .arg(&s0)
            .arg("--out")
            .arg(&partial),
        0,
        &["missing 4 cells: 1, 3, 5, 7"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ratios_against_a_proved_optimum_are_at_most_one_and_axes_reach_the_instances() {
    let dir = scratch("ratios");
    let spec = write_spec(&dir, SPEC);
    let out = dir.join("out");
    sweep(&spec, &out, &[]);
    let mut reader = csv::Reader::from_path(out.join("results.csv")).unwrap();
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (kind, ratio, method, storage, status) = (
        col("reference_kind"),
        col("ratio"),
        col("method"),
        col("storage.library_fraction"),
        col("solver_status"),
    );
    let mut hashes = std::collections::BTreeMap::new();
    for row in reader.records() {
        let row = row.unwrap();
        // Tiny instances: exhaustive search always proves the optimum.
        assert_eq!(&row[kind], "optimum");
        let r: f64 = row[ratio].parse().unwrap_or(1.0);
        assert!(r <= 1.0 + 1e-9, "ratio {r} above a proved maximum: {row:?}");
        if &row[method] == "exhaustive" {
            assert_eq!(r, 1.0);
        }
        if &row[method] == "milp" {
            assert_eq!(&row[status], "optimal");
            assert!(
                (r - 1.0).abs() < 1e-6,
                "MILP and exhaustive disagree: {row:?}"
            );
        }
        hashes
            .entry(row[storage].to_string())
            .or_insert_with(std::collections::BTreeSet::new)
            .insert(row[col("instance_sha256")].to_string());
    }
    // The storage axis changes the instances: no instance appears under both values.
    let (a, b) = (&hashes["0.1"], &hashes["0.3"]);
    assert!(a.is_disjoint(b));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_specs_and_mismatched_merges_are_refused_with_the_field_named() {
    let dir = scratch("bad");
    let bad_axis = write_spec(
        &dir,
        &SPEC.replace("local_experts_per_user", "local_expert"),
    );
    expect(
        Command::new(bin())
            .arg("sweep")
            .arg(&bad_axis)
            .arg("--out")
            .arg(dir.join("x")),
        2,
        &["spec.toml: axes[1].path", "local_expert"],
    );
    let bad_method = write_spec(&dir, &SPEC.replace("\"lfu\"", "\"lru\""));
    expect(
        Command::new(bin())
            .arg("sweep")
            .arg(&bad_method)
            .arg("--out")
            .arg(dir.join("x")),
        2,
        &["lru"],
    );
    expect(
        Command::new(bin()).args(["sweep", "nowhere.toml", "--shard", "2/2"]),
        2,
        &["--shard"],
    );

    // Two specs that differ in their seeds do not merge.
    let a = dir.join("a");
    let b = dir.join("b");
    let spec_a = write_spec(&dir, &SPEC.replace("seeds = 2", "seeds = 1"));
    sweep(&spec_a, &a, &["--shard", "0/2"]);
    let spec_b = write_spec(&dir, &SPEC.replace("seeds = 2", "seeds = [5]"));
    sweep(&spec_b, &b, &["--shard", "1/2"]);
    expect(
        Command::new(bin())
            .arg("merge")
            .args([&a, &b])
            .arg("--out")
            .arg(dir.join("m")),
        2,
        &["spec_sha256", "different specs"],
    );
    // Resuming into a folder of another spec is refused too.
    expect(
        Command::new(bin())
            .arg("sweep")
            .arg(&spec_b)
            .arg("--out")
            .arg(&a)
            .args(["--shard", "0/2", "--resume"]),
        2,
        &["different spec"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_shipped_spec_loads_with_every_cell_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/sweeps");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            // load_spec generates nothing but checks every cell's configuration and method.
            let (spec, _) = moe_opt::sweep::load_spec(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!moe_opt::sweep::cells(&spec).is_empty());
            seen += 1;
        }
    }
    assert!(seen >= 7, "only {seen} specs in {}", dir.display());
}
