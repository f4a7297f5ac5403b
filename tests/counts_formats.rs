//! Activation counts in every format `import` and `plan --counts` read: the first prompts of
//! the real DeepSeek counts, written by this test as numpy's `.npy` (integer and float dtypes),
//! CSV and a bare JSON matrix, must give every importer the instance (byte for byte) that the
//! same counts give as a `moe-activation-counts/v1` file with the same header; and the header
//! flags follow their rules (required for a bare file, agreeing with a v1 file's header).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

mod common;

use common::{moe_opt, npy_bytes, ok, refused, scratch, shared_data};

const MODEL: &str = "DeepSeek-V2-Lite-Chat";
/// Prompts of the slice: enough for Prism's three clusters and SlimCaching's four users.
const PROMPTS: usize = 8;

/// counts\[prompt\]\[layer\]\[expert\] of the first [`PROMPTS`] prompts of the real DeepSeek
/// file (its layer 0 is dense: all zero), or None where ../shared/data is absent.
fn deepseek() -> Option<Vec<Vec<Vec<u64>>>> {
    let path = shared_data("activation-counts/deepseek.json.gz")?;
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap()),
        &mut text,
    )
    .unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (file["model"].as_str(), file["top_k"].as_u64()),
        (Some(MODEL), Some(6))
    );
    let mut counts: Vec<Vec<Vec<u64>>> = serde_json::from_value(file["counts"].clone()).unwrap();
    counts.truncate(PROMPTS);
    Some(counts)
}

/// The counts as a v1 file (plain JSON) with DeepSeek's header.
fn write_v1(path: &Path, counts: &[Vec<Vec<u64>>]) {
    let file = json!({
        "format": "moe-activation-counts/v1",
        "model": MODEL,
        "top_k": 6,
        "experts_per_layer": counts[0][0].len(),
        "prompts": counts.len(),
        "layers": counts[0].len(),
        "source": "tests/counts_formats.rs",
        "counts": counts,
    });
    std::fs::write(path, file.to_string()).unwrap();
}

/// The counts as `.npy` in `descr` (`<i8`, `<f8` or `<u2`), 3-D, or 2-D for one prompt: the
/// bytes laid out by hand, C order, little-endian.
fn write_npy(path: &Path, counts: &[Vec<Vec<u64>>], descr: &str, two_d: bool) {
    let (p, l, e) = (counts.len(), counts[0].len(), counts[0][0].len());
    let shape = if two_d {
        assert_eq!(p, 1);
        format!("({l}, {e})")
    } else {
        format!("({p}, {l}, {e})")
    };
    let mut data = Vec::new();
    for &c in counts.iter().flatten().flatten() {
        match descr {
            "<i8" => data.extend((c as i64).to_le_bytes()),
            "<f8" => data.extend((c as f64).to_le_bytes()),
            "<u2" => data.extend(u16::try_from(c).unwrap().to_le_bytes()),
            _ => unreachable!("{descr}"),
        }
    }
    let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    std::fs::write(path, npy_bytes(&header, &data)).unwrap();
}

/// The counts as CSV: `prompt,layer,count_0,...` a line.
fn write_csv(path: &Path, counts: &[Vec<Vec<u64>>]) {
    let mut text = String::new();
    for (p, prompt) in counts.iter().enumerate() {
        for (l, row) in prompt.iter().enumerate() {
            let row: Vec<String> = row.iter().map(u64::to_string).collect();
            text.push_str(&format!("{p},{l},{}\n", row.join(",")));
        }
    }
    std::fs::write(path, text).unwrap();
}

/// The counts as a bare JSON matrix, 3-D, or 2-D for one prompt, gzip-compressed or plain.
fn write_json(path: &Path, counts: &[Vec<Vec<u64>>], two_d: bool, gzip: bool) {
    let text = if two_d {
        json!(counts[0]).to_string()
    } else {
        json!(counts).to_string()
    };
    let bytes = if gzip {
        use std::io::Write;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(text.as_bytes()).unwrap();
        encoder.finish().unwrap()
    } else {
        text.into_bytes()
    };
    std::fs::write(path, bytes).unwrap();
}

/// The bare files of `counts`, 3-D (2-D where `two_d`), in every format and dtype.
fn bare_files(dir: &Path, counts: &[Vec<Vec<u64>>], two_d: bool) -> Vec<PathBuf> {
    let d = if two_d { "2d" } else { "3d" };
    let mut files = Vec::new();
    let descrs: &[&str] = if two_d { &["<u2"] } else { &["<i8", "<f8"] };
    for descr in descrs {
        let f = dir.join(format!("{d}-{}.npy", &descr[1..]));
        write_npy(&f, counts, descr, two_d);
        files.push(f);
    }
    let f = dir.join(format!("{d}.json"));
    write_json(&f, counts, two_d, false);
    files.push(f);
    let f = dir.join(format!("{d}.json.gz"));
    write_json(&f, counts, two_d, true);
    files.push(f);
    if !two_d {
        let f = dir.join(format!("{d}.csv"));
        write_csv(&f, counts);
        files.push(f);
    }
    files
}

/// `import PROBLEM --counts FILE EXTRA...`: the instance file's text.
fn import(dir: &Path, problem: &str, counts: &Path, extra: &[&str]) -> String {
    let out = dir.join("out.json");
    let _ = std::fs::remove_file(&out);
    ok(moe_opt()
        .args(["import", problem, "--counts"])
        .arg(counts)
        .args(extra)
        .arg("-o")
        .arg(&out));
    std::fs::read_to_string(&out).unwrap()
}

fn name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// Every problem that imports counts: its flags for the slice.
const PROBLEMS: [(&str, &[&str]); 4] = [
    ("slimcaching", &["--users", "4"]),
    ("prism", &[]),
    ("zipmoe", &[]),
    ("zipmoe-pool", &[]),
];

#[test]
fn every_format_imports_to_the_instance_of_the_v1_file() {
    let Some(counts) = deepseek() else { return };
    let dir = scratch("counts-formats");
    let v1 = dir.join("v1.json");
    write_v1(&v1, &counts);
    let files = bare_files(&dir, &counts, false);
    let header = ["--top-k", "6", "--model", MODEL];
    for (problem, extra) in PROBLEMS {
        let expected = import(&dir, problem, &v1, extra);
        for file in &files {
            let got = import(&dir, problem, file, &[extra, &header[..]].concat());
            // Prism names its instance after the count file: the only difference allowed.
            let got = if problem == "prism" {
                let named = format!("\"name\": \"{}-k", name(file));
                assert_eq!(got.matches(&named).count(), 1, "{}", name(file));
                got.replacen(&named, "\"name\": \"v1.json-k", 1)
            } else {
                got
            };
            assert!(
                got == expected,
                "import {problem} of {} differs from the v1 file's",
                name(file)
            );
        }
    }
    // `plan --counts`: the same report.
    let plan = |file: &Path, flags: &[&str]| {
        ok(moe_opt()
            .args(["plan", "--counts"])
            .arg(file)
            .args(flags)
            .arg("--json"))
    };
    let expected = plan(&v1, &[]);
    for file in &files {
        assert_eq!(plan(file, &header), expected, "plan of {}", name(file));
    }
}

#[test]
fn a_two_dimensional_matrix_is_one_prompt() {
    let Some(mut counts) = deepseek() else { return };
    counts.truncate(1);
    let dir = scratch("counts-formats-2d");
    let v1 = dir.join("v1.json");
    write_v1(&v1, &counts);
    let header = ["--top-k", "6", "--model", MODEL];
    for problem in ["zipmoe", "zipmoe-pool"] {
        let expected = import(&dir, problem, &v1, &[]);
        for file in bare_files(&dir, &counts, true) {
            assert!(
                import(&dir, problem, &file, &header) == expected,
                "import {problem} of {}",
                name(&file)
            );
        }
    }
}

#[test]
fn header_flags_are_required_for_a_bare_file_and_must_agree_with_a_v1_file() {
    let Some(counts) = deepseek() else { return };
    let dir = scratch("counts-formats-flags");
    let v1 = dir.join("v1.json");
    write_v1(&v1, &counts);
    for file in bare_files(&dir, &counts, false) {
        let e = refused(
            moe_opt()
                .args(["import", "zipmoe-pool", "--counts"])
                .arg(&file)
                .arg("-o")
                .arg(dir.join("never.json")),
        );
        let expected = format!("{}: top_k: ", file.display());
        assert!(e.contains(&expected) && e.contains("--top-k K"), "{e}");
        assert!(!dir.join("never.json").exists());
    }
    // A v1 file's header is its own: flags that say the same are accepted, others refused.
    let expected = import(&dir, "zipmoe", &v1, &[]);
    assert_eq!(
        import(&dir, "zipmoe", &v1, &["--top-k", "6", "--model", MODEL]),
        expected
    );
    for (flags, field) in [
        (["--top-k", "4"], "top_k: is 6, but --top-k says 4"),
        (
            ["--model", "Qwen1.5-MoE-A2.7B"],
            "model: is 'DeepSeek-V2-Lite-Chat', but --model",
        ),
    ] {
        let e = refused(
            moe_opt()
                .args(["import", "zipmoe", "--counts"])
                .arg(&v1)
                .args(flags)
                .arg("-o")
                .arg(dir.join("never.json")),
        );
        assert!(e.contains(&format!("{}: {field}", v1.display())), "{e}");
    }
    // Without --model the counts name none: an importer that needs a known model says to give
    // it (or the value it would give); one that does not names its instance `unnamed`.
    let npy = dir.join("3d-i8.npy");
    for (problem, extra, field) in [
        ("slimcaching", &["--users", "4"][..], "model"),
        ("zipmoe", &[][..], "device"),
    ] {
        let e = refused(
            moe_opt()
                .args(["import", problem, "--counts"])
                .arg(&npy)
                .args(["--top-k", "6"])
                .args(extra)
                .arg("-o")
                .arg(dir.join("never.json")),
        );
        assert!(
            e.contains(&format!("{}: {field}: ", npy.display())) && e.contains("--model NAME"),
            "{e}"
        );
    }
    let e = refused(
        moe_opt()
            .args(["import", "prism", "--counts"])
            .arg(&npy)
            .args(["--top-k", "6", "-o"])
            .arg(dir.join("never.json")),
    );
    assert!(
        e.contains("expert_shape: ") && e.contains("--model NAME"),
        "{e}"
    );
    let pool: Value =
        serde_json::from_str(&import(&dir, "zipmoe-pool", &npy, &["--top-k", "6"])).unwrap();
    assert_eq!(pool["name"], "unnamed (per-prompt ranks)");
    // --top-k above the experts per layer names the flag and the file.
    let e = refused(
        moe_opt()
            .args(["import", "zipmoe-pool", "--counts"])
            .arg(&npy)
            .args(["--top-k", "65", "-o"])
            .arg(dir.join("never.json")),
    );
    assert!(
        e.contains("--top-k: 65 exceeds the 64 experts per layer of") && e.contains("3d-i8.npy"),
        "{e}"
    );
}
