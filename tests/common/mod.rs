//! Helpers of the command-line tests: the binary, a scratch folder, a run that must succeed or
//! be refused, a CSV table or JSON report read back, the real data, and the inputs several tests
//! share.

// Every test binary that includes this module uses only some of the helpers.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The path of the `moe-opt` binary of this build (for a `std::process::Command` a test spawns
/// and kills, or pipes).
pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("moe-opt")
}

/// The `moe-opt` binary of this build.
pub fn moe_opt() -> Command {
    Command::new(bin())
}

/// An empty folder for one test (the process id keeps test binaries apart), removed when the
/// test ends; a failed test's is kept for a look.
pub fn scratch(test: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("moe-opt-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// A folder of [`scratch`]: a `Path` that removes itself when dropped.
pub struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

/// A file of the real data (not part of the repository): in ../shared/data beside the
/// repository, two levels up for a worktree, or the machine's copy. None, said on stderr, where
/// it is absent: the tests that read it then skip.
pub fn shared_data(relative: &str) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = [
        root.join("../shared/data"),
        root.join("../../shared/data"),
        PathBuf::from("/work/shared/data"),
    ]
    .into_iter()
    .map(|d| d.join(relative))
    .find(|p| p.exists());
    if found.is_none() {
        eprintln!("skipped: {relative} is absent from ../shared/data");
    }
    found
}

/// The weights of DeepSeek's published EPLB example (the README's `eplb` example).
pub const EPLB_EXAMPLE: &str = "instances/eplb-readme-example.json";

/// The flags of that example: 16 replicas, 4 groups, 2 nodes, 8 GPUs.
pub const EPLB_EXAMPLE_FLAGS: [&str; 8] = [
    "--replicas",
    "16",
    "--groups",
    "4",
    "--nodes",
    "2",
    "--gpus",
    "8",
];

/// Slimcaching's methods in the order `compare` runs them.
pub const SLIMCACHING_METHODS: [&str; 9] = [
    "milp",
    "exhaustive",
    "greedy",
    "lazy-greedy",
    "successive-dp",
    "successive-maxconv",
    "lfu",
    "random",
    "u-shaped",
];

/// The papers of the claims (their files under ../shared/papers), in `moe-opt claims` order:
/// the goldens and the verdicts page go through them alike.
pub const PAPERS: [&str; 5] = [
    "000_e52eafead23a117e.txt",
    "001_612395f5f9077ee7.txt",
    "002_af7f5861d0abc3cf.txt",
    "003_f13bf7f446ba8bd3.txt",
    "004_ecd17ad30b7583cf.txt",
];

/// Runs `verify --paper PAPER --instances 3 --search SEARCH --restarts 1 MORE --out OUT` in the
/// repository root, which must succeed: the tests' tiny budget for a whole paper (3 generated
/// instances per claim, one search of SEARCH neighbours). Returns stdout.
pub fn verify_paper(paper: &str, search: &str, more: &[&str], out: &Path) -> String {
    ok(moe_opt()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["verify", "--paper", paper, "--instances", "3"])
        .args(["--search", search, "--restarts", "1"])
        .args(more)
        .arg("--out")
        .arg(out))
}

/// A `.npy` file as `np.save` (format 1.0) lays it out: magic, version, header length, the
/// header dict padded to 64 bytes, the data.
pub fn npy_bytes(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((h.len() as u16).to_le_bytes());
    out.extend(h.as_bytes());
    out.extend(data);
    out
}

/// Runs a command that must succeed and returns its stdout.
pub fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a command that must succeed with `--csv TABLE` appended; the table's rows.
pub fn csv_table(cmd: &mut Command, table: &Path) -> Vec<BTreeMap<String, String>> {
    ok(cmd.arg("--csv").arg(table));
    csv_records(table)
}

/// Runs a command that must succeed with `--json --csv TABLE` appended; its JSON report.
pub fn json_with_csv(cmd: &mut Command, table: &Path) -> serde_json::Value {
    serde_json::from_str(&ok(cmd.args(["--json", "--csv"]).arg(table))).unwrap()
}

/// A generated cache-trace of a preset (e.g. `mixtral-8x7b`: E = 8, K = 2, 32 layers, 256
/// tokens; `switch`: 6 layers, short sequences) at seed 1, written in `dir`.
pub fn trace(dir: &Path, preset: &str) -> PathBuf {
    let file = dir.join(format!("{preset}.json"));
    ok(moe_opt()
        .args([
            "generate",
            "cache-trace",
            "--preset",
            preset,
            "--seed",
            "1",
            "-o",
        ])
        .arg(&file));
    file
}

/// Runs a command that must be refused as bad input (exit code 2) and returns its stderr.
pub fn refused(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

/// The rows of a CSV file as maps from column name to value.
pub fn csv_records(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            header
                .iter()
                .cloned()
                .zip(r.iter().map(String::from))
                .collect()
        })
        .collect()
}
