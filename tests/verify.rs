//! `moe-opt verify` as a long run must behave: the same seed gives byte-identical outputs
//! whatever `--jobs`; a run killed part-way and resumed ends with the same files as an
//! uninterrupted one (nothing lost, nothing counted twice); a saved counterexample re-checks.

use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{bin, moe_opt, ok, refused, scratch};

fn verify(out: &Path, extra: &[&str]) {
    moe_opt()
        .args(["verify", "--seed", "7", "--out"])
        .arg(out)
        .args(extra)
        .assert()
        .success();
}

/// Every file of a run, by path relative to its folder.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn outputs_are_byte_identical_whatever_the_jobs() {
    let dir = scratch("jobs");
    let args = [
        "--paper",
        "000_e52eafead23a117e.txt",
        "--instances",
        "12",
        "--search",
        "30",
    ];
    verify(&dir.join("one"), &[&args[..], &["--jobs", "1"]].concat());
    verify(&dir.join("two"), &[&args[..], &["--jobs", "2"]].concat());
    let (a, b) = (files(&dir.join("one")), files(&dir.join("two")));
    assert!(a.iter().any(|(p, _)| p == "claims.csv"));
    assert!(a.iter().any(|(p, _)| p == "instances.csv"));
    assert_eq!(a, b);
}

#[test]
fn a_killed_run_resumes_to_the_uninterrupted_result() {
    let dir = scratch("resume");
    let args = [
        "--claim",
        "slimcaching/thm1-ratio",
        "--instances",
        "400",
        "--search",
        "0",
        "--jobs",
        "1",
    ];
    verify(&dir.join("whole"), &args);

    let cut = dir.join("cut");
    let mut child = StdCommand::new(bin())
        .args(["verify", "--seed", "7", "--out"])
        .arg(&cut)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = cut.join("journal.jsonl");
    let began = Instant::now();
    let lines = |p: &Path| std::fs::read_to_string(p).map_or(0, |t| t.lines().count());
    while lines(&journal) < 20 && began.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = lines(&journal);
    assert!(
        (20..400).contains(&partial),
        "the kill should land part-way; journal had {partial} lines"
    );
    assert!(
        !cut.join("claims.csv").exists(),
        "tables are written only at the end"
    );

    verify(&cut, &[&args[..], &["--resume"]].concat());
    let journal_text = std::fs::read_to_string(&journal).unwrap();
    assert_eq!(
        journal_text.lines().count(),
        400,
        "no instance lost or counted twice"
    );
    assert_eq!(files(&dir.join("whole")), files(&cut));
}

#[test]
fn a_torn_last_journal_line_is_dropped_and_redone() {
    let dir = scratch("torn");
    let args = [
        "--claim",
        "slimcaching/prop3-greedy-ratio",
        "--instances",
        "10",
        "--search",
        "0",
    ];
    verify(&dir.join("whole"), &args);
    let torn = dir.join("torn");
    std::fs::create_dir_all(&torn).unwrap();
    let text = std::fs::read_to_string(dir.join("whole/journal.jsonl")).unwrap();
    let keep: Vec<&str> = text.lines().take(4).collect();
    let half = &text.lines().nth(4).unwrap()[..40];
    std::fs::write(
        torn.join("journal.jsonl"),
        format!("{}\n{half}", keep.join("\n")),
    )
    .unwrap();
    std::fs::copy(dir.join("whole/run.json"), torn.join("run.json")).unwrap();
    verify(&torn, &[&args[..], &["--resume"]].concat());
    assert_eq!(files(&dir.join("whole")), files(&torn));
}

/// The journal is keyed by claim and index only: `--resume` with another seed, instance
/// count, claim or time limit would return the old run's results as the new one's. It is
/// refused, naming run.json and the flag, and leaves the folder as it was; the same options
/// resume to the uninterrupted result.
#[test]
fn resume_refuses_a_journal_written_with_other_options() {
    let dir = scratch("resume-other-options");
    let run = dir.join("run");
    // The run's options as flag/value pairs; `with` replaces one.
    let base = [
        ("--claim", "slimcaching/prop3-greedy-ratio"),
        ("--instances", "6"),
        ("--search", "0"),
        ("--time-limit", "20"),
    ];
    let with = |flag: &str, value: &'static str| {
        let mut cmd = moe_opt();
        cmd.args([
            "verify",
            "--seed",
            if flag == "--seed" { value } else { "7" },
        ]);
        cmd.arg("--out").arg(&run).arg("--resume");
        for (f, v) in base {
            cmd.args([f, if f == flag { value } else { v }]);
        }
        if flag == "--tier" || flag == "--scale" {
            cmd.args([flag, value]);
        }
        cmd
    };
    let args: Vec<&str> = base.iter().flat_map(|(f, v)| [*f, *v]).collect();
    verify(&run, &args);
    let before = files(&run);
    for (flag, was, now) in [
        ("--seed", "7", "8"),
        ("--instances", "6", "9"),
        ("--time-limit", "20", "5"),
        ("--search", "0", "4"),
        ("--tier", "model", "extension"),
        ("--scale", "small", "paper"),
        (
            "--claim",
            "slimcaching/prop3-greedy-ratio",
            "slimcaching/prop2-monotone",
        ),
    ] {
        let err = refused(&mut with(flag, now));
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("run.json"), "{err}");
        let flag = if flag == "--claim" {
            "--claim/--paper"
        } else {
            flag
        };
        assert!(
            err.contains(&format!("written with {flag} {was}, this run has {now}")),
            "{err}"
        );
        assert_eq!(
            files(&run),
            before,
            "a refused resume leaves the folder alone"
        );
    }

    let head = std::fs::read(run.join("run.json")).unwrap();
    std::fs::remove_file(run.join("run.json")).unwrap();
    let err = refused(&mut with("--seed", "7"));
    assert!(
        err.contains("journal.jsonl") && err.contains("no run.json"),
        "{err}"
    );

    std::fs::write(run.join("run.json"), head).unwrap();
    ok(&mut with("--seed", "7"));
    assert_eq!(files(&run), before);
}

/// `verify --json --claim ID --instance FILE`: the check's JSON.
fn recheck(id: &str, file: &Path) -> serde_json::Value {
    let text = ok(moe_opt()
        .args(["verify", "--json", "--claim", id, "--instance"])
        .arg(file));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_saved_counterexample_rechecks_as_a_failure() {
    let dir = scratch("recheck");
    verify(
        &dir,
        &[
            "--claim",
            "slimcaching/prop6-single-server",
            "--instances",
            "40",
        ],
    );
    let claims = std::fs::read_to_string(dir.join("claims.csv")).unwrap();
    assert!(claims.contains(",violated,"), "{claims}");
    let file = dir.join("counterexamples/slimcaching-prop6-single-server.json");
    let check = recheck("slimcaching/prop6-single-server", &file);
    assert_eq!(check["outcome"], "fail");
}

#[test]
fn an_unknown_claim_is_bad_input() {
    let err = refused(moe_opt().args(["verify", "--claim", "slimcaching/prop99"]));
    assert!(err.contains("no claim matches") && err.contains("slimcaching/prop3-greedy-ratio"));
}

/// Every file kept in instances/counterexamples/ (named `<problem>-<claim>.json`) still fails
/// its claim when re-checked, as its README line says.
#[test]
fn every_saved_counterexample_still_fails_its_claim() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/counterexamples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let id = stem.replacen('-', "/", 1);
        let check = recheck(&id, &path);
        assert_eq!(check["outcome"], "fail", "{id}: {}", check["note"]);
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} counterexample files");
}

/// A sanity check and a measurement are reported apart from the papers' claims: in their own
/// section of the text table, with their kind in claims.csv; the measurement gets no verdict
/// (`measured`) and its instances no pass (outcome `measured`).
#[test]
fn sanity_checks_and_measurements_are_reported_apart_without_a_claims_verdict() {
    for (id, kind, verdict) in [
        ("cache/router-gap-max-rank", "sanity", "holds"),
        ("prism/alg12-milp-gap", "measurement", "measured"),
    ] {
        let out = scratch(&format!("verify-kind-{}", id.replace('/', "-")));
        let text = ok(moe_opt()
            .args(["verify", "--claim", id, "--instances", "3", "--search", "0"])
            .args(["--jobs", "1", "--out"])
            .arg(&out));
        let heading = "== sanity checks (true by construction) and measurements";
        assert!(text.contains(heading), "{id}:\n{text}");
        assert!(!text.contains("== stated by the papers"), "{id}:\n{text}");
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with(id))
            .unwrap_or_else(|| panic!("{id} has no row:\n{text}"));
        assert!(row.contains(&format!("{kind}, universal")), "{row}");
        assert!(text.find(heading) < text.find(row), "{id}:\n{text}");
        let claims = common::csv_records(&out.join("claims.csv"));
        assert_eq!(claims.len(), 1);
        assert_eq!(
            (claims[0]["kind"].as_str(), claims[0]["quantifier"].as_str()),
            (kind, "universal")
        );
        assert_eq!(claims[0]["verdict"], verdict, "{id}");
        let outcomes: Vec<String> = common::csv_records(&out.join("instances.csv"))
            .into_iter()
            .map(|r| r["outcome"].clone())
            .collect();
        assert_eq!(outcomes.len(), 3);
        if kind == "measurement" {
            assert!(outcomes.iter().all(|o| o != "pass"), "{outcomes:?}");
            assert!(outcomes.iter().any(|o| o == "measured"), "{outcomes:?}");
        }
    }
}

/// `--fail-on violated` exits with status 1 after writing every output when a stated claim is
/// violated, and only then: not on a holding claim, not on an inferred claim's failure.
#[test]
fn fail_on_violated_exits_1_only_for_a_stated_violation() {
    let out = scratch("verify-fail-on");
    // Lemma 1 fails on every row of the uniform kind (delta = 1 - 1/E): on every instance.
    let run = moe_opt()
        .args(["verify", "--claim", "prism/lemma1-entropy-coverage"])
        .args(["--instances", "3", "--search", "0", "--jobs", "1"])
        .args(["--fail-on", "violated", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("--fail-on violated: 1 stated claim violated: prism/lemma1-entropy-coverage"),
        "{err}"
    );
    let claims = common::csv_records(&out.join("claims.csv"));
    assert_eq!(claims[0]["verdict"], "violated");
    // Without the flag the same run succeeds.
    ok(moe_opt()
        .args(["verify", "--claim", "prism/lemma1-entropy-coverage"])
        .args(["--instances", "3", "--search", "0", "--jobs", "1", "--out"])
        .arg(scratch("verify-fail-on-off")));
    // A holding stated claim passes the gate.
    ok(moe_opt()
        .args(["verify", "--claim", "zipmoe/thm31-ratio"])
        .args(["--instances", "3", "--search", "0", "--jobs", "1"])
        .args(["--fail-on", "violated", "--out"])
        .arg(scratch("verify-fail-on-holds")));
    // A saved counterexample: a stated claim's fails the gate, an inferred claim's does not.
    let saved = Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/counterexamples");
    for (id, code) in [
        ("prism/lemma1-entropy-coverage", 1),
        ("smoe/alg2-uniform-optimal", 0),
    ] {
        let file = saved.join(format!("{}.json", id.replace('/', "-")));
        let status = moe_opt()
            .args(["verify", "--claim", id, "--instance"])
            .arg(&file)
            .args(["--fail-on", "violated"])
            .output()
            .unwrap()
            .status;
        assert_eq!(status.code(), Some(code), "{id}");
    }
}
