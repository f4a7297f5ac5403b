//! Hostile input (issue 13): every file kind and numeric flag, malformed, must be refused with
//! exit code 2 and one stderr line naming the file or the flag, leaving nothing at the output
//! path; and no input may panic (exit 101) or abort (exit 134, e.g. an allocation failure).
//!
//! Two parts share one table of file kinds (a valid file and the command that reads it):
//! - the corpus: hand-picked malformations of every kind (missing, empty, not JSON, truncated,
//!   the wrong shape, an unknown field, each field removed or of the wrong type or sign) and of
//!   the numeric flags, each expected to be refused;
//! - the fuzz harness: seeded, structure-aware random mutations (proptest) of the same files,
//!   each run through the command under a memory cap; any exit but 0 or 2, or a refusal that is
//!   not one line naming the file, is a finding, shrunk to its fewest mutations and saved under
//!   target/tmp/fuzz-findings/ (each finding fixed is kept in the corpus: [`regressions`]). By
//!   default a short run of each kind; `./dev fuzz MINUTES` sets MOE_OPT_FUZZ_SECONDS and runs
//!   each kind that long.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{json, Value};

mod common;

use common::{moe_opt, npy_bytes, ok, scratch, shared_data, trace, EPLB_EXAMPLE_FLAGS};

/// Virtual memory a child may use, KiB: far above what any valid small input needs, far below
/// the machine's memory, so an unchecked size aborts instead of swapping.
const MEMORY_CAP_KIB: u64 = 2_000_000;
/// Seconds a child may run before it counts as slow (reported, not a finding: some valid
/// mutations, e.g. a larger capacity, are slow but legitimate).
const CHILD_TIMEOUT_S: u64 = 20;

/// How a file kind is written.
#[derive(Clone, Copy, PartialEq)]
enum Format {
    Json,
    /// Gzip-compressed JSON (the activation-count files).
    JsonGz,
    /// JSON Lines, gzip-compressed (the token logs); held as an array of records.
    JsonlGz,
    Toml,
    /// libCacheSim's oracleGeneral binary, held as an array of `[time, obj_id, obj_size,
    /// next_access_vtime]` records: the mutations act on the records' fields.
    OracleGeneral,
    /// libCacheSim's csv with moe-opt's header, held like [`Format::OracleGeneral`].
    LibCacheSimCsv,
    /// CSV without a header (bare activation counts: `prompt,layer,count_0,...` a line), held
    /// as an array of records like [`Format::LibCacheSimCsv`].
    Csv,
    /// numpy's `.npy`, held as `{"descr", "fortran_order", "shape", "data"}`: the mutations
    /// reach the header dict's values and the data.
    Npy,
    /// moe-opt's binary trace, held as its header fields by name, `run_records` (`[seq, first,
    /// count, phase]`), `ids` and `logit_values`: the mutations reach every field and count.
    TraceBin,
}

/// A file kind: a valid file of it and the command that reads it (`FILE` and `OUT` stand for
/// the file and an output path that must not exist after a refusal).
struct Kind {
    name: String,
    format: Format,
    /// The valid files the fuzz harness starts from; the corpus uses the first.
    bases: Vec<Value>,
    args: Vec<String>,
}

impl Kind {
    fn new(name: &str, format: Format, base: Value, args: &[&str]) -> Kind {
        Kind {
            name: name.into(),
            format,
            bases: vec![base],
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// More valid files to start from (the fuzz harness's other bases).
    fn and(mut self, more: Vec<Value>) -> Kind {
        self.bases.extend(more);
        self
    }

    fn base(&self) -> &Value {
        &self.bases[0]
    }

    /// The file name of this kind's mutated files (the extension the command expects).
    fn file_name(&self, stem: &str) -> String {
        let ext = match self.format {
            Format::Json => "json",
            Format::JsonGz => "json.gz",
            Format::JsonlGz => "jsonl.gz",
            Format::Toml => "toml",
            Format::OracleGeneral => "oracleGeneral.bin",
            Format::LibCacheSimCsv | Format::Csv => "csv",
            Format::Npy => "npy",
            Format::TraceBin => "bin",
        };
        format!("{stem}.{ext}")
    }

    /// The bytes of `value` in this kind's format; None where the format cannot hold it (TOML
    /// has no null).
    fn encode(&self, value: &Value) -> Option<Vec<u8>> {
        if let Some(bytes) = encode_records(self.format, value) {
            return Some(bytes);
        }
        let text = match self.format {
            Format::Json | Format::JsonGz => value.to_string(),
            Format::JsonlGz => match value {
                Value::Array(lines) => lines.iter().map(|l| format!("{l}\n")).collect(),
                other => other.to_string(),
            },
            Format::Toml => toml::to_string(value).ok()?,
            Format::OracleGeneral
            | Format::LibCacheSimCsv
            | Format::Csv
            | Format::Npy
            | Format::TraceBin => {
                unreachable!("encoded above")
            }
        };
        Some(match self.format {
            Format::JsonGz | Format::JsonlGz => gzip(text.as_bytes()),
            _ => text.into_bytes(),
        })
    }

    /// Runs the command on `file` under the memory cap and the timeout.
    fn run(&self, file: &Path, out: &Path) -> Outcome {
        let args = self.args.iter().map(|a| match a.as_str() {
            "FILE" => file.to_str().unwrap().to_string(),
            "OUT" => out.to_str().unwrap().to_string(),
            _ => a.clone(),
        });
        run_capped(args)
    }
}

/// A mutated field as an integer for the binary encoders, which cast it to the field's width:
/// an integer as itself, a float truncated, anything else (or nothing) as 0.
fn as_int(v: Option<&Value>) -> i128 {
    match v {
        Some(Value::Number(n)) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .unwrap_or_else(|| n.as_f64().unwrap_or(0.0) as i128),
        _ => 0,
    }
}

/// The bytes of a libCacheSim trace held as records (see [`Format::OracleGeneral`]), whatever
/// the mutations made of them: a field that is no number is written as 0 (binary) or its JSON
/// text (csv), numbers are cast to the field's width (wrapping), and an element that is no
/// record, or a value that is no array, is written as its JSON text (torn records). None for
/// the other formats.
fn encode_records(format: Format, value: &Value) -> Option<Vec<u8>> {
    if format == Format::Npy {
        return Some(encode_npy(value));
    }
    if format == Format::TraceBin {
        return Some(encode_trace_bin(value));
    }
    let Value::Array(records) = value else {
        return matches!(
            format,
            Format::OracleGeneral | Format::LibCacheSimCsv | Format::Csv
        )
        .then(|| value.to_string().into_bytes());
    };
    let field = |r: &Value, i: usize| as_int(r.get(i));
    match format {
        Format::OracleGeneral => {
            let mut bytes = Vec::new();
            for r in records {
                if !r.is_array() {
                    bytes.extend(r.to_string().into_bytes());
                    continue;
                }
                bytes.extend((field(r, 0) as u32).to_le_bytes());
                bytes.extend((field(r, 1) as u64).to_le_bytes());
                bytes.extend((field(r, 2) as u32).to_le_bytes());
                bytes.extend((field(r, 3) as i64).to_le_bytes());
            }
            Some(bytes)
        }
        Format::LibCacheSimCsv | Format::Csv => {
            let mut text = if format == Format::LibCacheSimCsv {
                String::from("time,obj_id,obj_size,next_access_vtime\n")
            } else {
                String::new()
            };
            for r in records {
                let line = match r {
                    Value::Array(fields) => fields
                        .iter()
                        .map(|f| match f {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(","),
                    other => other.to_string(),
                };
                text.push_str(&line);
                text.push('\n');
            }
            Some(text.into_bytes())
        }
        _ => None,
    }
}

/// The `.npy` bytes of a held array ([`Format::Npy`]): the header dict written from every
/// field but `data`, in order, as Python literals (a string quoted, a bool as True/False, the shape as a tuple, any
/// other value as its JSON text), the data as `descr` says where it names a dtype moe-opt
/// reads (else as `<f8`), a non-number as 0. A value that is no object is written as its JSON
/// text.
fn encode_npy(value: &Value) -> Vec<u8> {
    let Value::Object(fields) = value else {
        return value.to_string().into_bytes();
    };
    let py = |v: &Value| match v {
        Value::String(s) => format!("'{s}'"),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(Value::to_string).collect();
            let comma = if items.len() == 1 { "," } else { "" };
            format!("({}{comma})", items.join(", "))
        }
        other => other.to_string(),
    };
    let entries: Vec<String> = fields
        .iter()
        .filter(|(k, _)| *k != "data")
        .map(|(k, v)| format!("'{k}': {}, ", py(v)))
        .collect();
    let header = format!("{{{}}}", entries.concat());
    let descr = fields.get("descr").and_then(Value::as_str).unwrap_or("<f8");
    let mut data = Vec::new();
    for x in fields
        .get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let f = x.as_f64().unwrap_or(0.0);
        let i = x.as_i64().unwrap_or(f as i64);
        match descr {
            "<f4" => data.extend((f as f32).to_le_bytes()),
            "<i8" | "<u8" => data.extend(i.to_le_bytes()),
            "<i4" | "<u4" => data.extend((i as i32).to_le_bytes()),
            "<i2" | "<u2" => data.extend((i as i16).to_le_bytes()),
            "|i1" | "|u1" => data.push(i as u8),
            _ => data.extend(f.to_le_bytes()),
        }
    }
    npy_bytes(&header, &data)
}

/// The bytes of a held binary trace ([`Format::TraceBin`]), in the order of the format
/// (formulations::cache::binary): each header field cast to its width (wrapping; a
/// non-number as 0), `magic`, `name` and `model` as their text (the lengths from it), the
/// records and ids cast likewise (an element that is no record as its JSON text), the ids u8
/// or u16 as `experts` says, `logit_values` as f32. A value that is no object is written as its
/// JSON text.
fn encode_trace_bin(value: &Value) -> Vec<u8> {
    let Value::Object(f) = value else {
        return value.to_string().into_bytes();
    };
    let text = |key: &str| match f.get(key) {
        Some(Value::String(s)) => s.clone().into_bytes(),
        Some(other) => other.to_string().into_bytes(),
        None => Vec::new(),
    };
    let field = |key: &str| as_int(f.get(key));
    let mut b = text("magic");
    b.extend((field("version") as u16).to_le_bytes());
    b.extend([field("flags"), field("weights"), field("logits")].map(|x| x as u8));
    b.extend([field("reserved") as u8, 0, 0]);
    for key in ["experts", "top_k", "shared_experts", "layers"] {
        b.extend((field(key) as u32).to_le_bytes());
    }
    b.extend((field("tokens") as u64).to_le_bytes());
    b.extend((field("runs") as u64).to_le_bytes());
    let (name, model) = (text("name"), text("model"));
    b.extend((name.len() as u32).to_le_bytes());
    b.extend((model.len() as u32).to_le_bytes());
    b.extend(name);
    b.extend(model);
    let list = |key: &str| {
        f.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for r in list("run_records") {
        if !r.is_array() {
            b.extend(r.to_string().into_bytes());
            continue;
        }
        for i in 0..3 {
            b.extend((as_int(r.get(i)) as u32).to_le_bytes());
        }
        b.extend([as_int(r.get(3)) as u8, 0, 0, 0]);
    }
    let wide = field("experts") > 256;
    for x in list("ids") {
        let x = as_int(Some(&x));
        if wide {
            b.extend((x as u16).to_le_bytes());
        } else {
            b.push(x as u8);
        }
    }
    for x in list("logit_values") {
        b.extend((x.as_f64().unwrap_or(0.0) as f32).to_le_bytes());
    }
    b
}

/// The first `tokens` tokens of a cache-trace JSON held as a binary trace
/// ([`Format::TraceBin`]): one run per sequence stretch, every routing's logits.
fn trace_bin_base(trace: &Value, tokens: usize) -> Value {
    let toks = &trace["tokens"].as_array().unwrap()[..tokens];
    let mut runs: Vec<[u64; 4]> = Vec::new();
    let (mut ids, mut logits) = (Vec::new(), Vec::new());
    for t in toks {
        let (seq, pos) = (t["seq"].as_u64().unwrap(), t["token"].as_u64().unwrap());
        let phase = ["decode", "prefill", "encoder"]
            .iter()
            .position(|p| t["phase"] == *p)
            .unwrap() as u64;
        match runs.last_mut() {
            Some(r) if r[0] == seq && r[3] == phase && r[1] + r[2] == pos => r[2] += 1,
            _ => runs.push([seq, pos, 1, phase]),
        }
        for routing in t["layers"].as_array().unwrap() {
            ids.extend(routing["experts"].as_array().unwrap().iter().cloned());
            logits.extend(routing["logits"].as_array().unwrap().iter().cloned());
        }
    }
    json!({
        "magic": "MOETRACE",
        "version": 1,
        "flags": u8::from(trace["ranked"] == true),
        "weights": 0,
        "logits": 1,
        "reserved": 0,
        "experts": trace["experts"],
        "top_k": trace["top_k"],
        "shared_experts": trace["shared_experts"],
        "layers": trace["layers"],
        "tokens": tokens,
        "runs": runs.len(),
        "name": trace["name"],
        "model": trace["model"],
        "run_records": runs,
        "ids": ids,
        "logit_values": logits,
    })
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn read_value(path: &Path, format: Format) -> Value {
    let bytes = std::fs::read(path).unwrap();
    let text = match format {
        Format::JsonGz | Format::JsonlGz => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
                .unwrap();
            text
        }
        Format::Json | Format::Toml => String::from_utf8(bytes).unwrap(),
        Format::LibCacheSimCsv => {
            // The records of moe-opt's own csv export: a header, then numbers.
            let text = String::from_utf8(bytes).unwrap();
            let rows = text.lines().skip(1).map(|l| {
                let fields = l.split(',').map(|f| json!(f.parse::<i64>().unwrap()));
                Value::Array(fields.collect())
            });
            return Value::Array(rows.collect());
        }
        Format::OracleGeneral | Format::Csv | Format::Npy | Format::TraceBin => {
            unreachable!("no fuzz base is read from these")
        }
    };
    match format {
        Format::Json | Format::JsonGz => serde_json::from_str(&text).unwrap(),
        Format::JsonlGz => Value::Array(
            text.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
        ),
        Format::Toml => {
            serde_json::to_value(toml::from_str::<toml::Value>(&text).unwrap()).unwrap()
        }
        Format::OracleGeneral
        | Format::LibCacheSimCsv
        | Format::Csv
        | Format::Npy
        | Format::TraceBin => {
            unreachable!("returned above")
        }
    }
}

/// How a child ended.
struct Outcome {
    code: Option<i32>,
    stderr: String,
}

impl Outcome {
    fn timed_out(&self) -> bool {
        self.code == Some(124)
    }

    /// Why this is no clean refusal naming `name` (None when it is one).
    fn refusal_fault(&self, name: &str) -> Option<String> {
        let lines: Vec<&str> = self.stderr.trim_end().lines().collect();
        if self.code != Some(2) {
            Some(format!("exit code {:?}, expected 2", self.code))
        } else if lines.len() != 1 || !lines[0].starts_with("error: ") {
            Some("stderr is not one `error: ` line".into())
        } else if !lines[0].contains(name) {
            Some(format!("the error does not name `{name}`"))
        } else {
            None
        }
    }
}

/// Case `name`: why `moe-opt ARGS` on a malformed `file` is no clean refusal naming the file
/// (or else its `field`), with the stderr; None when it is one.
fn file_refusal_fault(
    args: impl IntoIterator<Item = String>,
    name: &str,
    file: &Path,
    field: &str,
) -> Option<String> {
    let outcome = run_capped(args);
    let fault = outcome
        .refusal_fault(&file.display().to_string())
        .or_else(|| outcome.refusal_fault(&format!(": {field}:")))?;
    Some(format!(
        "{name}: {fault}\n    {}",
        outcome.stderr.trim_end()
    ))
}

/// `moe-opt ARGS` under `ulimit -v` and `timeout` (exit 124 when it ran out of time).
fn run_capped(args: impl IntoIterator<Item = String>) -> Outcome {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_CAP_KIB}; exec timeout {CHILD_TIMEOUT_S} \"$0\" \"$@\""
        ))
        .arg(common::bin())
        .args(args)
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    Outcome {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The committed instance files (instances/ and its counterexamples) of a problem tag (none
/// for SlimCaching's untagged files), but `skip`.
fn committed(tag: Option<&str>, skip: &str) -> Vec<Value> {
    let mut files: Vec<PathBuf> = ["instances", "instances/counterexamples"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.ends_with(skip))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| read_value(p, Format::Json))
        .filter(|v| v.get("weight").is_none() && v.get("problem").and_then(Value::as_str) == tag)
        .collect()
}

/// Every file kind whose base file exists here (the real count and log files are skipped where
/// ../shared/data is absent), each with its base file made or read in `dir`.
fn kinds(dir: &Path) -> Vec<Kind> {
    let json = |path: &str| read_value(Path::new(path), Format::Json);
    let generated = |problem: &str, preset: &str| {
        let file = dir.join(format!("{problem}-{preset}.json"));
        ok(moe_opt()
            .args(["generate", problem, "--preset", preset, "--seed", "1", "-o"])
            .arg(&file));
        read_value(&file, Format::Json)
    };
    let switch = trace(dir, "switch");
    let switch_trace = switch.to_str().unwrap();
    let offline = dir.join("offline.json");
    ok(moe_opt()
        .args([
            "offline",
            switch_trace,
            "--layer",
            "0",
            "--capacity",
            "2",
            "--tokens",
            "12",
            "-o",
        ])
        .arg(&offline));
    let mut eplb = vec!["eplb", "--weights", "FILE"];
    eplb.extend(EPLB_EXAMPLE_FLAGS);
    eplb.extend(["--csv", "OUT"]);

    let mut kinds = vec![
        Kind::new(
            "slimcaching",
            Format::Json,
            json("instances/slimcaching-tiny-1.json"),
            &["solve", "FILE", "--method", "greedy", "--csv", "OUT"],
        )
        .and(committed(None, "slimcaching-tiny-1.json")),
        Kind::new(
            "slimcaching-lp",
            Format::Json,
            json("instances/slimcaching-tiny-1.json"),
            &["write-lp", "FILE", "-o", "OUT"],
        ),
        Kind::new(
            "prism",
            Format::Json,
            json("instances/prism-tiny-1.json"),
            &["solve", "FILE", "--method", "prism", "--csv", "OUT"],
        )
        .and(committed(Some("prism"), "prism-tiny-1.json")),
        Kind::new(
            "zipmoe",
            Format::Json,
            json("instances/zipmoe-tiny-1.json"),
            &[
                "solve",
                "FILE",
                "--method",
                "cache-affinity",
                "--csv",
                "OUT",
            ],
        )
        .and(committed(Some("zipmoe"), "zipmoe-tiny-1.json")),
        Kind::new(
            "zipmoe-pool",
            Format::Json,
            json("instances/zipmoe-pool-1.json"),
            &["plan", "FILE", "--csv", "OUT"],
        ),
        Kind::new(
            "smoe",
            Format::Json,
            generated("smoe", "tiny"),
            &["solve", "FILE", "--method", "smoe", "--csv", "OUT"],
        )
        .and(committed(Some("smoe"), "")),
        Kind::new(
            "balance",
            Format::Json,
            generated("balance", "tiny"),
            &["solve", "FILE", "--method", "greedy", "--csv", "OUT"],
        ),
        Kind::new(
            "cache-trace",
            Format::Json,
            read_value(&switch, Format::Json),
            &["replay", "FILE", "--capacity", "2", "--csv", "OUT"],
        ),
        Kind::new(
            "cache-trace-bin",
            Format::TraceBin,
            trace_bin_base(&read_value(&switch, Format::Json), 12),
            &["replay", "FILE", "--capacity", "2", "--csv", "OUT"],
        ),
        Kind::new(
            "cache-offline",
            Format::Json,
            read_value(&offline, Format::Json),
            &["solve", "FILE", "--method", "belady", "--csv", "OUT"],
        )
        .and(committed(Some("cache-offline"), "")),
        Kind::new(
            "eplb-weights",
            Format::Json,
            json(common::EPLB_EXAMPLE),
            &eplb,
        ),
        Kind::new(
            "eplb-npy",
            Format::Npy,
            npy_base(&json(common::EPLB_EXAMPLE)),
            &eplb,
        ),
        Kind::new(
            "sweep-spec",
            Format::Toml,
            read_value(
                Path::new("instances/sweeps/prism-tiny-small.toml"),
                Format::Toml,
            ),
            &["sweep", "FILE", "-o", "OUT", "--jobs", "1"],
        ),
        Kind::new(
            "counts-warm-start",
            Format::Json,
            warm_start_counts(),
            &[
                "replay",
                switch_trace,
                "--capacity",
                "2",
                "--methods",
                "lfu",
                "--warm-start",
                "FILE",
                "--csv",
                "OUT",
            ],
        ),
    ];
    for (problem, preset) in [
        ("slimcaching", "tiny"),
        ("prism", "tiny"),
        ("zipmoe", "tiny"),
        ("smoe", "tiny"),
        ("balance", "tiny"),
        ("cache-trace", "switch"),
    ] {
        let config: Value = serde_json::from_str(&ok(moe_opt().args([
            "generate",
            problem,
            "--preset",
            preset,
            "--print-config",
        ])))
        .unwrap();
        kinds.push(Kind::new(
            &format!("{problem}-config"),
            Format::Json,
            config,
            &["generate", problem, "--config", "FILE", "-o", "OUT"],
        ));
    }
    if let Some(counts) = shared_data("activation-counts/switch.json.gz") {
        let mut counts = read_value(&counts, Format::JsonGz);
        // Eight prompts keep a run short; the rest of the file is the real one.
        counts["counts"].as_array_mut().unwrap().truncate(8);
        counts["prompts"] = json!(8);
        for problem in ["slimcaching", "prism", "zipmoe", "zipmoe-pool", "balance"] {
            // SlimCaching's users are groups of prompts: four of two prompts each.
            let users: &[&str] = if problem == "slimcaching" {
                &["--users", "4"]
            } else {
                &[]
            };
            let mut args = vec!["import", problem, "--counts", "FILE", "-o", "OUT"];
            args.extend(users);
            kinds.push(Kind::new(
                &format!("{problem}-counts"),
                Format::JsonGz,
                counts.clone(),
                &args,
            ));
        }
        // The bare formats, four prompts of the same counts, through one importer (every
        // importer reads counts through one reader): .npy as <i8 and CSV.
        let bare: Vec<Vec<Vec<u64>>> =
            serde_json::from_value(json!(counts["counts"].as_array().unwrap()[..4])).unwrap();
        kinds.push(Kind::new(
            "plan-counts",
            Format::JsonGz,
            counts,
            &["plan", "--counts", "FILE", "--csv", "OUT"],
        ));
        let import_bare = [
            "import",
            "prism",
            "--counts",
            "FILE",
            "--top-k",
            "1",
            "--model",
            "switch-large-128",
            "-o",
            "OUT",
        ];
        let (layers, experts) = (bare[0].len(), bare[0][0].len());
        kinds.push(Kind::new(
            "counts-npy",
            Format::Npy,
            json!({
                "descr": "<i8",
                "fortran_order": false,
                "shape": [bare.len(), layers, experts],
                "data": bare.iter().flatten().flatten().collect::<Vec<_>>(),
            }),
            &import_bare,
        ));
        // A line per prompt and layer: its indices, then its counts.
        let mut records = Vec::new();
        for (p, prompt) in bare.iter().enumerate() {
            for (l, row) in prompt.iter().enumerate() {
                let mut record = vec![p as u64, l as u64];
                record.extend(row);
                records.push(json!(record));
            }
        }
        kinds.push(Kind::new(
            "counts-csv",
            Format::Csv,
            Value::Array(records),
            &import_bare,
        ));
    }
    // libCacheSim traces: one layer of the generated Switch trace (E = 8, K = 1), exported
    // as csv by moe-opt and held as records, so the mutations reach every field.
    let records = dir.join("switch-layer0.csv");
    ok(moe_opt()
        .args([
            "export",
            switch_trace,
            "--layer",
            "0",
            "--format",
            "csv",
            "-o",
        ])
        .arg(&records));
    let records = read_value(&records, Format::LibCacheSimCsv);
    let import_lcs = [
        "import",
        "cache-trace",
        "--libcachesim",
        "FILE",
        "--experts",
        "8",
        "--layers",
        "1",
        "--top-k",
        "1",
        "-o",
        "OUT",
    ];
    kinds.push(Kind::new(
        "libcachesim-oracle",
        Format::OracleGeneral,
        records.clone(),
        &import_lcs,
    ));
    kinds.push(Kind::new(
        "libcachesim-csv",
        Format::LibCacheSimCsv,
        records,
        &import_lcs,
    ));
    if let Some(log) = shared_data("token-traces/switch_base8_encoder_top1.jsonl.gz") {
        let mut log = read_value(&log, Format::JsonlGz);
        log.as_array_mut().unwrap().truncate(60);
        kinds.push(Kind::new(
            "token-log",
            Format::JsonlGz,
            log,
            &[
                "import",
                "cache-trace",
                "--log",
                "FILE",
                "--experts",
                "8",
                "-o",
                "OUT",
            ],
        ));
    }
    kinds
}

/// An activation-count file shaped like the `switch` trace preset (6 layers of 8 experts), for
/// LFU's warm start.
fn warm_start_counts() -> Value {
    let counts: Vec<Vec<Vec<u64>>> = (0..3u64)
        .map(|p| {
            (0..6u64)
                .map(|l| (0..8u64).map(|e| (p + l + e) % 4).collect())
                .collect()
        })
        .collect();
    json!({
        "format": "moe-activation-counts/v1",
        "model": "switch-like",
        "top_k": 1,
        "experts_per_layer": 8,
        "prompts": 3,
        "layers": 6,
        "source": "tests/hostile.rs",
        "counts": counts,
    })
}

// ---------------------------------------------------------------------------------------------
// Mutations

/// JSON pointers of every node of `value` (the root is "").
fn pointers(value: &Value) -> Vec<String> {
    fn walk(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    walk(
                        child,
                        format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                        out,
                    );
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
        out.push(at);
    }
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

/// Removes the node at `pointer` (an object's key or an array's element).
fn remove(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let key = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&key);
        }
        Some(Value::Array(items)) => {
            if let Ok(i) = key.parse::<usize>() {
                if i < items.len() {
                    items.remove(i);
                }
            }
        }
        _ => {}
    }
}

/// Values a hostile writer puts where a number, a string or a list belongs.
fn palette() -> Vec<Value> {
    vec![
        json!(null),
        json!(-1),
        json!(0),
        json!(1),
        json!(0.5),
        json!(-1e-300),
        json!(4_294_967_296u64),
        json!(1_000_000_000_000u64),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e308),
        json!(-1e308),
        json!(""),
        json!("x"),
        json!(true),
        json!([]),
        json!({}),
        json!([[]]),
    ]
}

/// One structure-aware mutation: at the node picked by `at` (an index into the pointers), an
/// operation picked by `op`.
#[derive(Debug, Clone)]
struct Mutation {
    at: usize,
    op: usize,
    arg: usize,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    (any::<usize>(), 0..8usize, any::<usize>()).prop_map(|(at, op, arg)| Mutation { at, op, arg })
}

impl Mutation {
    fn apply(&self, value: &mut Value) {
        let all = pointers(value);
        let at = &all[self.at % all.len()];
        let palette = palette();
        match self.op {
            // Delete the node.
            0 => remove(value, at),
            // Replace it with a hostile value.
            1 | 2 => *value.pointer_mut(at).unwrap() = palette[self.arg % palette.len()].clone(),
            // Replace it with another node's value (a list where a number was, a valid number
            // of the wrong field, ...).
            3 => {
                let other = value.pointer(&all[self.arg % all.len()]).unwrap().clone();
                *value.pointer_mut(at).unwrap() = other;
            }
            // Grow a list by repeating an element (sizes that disagree, duplicates).
            4 => {
                if let Some(Value::Array(items)) = value.pointer_mut(at) {
                    if !items.is_empty() {
                        let copy = items[self.arg % items.len()].clone();
                        items.extend(std::iter::repeat_n(copy, 1 + self.arg % 3));
                    }
                }
            }
            // Shorten a list.
            5 => {
                if let Some(Value::Array(items)) = value.pointer_mut(at) {
                    let keep = if items.is_empty() {
                        0
                    } else {
                        self.arg % items.len()
                    };
                    items.truncate(keep);
                }
            }
            // An unknown field.
            6 => {
                if let Some(Value::Object(map)) = value.pointer_mut(at) {
                    map.insert("surprise".into(), json!(self.arg % 7));
                }
            }
            // Scale a number by a large or tiny factor.
            _ => {
                if let Some(node) = value.pointer_mut(at) {
                    if let Some(x) = node.as_f64() {
                        let factor = [1e3, 1e6, 1e12, 1e-6, -1.0, 0.0][self.arg % 6];
                        *node = json!(x * factor);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The corpus

/// A malformed file of a kind, expected to be refused.
struct Case {
    label: String,
    /// None: the file does not exist.
    bytes: Option<Vec<u8>>,
}

/// The hand-picked malformations of a kind: the file missing, empty, not its format,
/// truncated, of the wrong shape, with an unknown field, and each top-level field (and each
/// field one level down) removed, of the wrong type, or negative.
fn corpus(kind: &Kind) -> Vec<Case> {
    let raw = |label: &str, b: Vec<u8>| Case {
        label: label.into(),
        bytes: Some(match kind.format {
            Format::JsonGz | Format::JsonlGz => gzip(&b),
            _ => b,
        }),
    };
    let plain = kind.encode(kind.base()).unwrap();
    let plain = match kind.format {
        Format::JsonGz | Format::JsonlGz => {
            let mut text = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&plain[..]), &mut text)
                .unwrap();
            text
        }
        _ => plain,
    };
    let mut cases = vec![
        Case {
            label: "missing".into(),
            bytes: None,
        },
        raw("empty", Vec::new()),
        raw("not its format", b"{ this is not [ json or toml".to_vec()),
        raw("truncated", plain[..cut_inside_a_value(&plain)].to_vec()),
    ];
    if kind.format != Format::JsonlGz {
        cases.push(Case {
            label: "a list at the top".into(),
            bytes: kind.encode(&json!([1, 2, 3])),
        });
    }
    if matches!(kind.format, Format::JsonGz | Format::JsonlGz) {
        cases.push(Case {
            label: "not gzip".into(),
            bytes: Some(plain.clone()),
        });
    }
    let mut edit = |label: String, f: &dyn Fn(&mut Value)| {
        let mut v = kind.base().clone();
        f(&mut v);
        if let Some(bytes) = kind.encode(&v) {
            cases.push(Case {
                label,
                bytes: Some(bytes),
            });
        }
    };
    let target = match kind.format {
        Format::JsonlGz => "/0",
        _ => "",
    };
    for (_, at, value) in regressions().into_iter().filter(|r| r.0 == kind.name) {
        edit(format!("{at} = {value} (a fuzz finding)"), &|v| {
            *v.pointer_mut(at).unwrap() = value.clone()
        });
    }
    let top = kind.base().pointer(target).cloned().unwrap_or(Value::Null);
    if let Value::Object(map) = &top {
        edit("an unknown field".into(), &|v| {
            let node = v.pointer_mut(target).unwrap().as_object_mut().unwrap();
            node.insert("surprise".into(), json!(1));
        });
        for (key, child) in map {
            let at = format!("{target}/{key}");
            edit(format!("{key} removed"), &|v| remove(v, &at));
            edit(format!("{key} of the wrong type"), &|v| {
                let node = v.pointer_mut(&at).unwrap();
                *node = if node.is_string() {
                    json!([1])
                } else {
                    json!("x")
                };
            });
            if child.is_number() {
                edit(format!("{key} negative"), &|v| {
                    *v.pointer_mut(&at).unwrap() = json!(-1)
                });
            }
            if let Value::Object(inner) = child {
                for (k2, c2) in inner {
                    let at2 = format!("{at}/{k2}");
                    edit(format!("{key}.{k2} removed"), &|v| remove(v, &at2));
                    if c2.is_number() {
                        edit(format!("{key}.{k2} negative"), &|v| {
                            *v.pointer_mut(&at2).unwrap() = json!(-1)
                        });
                    }
                }
            }
        }
    }
    cases
}

/// Findings of the fuzz harness, kept as corpus cases: (kind, JSON pointer into its base file,
/// the value put there).
fn regressions() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        // Counts summing beyond u64 overflowed a reader's sum (a panic).
        ("counts-warm-start", "/counts/0/0/0", json!(u64::MAX)),
        ("plan-counts", "/counts/0/0/0", json!(u64::MAX)),
        ("prism-counts", "/counts/7/2/0", json!(u64::MAX)),
        ("zipmoe-pool-counts", "/counts/0/0/0", json!(u64::MAX)),
        // A configuration naming no preset was blamed on --preset, not on the file.
        ("smoe-config", "", json!("")),
        // Experts of u64::MAX bytes overflowed the GPU memories drawn (a panic).
        ("prism-config", "/model/expert_bytes", json!(u64::MAX)),
        ("prism-config", "/memory/model_fraction/max", json!(1e12)),
        ("prism", "/model/hidden_bytes", json!(u64::MAX)),
        ("prism", "/servers/1/gpus/1/memory_bytes", json!(u64::MAX)),
        (
            "slimcaching-config",
            "/library/synthetic/expert_bytes/max",
            json!(u64::MAX),
        ),
        ("slimcaching", "/models/0/expert_bytes", json!(u64::MAX)),
        ("sweep-spec", "/axes/0/values/0", json!(1e308)),
        // Layer numbers of 2^32 sized per-layer tables (an allocation abort).
        ("cache-trace-config", "/layers", json!(4_294_967_296u64)),
        ("token-log", "/35/layer", json!(4_294_967_296u64)),
    ]
}

/// Where to cut `text` so that it ends inside a value, not between two (a JSON Lines file cut
/// after a whole line is a valid shorter file).
fn cut_inside_a_value(text: &[u8]) -> usize {
    let mut cut = text.len() / 2;
    while cut > 1 && matches!(text[cut - 1], b'\n' | b'}' | b']' | b' ') {
        cut -= 1;
    }
    cut
}

/// Corpus cases that are valid after all, by kind and label: fields with a documented default
/// (`#[serde(default)]`), and plain JSON where gzip is usual (every count reader takes both).
const ACCEPTED: &[(&str, &str)] = &[
    ("slimcaching", "name removed"),
    ("slimcaching", "backhaul.symmetric removed"),
    ("slimcaching-lp", "name removed"),
    ("slimcaching-lp", "backhaul.symmetric removed"),
    ("prism", "name removed"),
    ("prism", "network removed"),
    ("prism", "workload removed"),
    ("zipmoe", "name removed"),
    ("zipmoe-pool", "ipf removed"),
    ("cache-trace", "shared_experts removed"),
    // A binary trace's held fields: an unknown one is not written; a removed or non-number
    // flag byte, section kind, reserved byte or shared-expert count is written as 0 (all
    // valid), any shared-expert count is valid, and a name or model is any text.
    ("cache-trace-bin", "an unknown field"),
    ("cache-trace-bin", "flags removed"),
    ("cache-trace-bin", "flags of the wrong type"),
    ("cache-trace-bin", "weights removed"),
    ("cache-trace-bin", "weights of the wrong type"),
    ("cache-trace-bin", "reserved removed"),
    ("cache-trace-bin", "reserved of the wrong type"),
    ("cache-trace-bin", "shared_experts removed"),
    ("cache-trace-bin", "shared_experts of the wrong type"),
    ("cache-trace-bin", "shared_experts negative"),
    ("cache-trace-bin", "name removed"),
    ("cache-trace-bin", "name of the wrong type"),
    ("cache-trace-bin", "model removed"),
    ("cache-trace-bin", "model of the wrong type"),
    ("cache-offline", "trace.shared_experts removed"),
    // A balance instance's name, nodes and groups have defaults ("", 1, 1), as has every field
    // of the generator's deployment (8 GPUs, 1 redundant slot each, 1 node, 1 group, no option).
    ("balance", "name removed"),
    ("balance", "num_nodes removed"),
    ("balance", "num_groups removed"),
    ("balance-config", "deployment.gpus removed"),
    ("balance-config", "deployment.extra_per_gpu removed"),
    ("balance-config", "deployment.nodes removed"),
    ("balance-config", "deployment.groups removed"),
    ("balance-config", "deployment.hierarchical removed"),
    ("balance-config", "deployment.one_replica_per_gpu removed"),
    ("balance-counts", "source removed"),
    ("balance-counts", "counts_doc removed"),
    ("balance-counts", "not gzip"),
    ("sweep-spec", "axes removed"),
    ("sweep-spec", "preset removed"),
    ("sweep-spec", "time_limit_s removed"),
    (
        "slimcaching-config",
        "activations.max_sets_per_layer removed",
    ),
    (
        "slimcaching-config",
        "wireless.total_user_bandwidth_hz removed",
    ),
    ("prism-config", "activations.tasks removed"),
    ("prism-config", "network removed"),
    ("prism-config", "workload removed"),
    ("counts-warm-start", "source removed"),
    ("slimcaching-counts", "source removed"),
    ("slimcaching-counts", "counts_doc removed"),
    ("prism-counts", "source removed"),
    ("prism-counts", "counts_doc removed"),
    ("zipmoe-counts", "source removed"),
    ("zipmoe-counts", "counts_doc removed"),
    ("zipmoe-pool-counts", "source removed"),
    ("zipmoe-pool-counts", "counts_doc removed"),
    ("plan-counts", "source removed"),
    ("plan-counts", "counts_doc removed"),
    ("slimcaching-counts", "not gzip"),
    ("prism-counts", "not gzip"),
    ("zipmoe-counts", "not gzip"),
    ("zipmoe-pool-counts", "not gzip"),
    ("plan-counts", "not gzip"),
    ("token-log", "not gzip"),
    ("token-log", "weights removed"),
];

#[test]
fn every_malformed_file_is_refused_in_one_line_naming_it() {
    let dir = scratch("hostile-corpus");
    let mut faults = Vec::new();
    let mut count = 0;
    for kind in kinds(&dir) {
        for (i, case) in corpus(&kind).into_iter().enumerate() {
            if ACCEPTED.contains(&(kind.name.as_str(), case.label.as_str())) {
                continue;
            }
            count += 1;
            let file = dir.join(kind.file_name(&format!("{}-{i}", kind.name)));
            let out = dir.join(format!("{}-{i}-out", kind.name));
            if let Some(bytes) = &case.bytes {
                std::fs::write(&file, bytes).unwrap();
            }
            let outcome = kind.run(&file, &out);
            let name = file.file_name().unwrap().to_str().unwrap();
            let fault = outcome.refusal_fault(name).or_else(|| {
                out.exists()
                    .then(|| "left a file at the output path".into())
            });
            if let Some(fault) = fault {
                faults.push(format!(
                    "{} / {}: {fault}\n    {}",
                    kind.name,
                    case.label,
                    outcome.stderr.trim_end().replace('\n', "\n    ")
                ));
            }
        }
    }
    assert!(
        faults.is_empty(),
        "{} of {count} malformed files not refused cleanly:\n{}",
        faults.len(),
        faults.join("\n")
    );
    assert!(count >= 150, "only {count} cases");
    eprintln!("{count} malformed files, each refused cleanly");
}

/// A malformed value of every numeric (and named) flag (the flag, the command line), each
/// refused in one line naming the flag. `TRACE` is a `switch` cache-trace (E = 8, 6 layers), `PRISM` a tiny Prism instance.
const FLAG_CASES: &[(&str, &str)] = &[
    ("--time-limit", "solve PRISM --time-limit abc"),
    ("--time-limit", "solve PRISM --time-limit=-1"),
    ("--time-limit", "solve PRISM --time-limit nan"),
    ("--time-limit", "solve PRISM --time-limit inf"),
    ("--time-limit", "compare PRISM --time-limit 0"),
    ("--gap", "solve PRISM --gap nan"),
    ("--gap", "compare PRISM --gap=-1"),
    (
        "--max-milp-variables",
        "solve instances/slimcaching-tiny-1.json --method milp --max-milp-variables 1",
    ),
    (
        "--max-milp-variables",
        "compare instances/slimcaching-tiny-1.json --max-milp-variables 0",
    ),
    ("--seed", "solve PRISM --seed=-1"),
    ("--seed", "solve PRISM --seed 1.5"),
    ("--method", "solve PRISM --method simplex"),
    ("--methods", "compare PRISM --methods prism,simplex"),
    ("--seed", "generate prism --seed x -o OUT"),
    ("--preset", "generate prism --preset huge -o OUT"),
    ("--capacity", "replay TRACE --capacity 0"),
    ("--capacity", "replay TRACE --capacity=-2"),
    ("--capacity", "replay TRACE --capacity two"),
    ("capacity", "replay TRACE --capacity 9"),
    ("--experts", "replay TRACE --capacity 2 --experts 0"),
    ("--scope", "replay TRACE --capacity 2 --scope global"),
    ("--methods", "replay TRACE --capacity 2 --methods fifo,arc"),
    ("--methods", "mrc TRACE --methods lru,fifo"),
    ("--methods", "mrc TRACE --methods smoe-window:n=4"),
    ("--methods", "mrc TRACE --methods arc"),
    ("--scope", "mrc TRACE --scope global"),
    ("--experts", "mrc TRACE --experts 0"),
    ("--layer", "offline TRACE --layer=-1 --capacity 2 -o OUT"),
    ("layer", "offline TRACE --layer 6 --capacity 2 -o OUT"),
    ("--capacity", "offline TRACE --layer 0 --capacity 0 -o OUT"),
    (
        "--tokens",
        "offline TRACE --layer 0 --capacity 2 --tokens 0 -o OUT",
    ),
    (
        "--top-j",
        "offline TRACE --layer 0 --capacity 2 --top-j=-1 -o OUT",
    ),
    (
        "--min-mass",
        "offline TRACE --layer 0 --capacity 2 --min-mass 2 -o OUT",
    ),
    (
        "--min-mass",
        "offline TRACE --layer 0 --capacity 2 --min-mass nan -o OUT",
    ),
    ("--capacity", "route TRACE --method lru --capacity 0"),
    ("--capacity", "route TRACE --method top-k --capacity 9"),
    (
        "--capacity",
        "route TRACE --method top-k --capacity 49 --scope pool",
    ),
    ("--capacities", "pareto TRACE --capacities 4,9"),
    ("--capacity", "tpot TRACE --capacity 49"),
    ("--method", "route TRACE --method oracle --capacity 2"),
    ("--capacities", "pareto TRACE --capacities 2,x"),
    ("--capacities", "pareto TRACE --capacities 0"),
    ("--alpha", "tpot TRACE --capacity 2 --alpha=-0.5"),
    ("--alphas", "tpot TRACE --capacity 2 --alphas 0.5,nan"),
    ("--budget-s", "tpot TRACE --capacity 2 --budget-s=-1"),
    ("--load-s", "tpot TRACE --capacity 2 --load-s inf"),
    ("--cpu-s", "tpot TRACE --capacity 2 --cpu-s=-1"),
    ("--gpu-s", "tpot TRACE --capacity 2 --gpu-s nan"),
    ("--common-s", "tpot TRACE --capacity 2 --common-s=-3"),
    ("--split", "tpot TRACE --capacity 2 --split half"),
    ("--capacity", "tpot TRACE --capacity 0"),
    (
        "--replicas",
        "eplb --weights EPLB --replicas 0 --groups 4 --nodes 2 --gpus 8",
    ),
    (
        "--groups",
        "eplb --weights EPLB --replicas 16 --groups 0 --nodes 2 --gpus 8",
    ),
    (
        "--nodes",
        "eplb --weights EPLB --replicas 16 --groups 4 --nodes 0 --gpus 8",
    ),
    (
        "--gpus",
        "eplb --weights EPLB --replicas 16 --groups 4 --nodes 2 --gpus 0",
    ),
    (
        "--gpus",
        "eplb --weights EPLB --replicas 16 --groups 4 --nodes 2 --gpus x",
    ),
    ("--windows", "migrate PRISM --windows 0"),
    ("--mix", "migrate PRISM --mix nan"),
    ("--drift-server", "migrate PRISM --drift-server 99"),
    ("--default-io-bps", "migrate PRISM --default-io-bps 0"),
    ("--stats", "migrate PRISM --stats median"),
    ("--method", "migrate PRISM --method simplex"),
    ("--model", "write-lp PRISM --model fixed -o OUT"),
    ("--model", "write-lp PRISM --model quadratic -o OUT"),
    ("--format", "write-lp PRISM --format xlsx -o OUT"),
    ("--seed", "plan --synthetic --seed=-1"),
    (
        "--instances",
        "verify --claim prism/thm1-greedy-ratio --instances 0",
    ),
    (
        "--instances",
        "verify --claim prism/thm1-greedy-ratio --instances x",
    ),
    ("--jobs", "verify --claim prism/thm1-greedy-ratio --jobs 0"),
    (
        "--time-limit",
        "verify --claim prism/thm1-greedy-ratio --time-limit 0",
    ),
    (
        "--restarts",
        "verify --claim prism/thm1-greedy-ratio --restarts=-1",
    ),
    ("--claim", "verify --claim no-such-claim"),
    (
        "--scale",
        "verify --claim prism/thm1-greedy-ratio --scale huge",
    ),
    ("--paper", "verify --paper 999"),
    (
        "--jobs",
        "sweep instances/sweeps/prism-tiny-small.toml --jobs 0 -o OUT",
    ),
    (
        "--shard",
        "sweep instances/sweeps/prism-tiny-small.toml --shard 3/2 -o OUT",
    ),
    (
        "--shard",
        "sweep instances/sweeps/prism-tiny-small.toml --shard a -o OUT",
    ),
    (
        "--experts",
        "import cache-trace --log TRACE --experts 0 -o OUT",
    ),
    (
        "--experts",
        "import cache-trace --libcachesim LCS --experts 100000 --layers 1 --top-k 1 -o OUT",
    ),
    (
        "--layers",
        "import cache-trace --libcachesim LCS --experts 8 --layers 5000 --top-k 1 -o OUT",
    ),
    (
        "--layers",
        "import cache-trace --libcachesim LCS --experts 8 --layers 0 --top-k 1 -o OUT",
    ),
    (
        "--top-k",
        "import cache-trace --libcachesim LCS --experts 8 --layers 6 --top-k 9 -o OUT",
    ),
    (
        "--libcachesim",
        "import cache-trace --libcachesim LCS --experts 8 -o OUT",
    ),
    ("--format", "export TRACE --format bin -o OUT"),
    ("--object-size", "export TRACE --object-size 0 -o OUT"),
    (
        "--object-size",
        "export TRACE --object-size 5000000000 -o OUT",
    ),
    ("--layer", "export TRACE --layer 6 -o OUT"),
    ("--layer", "export TRACE --layer=-1 -o OUT"),
    (
        "--servers",
        "import slimcaching --counts COUNTS --servers 0 -o OUT",
    ),
    (
        "--users",
        "import slimcaching --counts COUNTS --users 0 -o OUT",
    ),
    (
        "--storage-bytes",
        "import slimcaching --counts COUNTS --storage-bytes=-5 -o OUT",
    ),
];

/// One oracleGeneral record (24 bytes, little-endian: u32 time, u64 obj_id, u32 obj_size, i64
/// next_access_vtime).
fn oracle_record(time: u32, obj_id: u64, obj_size: u32, next: i64) -> Vec<u8> {
    let mut r = time.to_le_bytes().to_vec();
    r.extend_from_slice(&obj_id.to_le_bytes());
    r.extend_from_slice(&obj_size.to_le_bytes());
    r.extend_from_slice(&next.to_le_bytes());
    r
}

#[test]
fn every_malformed_libcachesim_trace_is_refused_in_one_line_naming_it() {
    let dir = scratch("hostile-libcachesim");
    let bin = |records: &[(u32, u64, u32, i64)]| -> Vec<u8> {
        records
            .iter()
            .flat_map(|&(t, id, size, next)| oracle_record(t, id, size, next))
            .collect()
    };
    // Read as E = 4, L = 2, K = 2 (ids of layer 1 are 4..7), or with --renumber.
    let shape = ["--experts", "4", "--layers", "2", "--top-k", "2"];
    let good = [(0, 1, 1, -1), (0, 2, 1, -1), (1, 4, 1, -1), (1, 5, 1, -1)];
    let mut cases: Vec<(&str, &str, Vec<u8>, bool)> = vec![
        ("the valid base", "", bin(&good), false),
        (
            "the valid base with reuse",
            "",
            bin(&[
                (0, 1, 1, 5),
                (0, 2, 1, -1),
                (1, 4, 1, -1),
                (1, 5, 1, 7),
                (2, 1, 1, -1),
                (2, 3, 1, -1),
                (3, 5, 1, i64::MAX),
                (3, 6, 1, -1),
            ]),
            false,
        ),
        ("empty", "no request", vec![], false),
        (
            "truncated record",
            "record 1",
            bin(&good)[..40].to_vec(),
            false,
        ),
        (
            "bad sentinel",
            "record 1.next_access_vtime",
            bin(&[(0, 1, 1, -1), (0, 2, 1, -2), (1, 4, 1, -1), (1, 5, 1, -1)]),
            false,
        ),
        (
            "wrong next index",
            "record 0.next_access_vtime",
            bin(&[(0, 1, 1, 2), (0, 2, 1, -1), (1, 4, 1, -1), (1, 5, 1, -1)]),
            false,
        ),
        (
            "size 0",
            "record 2.obj_size",
            bin(&[(0, 1, 1, -1), (0, 2, 1, -1), (1, 4, 0, -1), (1, 5, 1, -1)]),
            false,
        ),
        (
            "mixed sizes",
            "record 3.obj_size",
            bin(&[(0, 1, 1, -1), (0, 2, 1, -1), (1, 4, 1, -1), (1, 5, 2, -1)]),
            false,
        ),
        (
            "huge id",
            "record 3.obj_id",
            bin(&[
                (0, 1, 1, -1),
                (0, 2, 1, -1),
                (1, 4, 1, -1),
                (1, u64::MAX, 1, -1),
            ]),
            false,
        ),
        (
            "expert of another layer",
            "record 0.obj_id",
            bin(&[(0, 4, 1, -1), (0, 2, 1, -1), (1, 5, 1, -1), (1, 6, 1, -1)]),
            false,
        ),
        (
            "repeated expert",
            "record 1.obj_id",
            bin(&[(0, 1, 1, 2), (0, 1, 1, -1), (1, 4, 1, -1), (1, 5, 1, -1)]),
            false,
        ),
        (
            "more than K experts",
            "record 2.time",
            bin(&[
                (0, 1, 1, -1),
                (0, 2, 1, -1),
                (0, 3, 1, -1),
                (1, 4, 1, -1),
                (1, 5, 1, -1),
            ]),
            false,
        ),
        (
            "a time gap",
            "record 2.time",
            bin(&[(0, 1, 1, -1), (0, 2, 1, -1), (2, 4, 1, -1), (2, 5, 1, -1)]),
            false,
        ),
        (
            "huge time",
            "record 0.time",
            bin(&[(u32::MAX, 1, 1, -1)]),
            false,
        ),
        (
            "half a token",
            "record 1.time",
            bin(&[(0, 1, 1, -1), (0, 2, 1, -1)]),
            false,
        ),
        (
            "renumbered, truncated",
            "record 0",
            bin(&good)[..23].to_vec(),
            true,
        ),
    ];
    // More distinct objects than a layer may have experts, with --renumber.
    let many: Vec<(u32, u64, u32, i64)> = (0..=65536u64).map(|i| (0, i << 20, 1, -1)).collect();
    cases.push(("too many objects", "record 65536.obj_id", bin(&many), true));
    let csv = |body: &str| format!("time,obj_id,obj_size,next_access_vtime\n{body}").into_bytes();
    let csv_cases: Vec<(&str, &str, Vec<u8>)> = vec![
        ("csv: no header", "line 1", b"0,1,1,3\n".to_vec()),
        ("csv: three columns", "line 2", csv("0,1,1\n")),
        (
            "csv: id past u64",
            "line 2.obj_id",
            csv("0,99999999999999999999,1,-1\n"),
        ),
        ("csv: negative size", "line 2.obj_size", csv("0,1,-1,-1\n")),
        ("csv: not utf-8", "", vec![0xff, 0xfe, 0x00]),
        (
            "csv: bad sentinel",
            "line 3.next_access_vtime",
            csv("0,1,1,-1\n0,2,1,-7\n1,4,1,-1\n1,5,1,-1\n"),
        ),
    ];
    let mut faults = Vec::new();
    let mut run = |label: &str, field: &str, file: PathBuf, bytes: &[u8], renumber: bool| {
        std::fs::write(&file, bytes).unwrap();
        let out = dir.join("out.json");
        let mut args = vec![
            "import",
            "cache-trace",
            "--libcachesim",
            file.to_str().unwrap(),
        ];
        if renumber {
            args.push("--renumber");
        } else {
            args.extend(shape);
        }
        args.extend(["-o", out.to_str().unwrap()]);
        let outcome = run_capped(args.iter().map(|a| a.to_string()));
        let name = file.file_name().unwrap().to_str().unwrap().to_string();
        let fault = if label.starts_with("the valid base") {
            (outcome.code != Some(0)).then(|| "the valid base is refused".to_string())
        } else {
            outcome
                .refusal_fault(&name)
                .or_else(|| outcome.refusal_fault(field))
                .or_else(|| {
                    out.exists()
                        .then(|| "left a file at the output path".into())
                })
        };
        let _ = std::fs::remove_file(&out);
        if let Some(fault) = fault {
            faults.push(format!(
                "{label}: {fault}\n    {}",
                outcome.stderr.trim_end()
            ));
        }
    };
    for (i, (label, field, bytes, renumber)) in cases.iter().enumerate() {
        run(
            label,
            field,
            dir.join(format!("case-{i}.oracleGeneral")),
            bytes,
            *renumber,
        );
    }
    for (i, (label, field, bytes)) in csv_cases.iter().enumerate() {
        run(
            label,
            field,
            dir.join(format!("case-{i}.csv")),
            bytes,
            false,
        );
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn every_malformed_flag_is_refused_in_one_line_naming_it() {
    let dir = scratch("hostile-flags");
    let switch = trace(&dir, "switch");
    let counts = dir.join("counts.json");
    std::fs::write(&counts, warm_start_counts().to_string()).unwrap();
    let log = dir.join("log.jsonl");
    std::fs::write(
        &log,
        r#"{"seq": 0, "token": 0, "layer": 0, "experts": [1], "weights": null, "phase": "decode"}"#,
    )
    .unwrap();
    let lcs = dir.join("switch.oracleGeneral");
    ok(moe_opt().arg("export").arg(&switch).arg("-o").arg(&lcs));
    let out = dir.join("out");
    let mut faults = Vec::new();
    for (flag, args) in FLAG_CASES {
        let args: Vec<String> = args
            .split_whitespace()
            .map(|a| {
                match a {
                    "TRACE" => switch.to_str().unwrap(),
                    "PRISM" => "instances/prism-tiny-1.json",
                    "EPLB" => common::EPLB_EXAMPLE,
                    "COUNTS" => counts.to_str().unwrap(),
                    "LOG" => log.to_str().unwrap(),
                    "LCS" => lcs.to_str().unwrap(),
                    "OUT" => out.to_str().unwrap(),
                    other => other,
                }
                .to_string()
            })
            .collect();
        let outcome = run_capped(args.clone());
        let fault = outcome.refusal_fault(flag).or_else(|| {
            out.exists()
                .then(|| "left a file at the output path".into())
        });
        if let Some(fault) = fault {
            faults.push(format!(
                "{args:?}: {fault}\n    {}",
                outcome.stderr.trim_end()
            ));
        }
    }
    assert!(
        faults.is_empty(),
        "{} of {} malformed flags not refused cleanly:\n{}",
        faults.len(),
        FLAG_CASES.len(),
        faults.join("\n")
    );
    eprintln!("{} malformed flags, each refused cleanly", FLAG_CASES.len());
}

/// The EPLB example's weights as a held `.npy` array ([`Format::Npy`]).
fn npy_base(example: &Value) -> Value {
    let rows = example["weight"].as_array().unwrap();
    let data: Vec<Value> = rows
        .iter()
        .flat_map(|r| r.as_array().unwrap().clone())
        .collect();
    let cols = data.len() / rows.len();
    json!({"descr": "<f8", "fortran_order": false, "shape": [rows.len(), cols], "data": data})
}

/// Malformed `.npy` weight files: `eplb` refuses each with exit 2 and one line naming the file
/// and the field; a good one of the same shape is read.
#[test]
fn malformed_npy_weights_are_refused_naming_the_file_and_the_field() {
    // 8 slots in 2 groups on 1 node of 2 GPUs, for the malformed files and the good one alike.
    const EPLB_LAYOUT: [&str; 8] = [
        "--replicas",
        "8",
        "--groups",
        "2",
        "--nodes",
        "1",
        "--gpus",
        "2",
    ];
    let dir = scratch("hostile-npy");
    // A `.npy` of `data` under a header of `descr`, `fortran_order` and `shape`.
    let npy = |descr: &str, fortran: &str, shape: &str, data: &[u8]| {
        let header =
            format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}");
        npy_bytes(&header, data)
    };
    let zeros = vec![0u8; 8 * 2 * 4];
    let cases: Vec<(&str, &str, Vec<u8>)> = vec![
        ("empty", "magic", Vec::new()),
        ("zip", "magic", b"PK\x03\x04 not numpy".to_vec()),
        (
            "truncated",
            "data",
            npy("<f8", "False", "(2, 4)", &zeros[..40]),
        ),
        (
            "trailing",
            "data",
            npy("<f8", "False", "(2, 4)", &[zeros.clone(), vec![0]].concat()),
        ),
        ("big-endian", "descr", npy(">f8", "False", "(2, 4)", &zeros)),
        ("object", "descr", npy("|O", "False", "(2, 4)", &zeros)),
        (
            "fortran",
            "fortran_order",
            npy("<f8", "True", "(2, 4)", &zeros),
        ),
        ("three-d", "shape", npy("<f8", "False", "(1, 2, 4)", &zeros)),
        (
            "huge",
            "shape",
            npy("<f8", "False", "(4294967296, 4294967296)", &[]),
        ),
        ("negative", "shape", npy("<f8", "False", "(-2, 4)", &zeros)),
        (
            "header",
            "header",
            b"\x93NUMPY\x01\x00\xff\xff{'descr'".to_vec(),
        ),
    ];
    let mut faults = Vec::new();
    for (name, field, bytes) in &cases {
        let file = dir.join(format!("{name}.npy"));
        std::fs::write(&file, bytes).unwrap();
        let mut args = vec![
            "eplb".to_string(),
            "--weights".into(),
            file.display().to_string(),
        ];
        args.extend(EPLB_LAYOUT.map(String::from));
        faults.extend(file_refusal_fault(args, name, &file, field));
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    // The same layout with valid values is read: 2 layers of 4 experts, 8 slots on 2 GPUs.
    let mut data = Vec::new();
    for x in [4.0f64, 3.0, 2.0, 1.0, 1.0, 2.0, 3.0, 4.0] {
        data.extend(x.to_le_bytes());
    }
    let good = dir.join("good.npy");
    std::fs::write(&good, npy("<f8", "False", "(2, 4)", &data)).unwrap();
    let out = std::process::Command::new(common::bin())
        .args(["eplb", "--weights"])
        .arg(&good)
        .args(EPLB_LAYOUT)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["layers"], 2);
    assert_eq!(report["logical_experts"], 4);
}

/// Malformed binary traces: `replay` refuses each with exit 2 and one line naming the file and
/// the field (truncated, wrong magic, unknown version, an expert id >= E, counts that disagree,
/// ...); the well-formed base is replayed.
#[test]
fn malformed_binary_traces_are_refused_naming_the_file_and_the_field() {
    let dir = scratch("hostile-trace-bin");
    let switch = trace(&dir, "switch");
    let base = trace_bin_base(&read_value(&switch, Format::Json), 12);
    let good = encode_trace_bin(&base);
    let edit = |at: &str, value: Value| {
        let mut v = base.clone();
        *v.pointer_mut(at).unwrap() = value;
        encode_trace_bin(&v)
    };
    let e = base["experts"].as_u64().unwrap();
    let cases: Vec<(&str, &str, Vec<u8>)> = vec![
        ("header-only", "name", good[..56].to_vec()),
        ("truncated", "logits", good[..good.len() - 3].to_vec()),
        ("trailing", "logits", [good.clone(), vec![0]].concat()),
        ("magic", "magic", edit("/magic", json!("MOETRACX"))),
        ("version", "version", edit("/version", json!(2))),
        ("flags", "flags", edit("/flags", json!(6))),
        ("weights-kind", "weights", edit("/weights", json!(3))),
        ("experts-zero", "experts", edit("/experts", json!(0))),
        ("top-k", "top_k", edit("/top_k", json!(e + 1))),
        ("layers", "layers", edit("/layers", json!(5000))),
        (
            "id",
            "tokens[3].layers[2].experts[0]",
            edit("/ids/20", json!(e)),
        ),
        (
            "duplicate",
            "tokens[0].layers[0].experts[0]",
            edit("/ids/0", json!(e)),
        ),
        ("tokens", "tokens", edit("/tokens", json!(13))),
        ("runs-count", "runs", edit("/runs", json!(1u64 << 40))),
        (
            "run-count",
            "runs[0].count",
            edit("/run_records/0/2", json!(0)),
        ),
        (
            "run-phase",
            "runs[0].phase",
            edit("/run_records/0/3", json!(9)),
        ),
        ("huge-tokens", "tokens", edit("/tokens", json!(u64::MAX))),
        (
            "logit",
            "tokens[0].layers[0].logits[0]",
            edit("/logit_values/0", json!(1e300)),
        ),
    ];
    let mut faults = Vec::new();
    for (name, field, bytes) in &cases {
        let file = dir.join(format!("{name}.bin"));
        std::fs::write(&file, bytes).unwrap();
        let args = ["replay", file.to_str().unwrap(), "--capacity", "2"].map(String::from);
        faults.extend(file_refusal_fault(args, name, &file, field));
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    let file = dir.join("good.bin");
    std::fs::write(&file, &good).unwrap();
    let report: Value = serde_json::from_str(&ok(moe_opt().arg("replay").arg(&file).args([
        "--capacity",
        "2",
        "--json",
    ])))
    .unwrap();
    assert_eq!(report["trace"]["tokens"], 12);
}

// ---------------------------------------------------------------------------------------------
// The fuzz harness

/// What the fuzz runs of one kind saw.
#[derive(Default)]
struct Tally {
    accepted: std::cell::Cell<u64>,
    refused: std::cell::Cell<u64>,
    slow: std::cell::Cell<u64>,
}

impl Tally {
    fn count(cell: &std::cell::Cell<u64>) {
        cell.set(cell.get() + 1);
    }
}

/// Runs one mutated file of `kind` (base `base`, then `mutations`) through its command; a
/// finding is any exit but 0 or 2, a refusal not in one line naming the file, or a file left
/// at the output path by a refusal.
fn fuzz_case(
    kind: &Kind,
    dir: &Path,
    (base, mutations): &(usize, Vec<Mutation>),
    tally: &Tally,
) -> Result<(), TestCaseError> {
    let mut value = kind.bases[base % kind.bases.len()].clone();
    for m in mutations {
        m.apply(&mut value);
    }
    let Some(bytes) = kind.encode(&value) else {
        return Ok(()); // TOML cannot say null: nothing to run
    };
    let file = dir.join(kind.file_name("case"));
    let out = dir.join("case-out");
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::write(&file, bytes).unwrap();
    let outcome = kind.run(&file, &out);
    let fault = match outcome.code {
        Some(0) => {
            Tally::count(&tally.accepted);
            None
        }
        _ if outcome.timed_out() => {
            Tally::count(&tally.slow);
            None
        }
        _ => {
            Tally::count(&tally.refused);
            outcome
                .refusal_fault(file.file_name().unwrap().to_str().unwrap())
                .or_else(|| {
                    out.exists()
                        .then(|| "left a file at the output path".into())
                })
        }
    };
    match fault {
        None => Ok(()),
        Some(fault) => Err(TestCaseError::fail(format!(
            "{fault}\n{}",
            outcome.stderr.trim_end()
        ))),
    }
}

/// Fuzzes one kind: a short fixed run by default; MOE_OPT_FUZZ_SECONDS long with it (batches
/// of seeded cases until the time is up; MOE_OPT_FUZZ_SEED varies the seeds between runs).
/// A finding is shrunk to its fewest mutations, saved under `target/tmp/fuzz-findings/` and
/// fails the test with the command that reproduces it.
fn fuzz(name: &str) {
    let dir = scratch(&format!("fuzz-{name}"));
    let Some(kind) = kinds(&dir).into_iter().find(|k| k.name == name) else {
        eprintln!("skipped: no base file of {name} here");
        return;
    };
    let seconds: Option<f64> = std::env::var("MOE_OPT_FUZZ_SECONDS")
        .ok()
        .map(|s| s.parse().expect("MOE_OPT_FUZZ_SECONDS: seconds"));
    let run_seed: u64 = std::env::var("MOE_OPT_FUZZ_SEED")
        .ok()
        .map_or(0, |s| s.parse().expect("MOE_OPT_FUZZ_SEED: a whole number"));
    let strategy = (any::<usize>(), prop::collection::vec(mutation(), 1..4));
    let tally = Tally::default();
    let start = Instant::now();
    for batch in 0u64.. {
        let mut seed = [0u8; 32];
        for (i, b) in name.bytes().enumerate() {
            seed[i % 16] ^= b;
        }
        seed[16..24].copy_from_slice(&run_seed.to_le_bytes());
        seed[24..].copy_from_slice(&batch.to_le_bytes());
        let config = Config {
            cases: if seconds.is_some() { 64 } else { 16 },
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
        if let Err(e) = runner.run(&strategy, |case| fuzz_case(&kind, &dir, &case, &tally)) {
            panic!("{}", finding(&kind, e));
        }
        let elapsed = start.elapsed();
        if seconds.is_none_or(|s| elapsed >= Duration::from_secs_f64(s)) {
            break;
        }
    }
    eprintln!(
        "fuzz {name}: {} cases in {:.0} s, no finding ({} accepted, {} refused, {} slow)",
        tally.accepted.get() + tally.refused.get() + tally.slow.get(),
        start.elapsed().as_secs_f64(),
        tally.accepted.get(),
        tally.refused.get(),
        tally.slow.get()
    );
}

/// Saves a shrunk finding and says how to reproduce it.
fn finding(kind: &Kind, error: proptest::test_runner::TestError<(usize, Vec<Mutation>)>) -> String {
    let proptest::test_runner::TestError::Fail(reason, (base, mutations)) = error else {
        return format!("fuzz {}: {error}", kind.name);
    };
    let mut value = kind.bases[base % kind.bases.len()].clone();
    for m in &mutations {
        m.apply(&mut value);
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-findings");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(kind.file_name(&kind.name));
    std::fs::write(&file, kind.encode(&value).unwrap()).unwrap();
    let args: Vec<String> = kind
        .args
        .iter()
        .map(|a| match a.as_str() {
            "FILE" => file.display().to_string(),
            "OUT" => "/tmp/out".into(),
            _ => a.clone(),
        })
        .collect();
    format!(
        "fuzz {}: finding (base {base}, mutations {mutations:?}): {reason}\nsaved: {}\nreproduce: moe-opt {}",
        kind.name,
        file.display(),
        args.join(" ")
    )
}

/// One test per file kind, so that `cargo test` runs them in parallel.
macro_rules! fuzz_tests {
    ($($test:ident: $kind:literal,)*) => {
        $(
            #[test]
            fn $test() {
                fuzz($kind);
            }
        )*
    };
}

fuzz_tests! {
    fuzz_slimcaching: "slimcaching",
    fuzz_libcachesim_oracle: "libcachesim-oracle",
    fuzz_libcachesim_csv: "libcachesim-csv",
    fuzz_slimcaching_lp: "slimcaching-lp",
    fuzz_prism: "prism",
    fuzz_zipmoe: "zipmoe",
    fuzz_zipmoe_pool: "zipmoe-pool",
    fuzz_smoe: "smoe",
    fuzz_cache_trace: "cache-trace",
    fuzz_cache_trace_bin: "cache-trace-bin",
    fuzz_cache_offline: "cache-offline",
    fuzz_eplb_weights: "eplb-weights",
    fuzz_eplb_npy: "eplb-npy",
    fuzz_sweep_spec: "sweep-spec",
    fuzz_counts_warm_start: "counts-warm-start",
    fuzz_slimcaching_config: "slimcaching-config",
    fuzz_prism_config: "prism-config",
    fuzz_zipmoe_config: "zipmoe-config",
    fuzz_smoe_config: "smoe-config",
    fuzz_balance: "balance",
    fuzz_balance_config: "balance-config",
    fuzz_balance_counts: "balance-counts",
    fuzz_cache_trace_config: "cache-trace-config",
    fuzz_slimcaching_counts: "slimcaching-counts",
    fuzz_prism_counts: "prism-counts",
    fuzz_zipmoe_counts: "zipmoe-counts",
    fuzz_zipmoe_pool_counts: "zipmoe-pool-counts",
    fuzz_plan_counts: "plan-counts",
    fuzz_counts_npy: "counts-npy",
    fuzz_counts_csv: "counts-csv",
    fuzz_token_log: "token-log",
}

#[test]
fn every_kind_has_a_fuzz_test() {
    let dir = scratch("hostile-kinds");
    let source = include_str!("hostile.rs");
    for kind in kinds(&dir) {
        assert!(
            source.contains(&format!(": \"{}\",", kind.name)),
            "{} has no fuzz test",
            kind.name
        );
    }
}

/// ZipMoE's import configuration (any field alone): an error of its own is named as the
/// configuration file and the field, not as the count file.
#[test]
fn an_import_configuration_error_names_the_configuration_file() {
    let dir = scratch("hostile-import-config");
    let counts = dir.join("counts.json");
    std::fs::write(&counts, warm_start_counts().to_string()).unwrap();
    let (config, out) = (dir.join("config.json"), dir.join("out.json"));
    let states = json!({"full": 2.0, "compressed": 0.0, "sm_cached": 0.0, "e_cached": 0.0});
    for (content, field) in [
        (json!({"prompts": []}), "prompts"),
        (json!({ "states": states }), "states"),
    ] {
        std::fs::write(&config, content.to_string()).unwrap();
        let args = [
            "import",
            "zipmoe",
            "--counts",
            counts.to_str().unwrap(),
            "--config",
        ]
        .into_iter()
        .map(String::from)
        .chain([
            config.display().to_string(),
            "-o".into(),
            out.display().to_string(),
        ]);
        let outcome = run_capped(args.collect::<Vec<_>>());
        let fault = outcome.refusal_fault(&format!("config.json: {field}:"));
        assert!(fault.is_none(), "{content}: {fault:?}: {}", outcome.stderr);
        assert!(!out.exists());
    }
}
