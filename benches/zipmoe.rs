//! ZipMoE on a 64-expert layer (DeepSeek-V2-Lite on a Jetson AGX Orin, batch of 128 tokens so
//! that all 64 experts are selected; N = 3 tensors, K = 4, L = 8; 150 reconstruction tasks):
//! Alg. 1 alone (both readings of its candidates), and the evaluator on one priority, with
//! the Gantt chart (`run`) and without (`summary`). Target: Alg. 1 under 100 microseconds.

use criterion::{criterion_group, criterion_main, Criterion};
use formulations::zipmoe::Simulator;
use moe_opt::zipmoe::algorithms::{self, Candidates};
use moe_opt::zipmoe::generate::{generate, Between, GeneratorConfig, Preset};

fn layer64(c: &mut Criterion) {
    let mut config = GeneratorConfig::preset(Preset::DeepseekOrin);
    config.batch_tokens = Between::exactly(128);
    let instance = generate(&config, 1);
    assert_eq!(instance.experts.len(), 64);
    let sim = Simulator::new(&instance);
    let fifo = algorithms::fifo(&instance);
    let mut group = c.benchmark_group(format!(
        "zipmoe-layer-{}-experts-{}-tasks",
        instance.experts.len(),
        instance.tasks().len()
    ));
    group.bench_function("simulate one priority", |b| {
        b.iter(|| sim.run(&fifo).unwrap())
    });
    group.bench_function("simulate one priority without chart", |b| {
        b.iter(|| sim.summary(&fifo.blocks))
    });
    group.bench_function("alg1 cache-affinity", |b| {
        b.iter(|| algorithms::cache_affinity(&instance, Candidates::Algorithm1))
    });
    group.bench_function("alg1 cache-affinity (text reading)", |b| {
        b.iter(|| algorithms::cache_affinity(&instance, Candidates::TypeIIOnly))
    });
    group.finish();
}

criterion_group!(benches, layer64);
criterion_main!(benches);
