//! SMoE: Alg. 1 on a 64-expert layer (Qwen2-57B-like, one token), Alg. 2 on 64 missed experts,
//! and the pipeline over a 1000-token, 8-layer generated trace (E = 64, k = 8, drift 0.8) with an LRU
//! pool of 256 experts.

use criterion::{criterion_group, criterion_main, Criterion};
use moe_opt::cache::generate::{generate as generate_trace, GeneratorConfig, Locality};
use moe_opt::cache::policy::Lru;
use moe_opt::smoe::claims::route;
use moe_opt::smoe::generate::{generate, Preset};
use moe_opt::smoe::pipeline::{simulate, PipelineConfig, PipelineCosts, Predictor, SplitChoice};
use moe_opt::smoe::router::{LowScore, RouterConfig};
use moe_opt::smoe::split::{alg2, Alg2Rule};

fn smoe(c: &mut Criterion) {
    let layer = generate(Preset::Qwen2_57b, 1);
    let misses: Vec<u32> = (0..64).collect();
    let trace = generate_trace(
        &GeneratorConfig::synthetic(64, 8, 8, 1000, Locality::drift(0.8)),
        1,
    )
    .expect("valid config");
    let config = PipelineConfig {
        router: RouterConfig::new(0.25),
        split: SplitChoice::Alg2,
        prefetch: 4,
        predictor: Predictor::Oracle,
        costs: PipelineCosts {
            load_s: 6e-3,
            cpu_s: 2e-3,
            gpu_s: 1e-4,
            common_s: 5e-4,
        },
    };
    let mut group = c.benchmark_group("smoe");
    group.sample_size(10);
    group.bench_function("alg1 router, 64 experts", |b| {
        b.iter(|| route(&layer, LowScore::Missing))
    });
    group.bench_function("alg2 split, 64 misses", |b| {
        b.iter(|| alg2(&misses, &layer.costs, Alg2Rule::Paper))
    });
    group.bench_function("pipeline, 1000 tokens x 8 layers", |b| {
        b.iter(|| simulate(&trace, Lru::new(256, 64 * 8), &config).unwrap())
    });
    group.finish();
}

criterion_group!(benches, smoe);
criterion_main!(benches);
