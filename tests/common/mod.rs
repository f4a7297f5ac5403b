//! Helpers of the command-line tests: the binary, a scratch folder, a run that must succeed.

use std::path::PathBuf;

use assert_cmd::Command;

/// The `moe-opt` binary of this build.
pub fn moe_opt() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("moe-opt"))
}

/// An empty folder for one test (the process id keeps test binaries apart).
pub fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("moe-opt-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
