//! ZipMoE's command functions: reports, CSV charts, size limits, the counts importer.

mod common;

use common::ok;

use formulations::zipmoe::Instance;
use moe_opt::counts::Header;
use moe_opt::problem::Problem;
use moe_opt::problem::RunOptions;
use moe_opt::zipmoe::commands::{compare, gantt_csv, solve, write_lp};
use moe_opt::zipmoe::generate::{
    device_for_model, import, try_generate, GeneratorConfig, ImportConfig, DEVICE_RATES,
};
use moe_opt::zipmoe::methods::{Method, Reference, ZipMoe};

/// The layer of a preset at a seed.
fn generate(preset: &str, seed: u64) -> Result<Instance, String> {
    let config = GeneratorConfig::preset(preset.parse()?);
    try_generate(&config, seed).map_err(|e| e.to_string())
}

#[test]
fn compare_on_a_tiny_layer_has_a_proved_optimum() {
    let g = generate("tiny", 1).unwrap();
    assert_eq!(generate("tiny", 1).unwrap(), g);
    let r = compare(&g, Method::ALL, &RunOptions::default()).unwrap();
    let Reference::Optimum { value: opt, .. } = r.reference else {
        panic!("no optimum: {:?}", r.reference)
    };
    assert!(r.skipped.is_empty());
    for m in &r.methods {
        let ratio = m.ratio.unwrap();
        assert!(ratio >= 1.0 - 1e-6, "{:?}", m.method);
        if ZipMoe::is_exact(m.method) {
            assert!((ratio - 1.0).abs() < 1e-6);
        }
    }
    assert!(r.lower_bound.io_s <= opt + 1e-9);
    assert!(r.text().contains("cache-affinity"));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["layer"]["sha256"].as_str().unwrap().len(), 64);
    assert!(write_lp(&g)
        .unwrap()
        .starts_with("\\ ZipMoE layer makespan"));
}

#[test]
fn gantt_rows_export_as_csv() {
    let g = generate("small", 2).unwrap();
    let s = solve(&g, Method::CacheAffinity, &RunOptions::default()).unwrap();
    let csv = gantt_csv(&s.gantt);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("resource,operation,expert,tensor,shard,start_s,end_s")
    );
    assert_eq!(lines.count(), s.gantt.len());
    assert!(csv.contains(",execute,"));
}

#[test]
fn device_presets_are_too_large_for_the_exact_methods() {
    for preset in ["qwen-orin", "deepseek-orin", "switch-orin"] {
        let g = generate(preset, 0).unwrap();
        let r = compare(
            &g,
            &[
                Method::Exhaustive,
                Method::Milp,
                Method::CacheAffinity,
                Method::Fifo,
            ],
            &RunOptions::default(),
        )
        .unwrap();
        assert_eq!(r.methods.len(), 2, "{preset}");
        assert_eq!(r.skipped.len(), 2);
        assert_eq!(r.reference, Reference::None);
        assert!(r
            .methods
            .iter()
            .all(|m| m.makespan_s.unwrap() >= r.lower_bound.io_s));
    }
    assert!(generate("nonsense", 0).is_err());
}

#[test]
fn importer_reads_real_counts() {
    let Some(path) = common::shared_data("activation-counts/qwen.json.gz") else {
        return;
    };
    let moe_opt::counts::ActivationCounts { model, counts, .. } =
        moe_opt::counts::read(&path, &Header::default()).unwrap();
    let config = ImportConfig {
        prompts: vec![0, 1],
        layer: Some(3),
        device: Some(device_for_model(&model).unwrap()),
        states: DEVICE_RATES,
        seed: 9,
    };
    let r = import(&path, &Header::default(), &config).unwrap();
    // Token counts are the two prompts' sums at layer 3; selected = the positive ones.
    let sums: Vec<u32> = (0..counts[0][3].len())
        .map(|e| (counts[0][3][e] + counts[1][3][e]) as u32)
        .collect();
    let selected: Vec<(u32, u32)> = sums
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(e, &c)| (e as u32, c))
        .collect();
    let got: Vec<(u32, u32)> = r.experts.iter().map(|e| (e.id, e.tokens)).collect();
    assert_eq!(got, selected);
    assert_eq!(import(&path, &Header::default(), &config).unwrap(), r);
    let bad = ImportConfig {
        layer: Some(999),
        ..config
    };
    let e = import(&path, &Header::default(), &bad)
        .unwrap_err()
        .to_string();
    assert!(e.contains("qwen.json.gz") && e.contains("layer 999"), "{e}");
}

/// A plain-JSON counts file: 2 prompts x 2 layers x 3 experts; prompt 0 routes nothing at
/// layer 0, 3 tokens to expert 0 and 1 to expert 2 at layer 1; prompt 1 routes 1 token to
/// expert 0 at layer 0 and 2 to expert 1 at layer 1.
fn tiny_counts(test: &str, model: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("moe-opt-zipmoe-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("counts.json");
    let json = serde_json::json!({
        "format": "moe-activation-counts/v1",
        "model": model,
        "top_k": 1,
        "experts_per_layer": 3,
        "prompts": 2,
        "layers": 2,
        "counts": [[[0, 0, 0], [3, 0, 1]], [[1, 0, 0], [0, 2, 0]]],
    });
    std::fs::write(&path, json.to_string()).unwrap();
    path
}

#[test]
fn import_needs_no_configuration_for_a_known_model() {
    let path = tiny_counts("default", "Qwen1.5-MoE-A2.7B-Chat");
    let i = moe_opt::zipmoe::generate::import(&path, &Header::default(), &ImportConfig::default())
        .unwrap();
    // Prompt 0, first layer with a routed token: layer 1, experts 0 (3 tokens) and 2 (1).
    let selected: Vec<(u32, u32)> = i.experts.iter().map(|e| (e.id, e.tokens)).collect();
    assert_eq!(selected, vec![(0, 3), (2, 1)]);
    assert_eq!(i.name, "Qwen1.5-MoE-A2.7B-Chat layer 1 prompts [0]");
    // The Orin device of the qwen-orin preset, derived by hand: gate/up/down tensors of
    // 2048 x 1408 BF16, SM-chunk 2,883,584 B read at 3.5 GB/s = 0.000823881 s; K = 4, L = 8,
    // rho = 0.36, c = 2.5 u / K; p = 85 us + 1 us per token.
    let u = 2_883_584.0 / 3.5e9;
    assert_eq!(
        (
            i.tensors_per_expert,
            i.shards,
            i.threads,
            i.compression_ratio
        ),
        (3, 4, 8, 0.36)
    );
    assert!((i.sm_read_s - u).abs() < 1e-15 && (i.decompress_s - 2.5 * u / 4.0).abs() < 1e-15);
    let p: Vec<f64> = i.experts.iter().map(|e| e.gpu_s).collect();
    assert!(
        (p[0] - 88e-6).abs() < 1e-15 && (p[1] - 86e-6).abs() < 1e-15,
        "{p:?}"
    );
    // Any field alone overrides its default; the others stay.
    let both: ImportConfig = serde_json::from_str(r#"{"prompts": [0, 1], "layer": 0}"#).unwrap();
    let i = moe_opt::zipmoe::generate::import(&path, &Header::default(), &both).unwrap();
    let selected: Vec<(u32, u32)> = i.experts.iter().map(|e| (e.id, e.tokens)).collect();
    assert_eq!(selected, vec![(0, 1)]);
    assert_eq!(i.threads, 8);
    // An unknown model needs its device.
    let other = tiny_counts("unknown", "mystery-moe");
    let e = moe_opt::zipmoe::generate::import(&other, &Header::default(), &ImportConfig::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("device") && e.contains("mystery-moe"), "{e}");
    let with_device = ImportConfig {
        device: device_for_model("deepseek"),
        ..ImportConfig::default()
    };
    assert_eq!(
        moe_opt::zipmoe::generate::import(&other, &Header::default(), &with_device)
            .unwrap()
            .experts
            .len(),
        2
    );
}

#[test]
fn import_on_the_command_line_without_and_with_a_configuration() {
    let path = tiny_counts("cli", "DeepSeek-V2-Lite-Chat");
    let dir = path.parent().unwrap();
    let run = |extra: &[&str], out: &str| -> serde_json::Value {
        let out = dir.join(out);
        ok(common::moe_opt()
            .args(["import", "zipmoe", "--counts"])
            .arg(&path)
            .args(extra)
            .arg("-o")
            .arg(&out));
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
    };
    let library = |c: &ImportConfig| {
        serde_json::to_value(
            moe_opt::zipmoe::generate::import(&path, &Header::default(), c).unwrap(),
        )
        .unwrap()
    };
    assert_eq!(run(&[], "default.json"), library(&ImportConfig::default()));
    let config = dir.join("config.json");
    std::fs::write(&config, r#"{"prompts": [1], "seed": 4}"#).unwrap();
    let overridden = ImportConfig {
        prompts: vec![1],
        seed: 7,
        ..ImportConfig::default()
    };
    let got = run(
        &["--config", config.to_str().unwrap(), "--seed", "7"],
        "config.json.out",
    );
    assert_eq!(got, library(&overridden));
    assert_eq!(got["name"], "DeepSeek-V2-Lite-Chat layer 0 prompts [1]");
}
