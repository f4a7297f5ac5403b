//! ZipMoE's command functions: reports, CSV charts, size limits, the counts importer.

use std::path::Path;

use moe_opt::report::RunOptions;
use moe_opt::zipmoe::commands::{compare, gantt_csv, generate, import, solve, write_lp};
use moe_opt::zipmoe::generate::{device_for_model, ImportConfig, DEVICE_RATES};
use moe_opt::zipmoe::methods::{Method, Reference};

#[test]
fn compare_on_a_tiny_layer_has_a_proved_optimum() {
    let g = generate("tiny", 1).unwrap();
    assert_eq!(generate("tiny", 1).unwrap().instance, g.instance);
    let r = compare(&g.instance, &Method::ALL, &RunOptions::default()).unwrap();
    let Reference::Optimum(opt) = r.reference else {
        panic!("no optimum: {:?}", r.reference)
    };
    assert!(r.skipped.is_empty());
    for m in &r.methods {
        let ratio = m.ratio.unwrap();
        assert!(ratio >= 1.0 - 1e-6, "{:?}", m.method);
        if m.method.is_exact() {
            assert!((ratio - 1.0).abs() < 1e-6);
        }
    }
    assert!(r.lower_bound.io_s <= opt + 1e-9);
    assert!(r.text().contains("cache-affinity"));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["layer"]["sha256"].as_str().unwrap().len(), 64);
    assert!(write_lp(&g.instance)
        .unwrap()
        .starts_with("\\ ZipMoE layer makespan"));
}

#[test]
fn gantt_rows_export_as_csv() {
    let g = generate("small", 2).unwrap();
    let s = solve(&g.instance, Method::CacheAffinity, &RunOptions::default()).unwrap();
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
            &g.instance,
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
    let path = Path::new("../shared/data/activation-counts/qwen.json.gz");
    let path = if path.exists() {
        path.to_path_buf()
    } else {
        Path::new("/work/shared/data/activation-counts/qwen.json.gz").to_path_buf()
    };
    if !path.exists() {
        eprintln!("skipped: {} is absent", path.display());
        return;
    }
    let (model, counts) = moe_opt::zipmoe::generate::read_counts(&path).unwrap();
    let config = ImportConfig {
        prompts: vec![0, 1],
        layer: 3,
        device: device_for_model(&model).unwrap(),
        states: DEVICE_RATES,
        seed: 9,
    };
    let r = import(&path, &config).unwrap();
    // Token counts are the two prompts' sums at layer 3; selected = the positive ones.
    let sums: Vec<u32> = (0..counts[0][3].len())
        .map(|e| counts[0][3][e] + counts[1][3][e])
        .collect();
    let selected: Vec<(u32, u32)> = sums
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(e, &c)| (e as u32, c))
        .collect();
    let got: Vec<(u32, u32)> = r
        .instance
        .experts
        .iter()
        .map(|e| (e.id, e.tokens))
        .collect();
    assert_eq!(got, selected);
    assert_eq!(import(&path, &config).unwrap().instance, r.instance);
    let bad = ImportConfig {
        layer: 999,
        ..config
    };
    let e = import(&path, &bad).unwrap_err().to_string();
    assert!(e.contains("qwen.json.gz") && e.contains("layer 999"), "{e}");
}
