//! `mrc` and `export` on a binary trace walk its id column as mapped (src/cache/commands.rs
//! `mrc_file`, `export_records`) rather than building the JSON model's tokens, so they must
//! write what they write for the same trace as JSON, byte for byte: `mrc` its text, `--json`
//! and `--csv` but for the hash (that of the file's bytes instead of the canonical JSON's),
//! `export` its libCacheSim files.

mod common;

use std::path::{Path, PathBuf};

use common::{moe_opt, ok, scratch, trace};
use sha2::{Digest, Sha256};

/// A trace of more than 256 experts, which a binary file holds as two-byte ids.
fn wide_trace(dir: &Path) -> PathBuf {
    let printed = ok(moe_opt().args([
        "generate",
        "cache-trace",
        "--preset",
        "mixtral-8x7b",
        "--print-config",
    ]));
    let mut config: serde_json::Value = serde_json::from_str(&printed).unwrap();
    for (field, value) in [
        ("experts", 300),
        ("top_k", 4),
        ("layers", 3),
        ("sequences", 2),
        ("tokens_per_sequence", 40),
    ] {
        config[field] = value.into();
    }
    let (config_file, file) = (dir.join("wide-config.json"), dir.join("wide.json"));
    std::fs::write(&config_file, config.to_string()).unwrap();
    ok(moe_opt()
        .args(["generate", "cache-trace", "--config"])
        .arg(&config_file)
        .args(["--seed", "1", "-o"])
        .arg(&file));
    file
}

/// `mrc FILE` with `args`: the text, and the JSON with the CSV table beside it.
fn mrc(dir: &Path, file: &Path, args: &[&str]) -> [String; 3] {
    let text = ok(moe_opt().arg("mrc").arg(file).args(args));
    let csv = dir.join("mrc.csv");
    let json = ok(moe_opt()
        .arg("mrc")
        .arg(file)
        .args(args)
        .arg("--json")
        .arg("--csv")
        .arg(&csv));
    [text, json, std::fs::read_to_string(&csv).unwrap()]
}

/// Three traces as JSON and as binary: one-byte ids (E = 8 over 32 layers, E = 8 with K = 1)
/// and two-byte ids (E = 300).
fn json_and_binary(dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    let jsons = [
        trace(dir, "mixtral-8x7b"),
        trace(dir, "switch"),
        wide_trace(dir),
    ];
    jsons
        .into_iter()
        .map(|json| {
            let bin = json.with_extension("bin");
            ok(moe_opt()
                .args(["import", "cache-trace", "--trace"])
                .arg(&json)
                .args(["--format", "bin", "-o"])
                .arg(&bin));
            (json, bin)
        })
        .collect()
}

#[test]
fn mrc_of_a_binary_trace_prints_what_its_json_prints() {
    let dir = scratch("mrc-binary");
    for (json, bin) in json_and_binary(&dir) {
        let sha: String = Sha256::digest(std::fs::read(&bin).unwrap())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        for scope in ["per-layer", "pool"] {
            // Both stack policies, in both orders (the curves follow the order asked).
            for methods in ["lru,belady", "belady,lru"] {
                let args = ["--scope", scope, "--methods", methods];
                let from_json = mrc(&dir, &json, &args);
                let report: serde_json::Value = serde_json::from_str(&from_json[1]).unwrap();
                let canonical = report["trace"]["sha256"].as_str().unwrap().to_string();
                assert_ne!(canonical, sha);
                let from_bin = mrc(&dir, &bin, &args);
                for (bin_out, json_out) in from_bin.iter().zip(&from_json) {
                    assert!(bin_out.contains(&sha), "{json:?} {args:?}: {bin_out}");
                    assert_eq!(
                        *bin_out,
                        json_out.replace(&canonical, &sha),
                        "{json:?} {args:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn export_of_a_binary_trace_writes_what_its_json_writes() {
    let dir = scratch("export-binary");
    for (json, bin) in json_and_binary(&dir) {
        for format in ["oracle-general", "csv"] {
            // The pooled stream and one layer's, experts counted and weighed.
            for (layer, size) in [(None, "1"), (Some("1"), "4096")] {
                let export = |file: &Path, out: &str| {
                    let out = dir.join(out);
                    let mut command = moe_opt();
                    command.arg("export").arg(file).args(["--format", format]);
                    if let Some(layer) = layer {
                        command.args(["--layer", layer]);
                    }
                    ok(command.args(["--object-size", size, "-o"]).arg(&out));
                    std::fs::read(&out).unwrap()
                };
                let from_json = export(&json, "from-json");
                assert!(!from_json.is_empty());
                assert_eq!(
                    export(&bin, "from-bin"),
                    from_json,
                    "{json:?} {format} {layer:?}"
                );
            }
        }
    }
}
