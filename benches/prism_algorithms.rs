//! Prism's algorithms on the `testbed-deepseek` preset (Section IV-A: DeepSeek-V2-Lite, 26
//! layers x 64 experts, three servers with 1, 1 and 2 GPUs): DeepSeek's EPLB on the summed
//! loads (26 x 64, 128 replicas on 4 GPUs, global policy), the heterogeneous EPLB baseline,
//! Alg. 1, Alg. 1 + 2 and the whole Prism pipeline with the GPU assignment. Target: each under
//! 10 ms on one core. Run: `cargo bench --bench prism_algorithms`.

use criterion::{criterion_group, criterion_main, Criterion};
use moe_opt::eplb::rebalance_experts;
use moe_opt::prism::algorithms::{self, PrismOptions, RepairOrder};
use moe_opt::prism::baselines;
use moe_opt::prism::generate::{try_generate, GeneratorConfig, Preset};

fn deepseek(c: &mut Criterion) {
    let instance = try_generate(&GeneratorConfig::preset(Preset::TestbedDeepseek), 1)
        .expect("the preset generates");
    let load = baselines::total_load(&instance);
    let counts = algorithms::alg1_counts(&instance)
        .expect("the testbed covers every expert")
        .counts;
    let mut group = c.benchmark_group("prism-deepseek-26x64");
    group.bench_function("eplb rebalance_experts (128 replicas, 4 GPUs)", |b| {
        b.iter(|| rebalance_experts(&load, 128, 1, 1, 4).unwrap())
    });
    group.bench_function("eplb heterogeneous baseline", |b| {
        b.iter(|| baselines::eplb_heterogeneous(&instance).unwrap())
    });
    group.bench_function("alg1 counts", |b| {
        b.iter(|| algorithms::alg1_counts(&instance).unwrap())
    });
    group.bench_function("alg2 assignment", |b| {
        b.iter(|| algorithms::alg2_assign(&instance, &counts, RepairOrder::default()))
    });
    group.bench_function("prism alg1 + alg2 + gpus", |b| {
        b.iter(|| algorithms::prism(&instance, PrismOptions::default()).unwrap())
    });
    group.finish();
}

criterion_group!(benches, deepseek);
criterion_main!(benches);
