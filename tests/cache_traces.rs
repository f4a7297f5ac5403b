//! Cache traces end to end: the real token logs of ../shared/data/token-traces/ through the
//! importer, every policy and the statistics; activation counts refused for replay; the
//! calibrated generator presets against the real logs' statistics; the real logs through
//! libCacheSim's formats and back. Tests that read the real
//! data skip with a printed reason where the folder is absent.

use formulations::cache::binary::Packed;
use formulations::cache::model::Trace;
use moe_opt::cache::commands::{self, PolicyChoice};
use moe_opt::cache::fast::replay_packed;
use moe_opt::cache::generate::{generate, GeneratorConfig, Preset};
use moe_opt::cache::import::{self, FrequencyWarmStart, ImportOptions};
use moe_opt::cache::mrc::{mrc, POLICIES};
use moe_opt::cache::policies::{replay_trace, PolicySpec, Scope};
use moe_opt::cache::stats::{trace_stats, CalibrationGrid};

mod common;

use common::shared_data as data;

/// A generated trace of a preset cut to `layers` layers of `tokens_per_sequence`-token
/// sequences (a fast test).
fn shortened(preset: Preset, layers: usize, tokens_per_sequence: usize, seed: u64) -> Trace {
    let config = GeneratorConfig {
        layers,
        tokens_per_sequence,
        ..GeneratorConfig::preset(preset)
    };
    generate(&config, seed).unwrap()
}

const LOGS: [(&str, Preset); 3] = [
    (
        "token-traces/olmoe_1b7b_0924_warp_decode.jsonl.gz",
        Preset::Olmoe,
    ),
    (
        "token-traces/kimi_linear_48b_a3b_warp_decode.jsonl.gz",
        Preset::Kimi,
    ),
    (
        "token-traces/switch_base8_encoder_top1.jsonl.gz",
        Preset::Switch,
    ),
];

/// A real token log imported with the default options (None where the data are absent).
fn real_log(rel: &str) -> Option<Trace> {
    data(rel).map(|path| import::import_token_log(&path, &ImportOptions::default()).unwrap())
}

/// The real logs' statistics as measured by `trace_stats` (the figures of docs/problems/caches.md), in the
/// order of `LOGS`: (next-token overlap, per-layer LRU miss rate at C = E/2).
const MEASURED: [(f64, f64); 3] = [(0.4352, 0.2058), (0.3356, 0.1335), (0.1756, 0.4775)];

#[test]
fn real_log_statistics_are_the_readme_figures() {
    // Switch by hand from the independent-routing baseline: with E = 8, K = 1, uniform
    // independent routing would give overlap 1/8 = 0.125 and an LRU miss rate near 1/2 at
    // C = 4; the real encoder trace has slightly more locality than that.
    for ((rel, _), (overlap, miss)) in LOGS.iter().zip(MEASURED) {
        let Some(t) = real_log(rel) else { return };
        let s = trace_stats(&t);
        assert!(
            (s.next_token_overlap - overlap).abs() < 5e-5,
            "{rel}: {s:?}"
        );
        assert!((s.lru_miss_rate_half - miss).abs() < 5e-5, "{rel}: {s:?}");
    }
}

#[test]
fn smoe_window_runs_on_generated_logits_in_a_pool() {
    let t = shortened(Preset::DeepseekV2Lite, 3, 60, 2);
    let report = commands::replay(&t, 96, &PolicyChoice::All, Scope::Pool, None).unwrap();
    assert!(report.skipped.is_empty());
    assert_eq!(report.results.len(), 6);
    let distinct: std::collections::BTreeSet<(usize, u32)> = t
        .tokens
        .iter()
        .flat_map(|tok| {
            tok.layers
                .iter()
                .enumerate()
                .flat_map(|(l, r)| r.experts.iter().map(move |&e| (l, e)))
        })
        .collect();
    for r in &report.results {
        // Cold start: every distinct (layer, expert) requested is loaded at least once.
        assert!(r.total.loads >= distinct.len() as u64, "{}", r.policy);
        assert_eq!(r.total.requests, 60 * 3 * 6);
        let per_layer: u64 = r.layers.iter().map(|l| l.loads).sum();
        assert_eq!(per_layer, r.total.loads);
    }
}

#[test]
fn real_logs_import_with_their_shapes_and_replay_under_every_weight_free_policy() {
    let shapes = [(64, 8, 16, 299), (256, 8, 26, 300), (8, 1, 6, 215)];
    for ((rel, _), (e, k, l, n)) in LOGS.iter().zip(shapes) {
        let Some(path) = data(rel) else { return };
        let imported = commands::import_token_log(&path, &ImportOptions::default()).unwrap();
        let t = &imported.trace;
        assert_eq!((t.experts, t.top_k, t.layers, t.tokens.len()), (e, k, l, n));
        assert_eq!(t.ranked, k == 1, "sorted-by-id logs lose the rank");
        let report = commands::replay(t, e / 2, &PolicyChoice::All, Scope::PerLayer, None).unwrap();
        // smoe-window needs logits: skipped with a reason, the five others ran.
        assert_eq!(report.skipped.len(), 1);
        assert_eq!(report.results.len(), 5);
        // Belady (MIN) is optimal for a fixed request stream: no online policy loads less.
        let belady = report
            .results
            .iter()
            .find(|r| r.policy == PolicySpec::Belady)
            .unwrap();
        for r in &report.results {
            assert!(
                belady.total.loads <= r.total.loads,
                "{} beat Belady",
                r.policy
            );
        }
        for r in &report.results {
            assert_eq!(r.total.requests, (n * l * k) as u64);
            // Every expert seen is loaded at least once: loads >= distinct (layer, expert).
            assert!(r.total.loads <= r.total.requests);
        }
        assert!(report.text().contains("skipped smoe-window"));
        let err = commands::replay(
            t,
            e / 2,
            &PolicyChoice::These(vec![PolicySpec::SmoeWindow { n: 4 }]),
            Scope::Pool,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("no logits"), "{err}");
    }
}

#[test]
fn capacity_below_k_is_refused() {
    let t = shortened(Preset::Qwen15Moe, 2, 4, 0);
    let err = replay_trace(&t, PolicySpec::Lru, 3, Scope::PerLayer, None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("capacity") && err.contains("top_k = 4"),
        "{err}"
    );
}

#[test]
fn activation_counts_are_a_warm_start_and_not_replayable() {
    let Some(path) = data("activation-counts/deepseek.json.gz") else {
        return;
    };
    let report = commands::import_counts(&path).unwrap();
    // DeepSeek-V2-Lite's file layer 0 is dense (all zero): 26 MoE layers remain.
    assert_eq!(report.warm_start.dropped_layers, vec![0]);
    assert_eq!(report.warm_start.counts.len(), 26);
    let err = commands::replay_file(
        &path,
        &ImportOptions::default(),
        32,
        &PolicyChoice::All,
        Scope::PerLayer,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("no token order"), "{err}");
    assert!(import::is_counts_file(&path));
}

#[test]
fn pool_and_per_layer_agree_on_one_layer() {
    // With one layer, a pool of C is the per-layer cache of C: identical statistics.
    let t = shortened(Preset::Olmoe, 1, 200, 5);
    for p in PolicySpec::all() {
        let a = replay_trace(&t, p, 32, Scope::PerLayer, None).unwrap();
        let b = replay_trace(&t, p, 32, Scope::Pool, None).unwrap();
        assert_eq!(a.total.loads, b.total.loads, "{p}");
        assert_eq!(a.total.requests, b.total.requests, "{p}");
    }
}

#[test]
fn calibrated_presets_reproduce_the_real_logs_statistics() {
    // The presets at full shape (all layers), mean over seeds 0-2, within 0.03 of the real
    // logs' figures on both statistics (the calibration ran on 8 layers and 2 seeds, so the
    // presets differ from its optimum by sampling noise only).
    for ((_, preset), (overlap, miss)) in LOGS.iter().zip(MEASURED) {
        let (mut o, mut m) = (0.0, 0.0);
        for seed in 0..3 {
            let s = trace_stats(&generate(&GeneratorConfig::preset(*preset), seed).unwrap());
            o += s.next_token_overlap / 3.0;
            m += s.lru_miss_rate_half / 3.0;
        }
        println!("preset {preset}: overlap {o:.4} (real {overlap}), LRU miss rate at E/2 {m:.4} (real {miss})");
        assert!(
            (o - overlap).abs() < 0.03,
            "{preset}: overlap {o} vs {overlap}"
        );
        assert!((m - miss).abs() < 0.03, "{preset}: miss rate {m} vs {miss}");
    }
}

#[test]
fn calibration_finds_a_generated_target_exactly() {
    // The target is the generator's own statistics at (rho, omega, beta) = (0.8, 0, 1) with
    // the same seeds and shape, and that point is on the grid: the search must return it with
    // error 0 (no other grid point gives the same two means by chance).
    let base = GeneratorConfig {
        layers: 2,
        tokens_per_sequence: 40,
        sequences: 2,
        ..GeneratorConfig::preset(Preset::Phi35Moe)
    };
    let grid = CalibrationGrid {
        persistence: vec![0.2, 0.8],
        topic_weight: vec![0.0],
        popularity_skew: vec![0.0, 1.0],
        seeds: 2,
        refine_rounds: 2,
        max_layers: 8,
    };
    let truth = moe_opt::cache::generate::Locality {
        persistence: 0.8,
        topic_weight: 0.0,
        popularity_skew: 1.0,
    };
    let mut target = trace_stats(&generate(&base.clone().with_locality(truth), 0).unwrap());
    let other = trace_stats(&generate(&base.clone().with_locality(truth), 1).unwrap());
    target.next_token_overlap = (target.next_token_overlap + other.next_token_overlap) / 2.0;
    target.lru_miss_rate_half = (target.lru_miss_rate_half + other.lru_miss_rate_half) / 2.0;
    let c = moe_opt::cache::stats::calibrate(&target, &base, &grid).unwrap();
    assert_eq!(c.best.locality, truth);
    assert_eq!(c.best.error, 0.0);
    assert!(c.points.len() >= 4);
}

#[test]
#[ignore = "prints the calibration figures for docs/problems/caches.md; minutes in a debug build"]
fn print_calibration() {
    for (rel, preset) in LOGS {
        let Some(t) = real_log(rel) else { return };
        let c = commands::calibrate(&t, preset, &CalibrationGrid::default()).unwrap();
        print!("{}", c.text());
        for seed in 0..3 {
            let g = trace_stats(&generate(&GeneratorConfig::preset(preset), seed).unwrap());
            println!(
                "  preset {preset} seed {seed}: overlap {:.4} miss {:.4}",
                g.next_token_overlap, g.lru_miss_rate_half
            );
        }
    }
}

#[test]
#[ignore = "prints every weight-free policy on the real logs at C = E/2 for the report"]
fn print_real_replays() {
    for (rel, _) in LOGS {
        let Some(t) = real_log(rel) else { return };
        for scope in [Scope::PerLayer, Scope::Pool] {
            let c = match scope {
                Scope::PerLayer => t.experts / 2,
                Scope::Pool => t.experts * t.layers / 2,
            };
            let r = commands::replay(&t, c, &PolicyChoice::All, scope, None).unwrap();
            print!("{}", r.text());
        }
    }
}

#[test]
fn generate_report_ties_to_the_trace_and_renders() {
    let g = commands::generate(Preset::Mixtral8x7b, 9, Some(30), Some(2), None).unwrap();
    assert_eq!(g.trace.tokens.len(), 30);
    assert_eq!(g.trace.layers, 2);
    let json = serde_json::to_value(&g.report).unwrap();
    assert_eq!(json["moe_opt_version"], moe_opt::report::VERSION);
    assert_eq!(
        json["trace"]["sha256"],
        moe_opt::report::canonical_sha256(&g.trace)
    );
    assert_eq!(json["preset"], "mixtral-8x7b");
    assert!(g.report.text().contains("preset mixtral-8x7b seed 9"));
    // Same seed, same bytes.
    let again = commands::generate(Preset::Mixtral8x7b, 9, Some(30), Some(2), None).unwrap();
    assert_eq!(g.report.trace.sha256, again.report.trace.sha256);
}

#[test]
#[ignore = "prints the Table 1 presets' statistics for the report"]
fn print_table1_presets() {
    for &preset in Preset::ALL {
        let s = trace_stats(&generate(&GeneratorConfig::preset(preset), 0).unwrap());
        println!(
            "{preset}: E {} K {} L {} tokens {}: overlap {:.4}, LRU miss rate at C = {}: {:.4}",
            s.experts,
            s.top_k,
            s.layers,
            s.tokens,
            s.next_token_overlap,
            s.half_capacity,
            s.lru_miss_rate_half
        );
    }
}

/// `mrc`'s one pass against `replay_trace` at each capacity: every capacity of each real log
/// with per-layer caches; with a pool (up to L E capacities, each replay costing up to C per
/// Belady miss) the first, the last and 10 more spread between them. Loads must agree for
/// the whole trace and for every layer.
#[test]
fn mrc_equals_a_replay_per_capacity_on_the_real_logs() {
    for (rel, _) in LOGS {
        let Some(t) = real_log(rel) else { return };
        for scope in [Scope::PerLayer, Scope::Pool] {
            let points = if scope == Scope::PerLayer {
                usize::MAX
            } else {
                11
            };
            mrc_equals_replay(&t, scope, rel, points);
        }
    }
}

/// The same on generated traces: every preset's shape (shortened to 4 layers of 120 tokens),
/// two seeds, every capacity of both scopes.
#[test]
fn mrc_equals_a_replay_per_capacity_on_generated_traces() {
    for &preset in Preset::ALL {
        for seed in 0..2 {
            let mut config = GeneratorConfig::preset(preset);
            config.layers = 4;
            config.sequences = 2;
            config.tokens_per_sequence = 60;
            let t = generate(&config, seed).unwrap();
            for scope in [Scope::PerLayer, Scope::Pool] {
                mrc_equals_replay(&t, scope, &format!("{preset} seed {seed}"), usize::MAX);
            }
        }
    }
}

/// Asserts that `mrc` gives `replay`'s loads and requests, total and per layer, at about
/// `points` evenly spaced capacities and the last (`usize::MAX`: every capacity).
fn mrc_equals_replay(t: &Trace, scope: Scope, name: &str, points: usize) {
    let m = mrc(t, &POLICIES, scope).unwrap();
    let n = m.capacities.len();
    let step = n.div_ceil(points);
    for i in (0..n).filter(|i| i % step == 0 || i + 1 == n) {
        let c = m.capacities[i];
        for curve in &m.curves {
            let r = replay_trace(t, curve.policy, c, scope, None).unwrap();
            let what = format!("{name} {scope:?} {} C = {c}", curve.policy);
            assert_eq!(curve.loads[i], r.total.loads, "{what}");
            assert_eq!(m.requests, r.total.requests, "{what}");
            for (layer, replayed) in curve.layers.iter().zip(&r.layers) {
                assert_eq!(
                    layer.loads[i], replayed.loads,
                    "{what} layer {}",
                    layer.layer
                );
                assert_eq!(layer.requests, replayed.requests, "{what}");
            }
        }
    }
}

/// The experts of every (token, layer), token-major: what libCacheSim's formats carry.
fn routing_of(t: &Trace) -> Vec<Vec<u32>> {
    t.routings().map(|r| r.experts.clone()).collect()
}

#[test]
fn real_logs_round_trip_through_libcachesim_formats() {
    use moe_opt::cache::libcachesim::{decode, encode, records, to_trace, Format, Shape};
    use std::path::Path;
    for (rel, _) in LOGS {
        let Some(t) = real_log(rel) else { return };
        let pool = Shape::Export {
            experts: t.experts,
            layers: t.layers,
            top_k: t.top_k,
        };
        let one_layer = Shape::Export {
            experts: t.experts,
            layers: 1,
            top_k: t.top_k,
        };
        for format in [Format::OracleGeneral, Format::Csv] {
            // The whole trace (the pool's stream), then one layer's.
            let bytes = encode(&records(&t, None, 1).unwrap(), format);
            let file = Path::new("export");
            let back =
                to_trace(file, format, &decode(file, &bytes, format).unwrap(), pool).unwrap();
            assert_eq!(routing_of(&back), routing_of(&t), "{rel} {format:?}");
            assert_eq!(
                (back.experts, back.top_k, back.layers, back.tokens.len()),
                (t.experts, t.top_k, t.layers, t.tokens.len())
            );
            // export -> import -> export: the same bytes.
            assert_eq!(encode(&records(&back, None, 1).unwrap(), format), bytes);
            let layer = t.layers - 1;
            let bytes = encode(&records(&t, Some(layer), 4096).unwrap(), format);
            let back = to_trace(
                file,
                format,
                &decode(file, &bytes, format).unwrap(),
                one_layer,
            )
            .unwrap();
            assert_eq!(back.layer_requests(0).ids, t.layer_requests(layer).ids);
            // moe-opt's own miss counts are those of the original, per layer and pooled.
            let back = to_trace(
                file,
                format,
                &decode(
                    file,
                    &encode(&records(&t, None, 1).unwrap(), format),
                    format,
                )
                .unwrap(),
                pool,
            )
            .unwrap();
            for policy in [PolicySpec::Lru, PolicySpec::Belady] {
                for (scope, c) in [
                    (Scope::PerLayer, t.experts / 2),
                    (Scope::Pool, t.experts * t.layers / 4),
                ] {
                    let loads =
                        |x: &Trace| replay_trace(x, policy, c, scope, None).unwrap().total.loads;
                    assert_eq!(loads(&back), loads(&t), "{rel} {policy} {scope:?}");
                }
            }
        }
    }
}

#[test]
fn the_switch_log_export_misses_what_libcachesim_counts() {
    // libCacheSim 0.3.5 (PyPI `libcachesim`, `./dev libcachesim-test`), LRU and Belady with C
    // objects of size 1 on `moe-opt export`'s oracleGeneral files of this log: per-layer (each
    // layer's export, summed) at C = 4 LRU 616 and Belady 363 misses; the pool at C = 24 LRU 657
    // and Belady 305. K = 1, so one request a step: moe-opt's caches are libCacheSim's.
    let Some(t) = real_log(LOGS[2].0) else { return };
    let loads = |policy, c, scope| {
        replay_trace(&t, policy, c, scope, None)
            .unwrap()
            .total
            .loads
    };
    assert_eq!(loads(PolicySpec::Lru, 4, Scope::PerLayer), 616);
    assert_eq!(loads(PolicySpec::Belady, 4, Scope::PerLayer), 363);
    assert_eq!(loads(PolicySpec::Lru, 24, Scope::Pool), 657);
    assert_eq!(loads(PolicySpec::Belady, 24, Scope::Pool), 305);
}

/// The replay `moe-opt replay` runs ([`replay_packed`] over a trace's columns, read back from
/// its binary bytes) against [`replay_trace`] (boxed policies over the JSON model's tokens),
/// the two written apart: the same report, lifetimes to the bit, for every policy, both scopes
/// and capacities from K to the whole universe, on generated traces (E from 8 to 300, so both
/// id widths; several sequences; logits, so smoe-window runs) and the real logs.
#[test]
fn columns_replay_equals_the_token_replay_on_every_policy() {
    let mut traces = vec![
        shortened(Preset::Mixtral8x7b, 3, 80, 1),
        shortened(Preset::Olmoe, 2, 150, 2),
        shortened(Preset::Kimi, 2, 60, 3),
        generate(
            &GeneratorConfig {
                sequences: 3,
                ..GeneratorConfig::synthetic(
                    300,
                    4,
                    2,
                    40,
                    moe_opt::cache::generate::OLMOE_LOCALITY,
                )
            },
            4,
        )
        .unwrap(),
    ];
    traces.extend(LOGS.iter().filter_map(|(rel, _)| real_log(rel)));
    let mut compared = 0;
    for t in &traces {
        let bytes = Packed::from_trace(t).encode();
        let packed = Packed::decode(std::path::Path::new("t.bin"), &bytes).unwrap();
        assert_eq!(packed.to_trace(), *t);
        let (k, e, l) = (t.top_k, t.experts, t.layers);
        for (scope, universe) in [(Scope::PerLayer, e), (Scope::Pool, e * l)] {
            for c in [k, (k + universe) / 2, universe] {
                for p in PolicySpec::all() {
                    if p.needs_scores() && !t.has_logits() {
                        continue;
                    }
                    let old = replay_trace(t, p, c, scope, None).unwrap();
                    let new = replay_packed(&packed, p, c, scope, None).unwrap();
                    assert_eq!(new, old, "{} {p} {scope:?} C = {c}", t.name);
                    compared += 1;
                }
            }
        }
    }
    assert!(compared >= 4 * 2 * 3 * 6, "{compared} replays compared");
    // LFU's warm start, per layer and pooled.
    let t = &traces[1];
    let warm = FrequencyWarmStart {
        model: "m".into(),
        experts: t.experts,
        top_k: t.top_k,
        counts: (0..t.layers)
            .map(|l| {
                (0..t.experts as u64)
                    .map(|x| (x * 7 + l as u64) % 5)
                    .collect()
            })
            .collect(),
        dropped_layers: vec![],
    };
    let packed = Packed::from_trace(t);
    for (scope, c) in [(Scope::PerLayer, 16), (Scope::Pool, 40)] {
        let old = replay_trace(t, PolicySpec::Lfu, c, scope, Some(&warm)).unwrap();
        let new = replay_packed(&packed, PolicySpec::Lfu, c, scope, Some(&warm)).unwrap();
        assert_eq!(new, old, "{scope:?}");
    }
    // The refusals are the same too.
    let old = replay_trace(t, PolicySpec::Lru, 3, Scope::PerLayer, None).unwrap_err();
    let new = replay_packed(&packed, PolicySpec::Lru, 3, Scope::PerLayer, None).unwrap_err();
    assert_eq!(new.to_string(), old.to_string());
}
