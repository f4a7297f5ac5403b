//! Cache simulation throughput (issue 5, Section 6): expert requests replayed per second on a
//! long generated trace, per-layer caches of C <= 64. Target: at least 20 million requests a
//! second on one core for LRU and Belady (the figure libCacheSim advertises for general
//! traces); the other policies are measured alongside. Belady's next-use table is built inside
//! the timing (it is part of replaying a stream). Run: `cargo bench --bench cache`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use formulations::cache::model::Requests;
use moe_opt::cache::generate::{generate, GeneratorConfig, Preset};
use moe_opt::cache::policies::PolicySpec;
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

criterion_group!(benches, throughput);
criterion_main!(benches);
