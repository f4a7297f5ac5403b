//! Cache simulation throughput (issue 5, Section 6): expert requests replayed per second on a
//! long generated trace, per-layer caches of C <= 64. Target: at least 20 million requests a
//! second on one core for LRU and Belady (the figure libCacheSim advertises for general
//! traces); the other policies are measured alongside. Belady's next-use table is built inside
//! the timing (it is part of replaying a stream). Also `mrc` against a replay per capacity.
//! `replay-10m` measures the path `moe-opt replay` runs on a binary trace (issue 15): the
//! columns replay ([`replay_packed`]), and the whole in-process command (map, hash, validate,
//! replay) of the file, on 10 M requests (one layer, E = 64, K = 8).
//! Run: `cargo bench --bench cache`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use formulations::cache::binary::Packed;
use formulations::cache::model::{Requests, Trace};
use moe_opt::cache::commands::{replay_file, PolicyChoice};
use moe_opt::cache::fast::replay_packed;
use moe_opt::cache::generate::{generate, GeneratorConfig, Preset};
use moe_opt::cache::import::{import_token_log, ImportOptions};
use moe_opt::cache::mrc::{mrc, POLICIES};
use moe_opt::cache::policies::{replay_trace, PolicySpec, Scope};
use moe_opt::cache::policy::{replay, Lru};

/// One request stream: the 4 layers of a 50,000-token OLMoE-shaped trace (E = 64, K = 8)
/// concatenated (200,000 steps, 1.6 million expert requests), one cache replaying them all.
fn stream() -> Requests {
    let config = GeneratorConfig {
        layers: 4,
        tokens_per_sequence: 50_000,
        ..GeneratorConfig::preset(Preset::Olmoe)
    };
    let trace = generate(&config, 1).expect("preset configurations are valid");
    let mut all = Requests::new(trace.experts);
    for l in 0..trace.layers {
        for step in trace.layer_requests(l).steps() {
            all.push(step);
        }
    }
    all
}

fn throughput(c: &mut Criterion) {
    let requests = stream();
    let mut group = c.benchmark_group("cache-replay");
    group.sample_size(10);
    group.throughput(Throughput::Elements(requests.ids.len() as u64));
    for capacity in [16usize, 32, 64] {
        // LRU statically dispatched: the target's figure.
        group.bench_function(format!("lru-static C={capacity}"), |b| {
            b.iter(|| replay(Lru::new(capacity, requests.universe), &requests))
        });
        for policy in PolicySpec::all() {
            if policy.needs_scores() {
                continue;
            }
            group.bench_function(format!("{policy} C={capacity}"), |b| {
                b.iter(|| replay(policy.build(capacity, &requests), &requests))
            });
        }
    }
    group.finish();
}

/// `mrc` against `replay` once per capacity (issue 14: at least 10x faster): LRU and Belady
/// at every capacity K..=E of the real OLMoE log (E = 64, K = 8, 16 layers, 299 tokens),
/// per-layer caches; skipped where ../shared/data is absent.
fn miss_ratio_curves(c: &mut Criterion) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/token-traces/olmoe_1b7b_0924_warp_decode.jsonl.gz");
    if !path.exists() {
        eprintln!("skipping mrc: {} is absent", path.display());
        return;
    }
    let trace = import_token_log(&path, &ImportOptions::default()).expect("the OLMoE log imports");
    let mut group = c.benchmark_group("mrc-olmoe");
    group.sample_size(10);
    group.bench_function("mrc lru+belady C=8..=64", |b| {
        b.iter(|| mrc(&trace, &POLICIES, Scope::PerLayer).expect("stack policies"))
    });
    group.bench_function("replay per capacity lru+belady C=8..=64", |b| {
        b.iter(|| {
            let mut loads = 0;
            for capacity in trace.top_k..=trace.experts {
                for policy in POLICIES {
                    let r = replay_trace(&trace, policy, capacity, Scope::PerLayer, None);
                    loads += r.expect("valid capacities").total.loads;
                }
            }
            loads
        })
    });
    group.finish();
}

/// The 10 M-request trace of docs/benchmarks.md: two generated OLMoE-shaped sequences of 625,000 tokens
/// (seeds 1 and 2, the generator's limit is 2^20 tokens a trace) of one layer, E = 64, K = 8,
/// without weights or logits and with ranks lost, as `import cache-trace --libcachesim`
/// makes it from their exports: the ids of docs/benchmarks.md's `big.bin`, in the same order.
fn ten_million() -> Trace {
    let config = GeneratorConfig {
        layers: 1,
        tokens_per_sequence: 625_000,
        ..GeneratorConfig::preset(Preset::Olmoe)
    };
    let mut trace = generate(&config, 1).expect("preset configurations are valid");
    let second = generate(&config, 2).expect("preset configurations are valid");
    trace.tokens.extend(second.tokens.into_iter().map(|mut t| {
        t.seq = 1;
        t
    }));
    for routing in trace.tokens.iter_mut().flat_map(|t| t.layers.iter_mut()) {
        routing.weights = None;
        routing.logits = None;
    }
    trace.ranked = false;
    trace
}

fn replay_ten_million(c: &mut Criterion) {
    let packed = Packed::from_trace(&ten_million());
    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("replay-10m.bin");
    std::fs::write(&file, packed.encode()).expect("target/tmp is writable");
    let mut group = c.benchmark_group("replay-10m");
    group.sample_size(10);
    group.throughput(Throughput::Elements(packed.ids.len() as u64));
    for capacity in [16usize, 32, 64] {
        for policy in [PolicySpec::Lru, PolicySpec::Belady] {
            group.bench_function(format!("{policy} loop C={capacity}"), |b| {
                b.iter(|| replay_packed(&packed, policy, capacity, Scope::PerLayer, None))
            });
            group.bench_function(format!("{policy} file C={capacity}"), |b| {
                let choice = PolicyChoice::These(vec![policy]);
                b.iter(|| {
                    let options = Default::default();
                    replay_file(&file, &options, capacity, &choice, Scope::PerLayer, None)
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, throughput, miss_ratio_curves, replay_ten_million);
criterion_main!(benches);
