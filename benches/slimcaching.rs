//! SlimCaching on the `paper` preset (Section VI-A: 4 servers, 20 users, 18 models, about 4,000
//! experts): one evaluation of F(X), Alg. 3, Alg. 2, Alg. 1 and lazy greedy. Targets (issue 2):
//! F(X) under 5 ms, Alg. 3 under 100 ms, lazy greedy under 2 s on one core; issue 15: Alg. 1
//! (incremental gains) under 1 s. Run: `./dev bench`.

use criterion::{criterion_group, criterion_main, Criterion};
use formulations::slimcaching::LatencyModel;
use moe_opt::slimcaching::algorithms;
use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};

fn paper(c: &mut Criterion) {
    let instance = generate(&GeneratorConfig::preset(Preset::Paper), 1);
    let model = LatencyModel::new(&instance);
    let placement = algorithms::successive_maxconv(&model)
        .expect("the paper preset fits the DP")
        .placement;
    let mut group = c.benchmark_group("slimcaching-paper");
    group.sample_size(10);
    group.bench_function("objective F(X)", |b| b.iter(|| model.objective(&placement)));
    group.bench_function("alg3 successive-maxconv", |b| {
        b.iter(|| algorithms::successive_maxconv(&model).unwrap())
    });
    group.bench_function("alg2 successive-dp", |b| {
        b.iter(|| algorithms::successive_dp(&model).unwrap())
    });
    group.bench_function("alg1 greedy", |b| b.iter(|| algorithms::greedy(&model)));
    group.bench_function("alg1 lazy-greedy", |b| {
        b.iter(|| algorithms::lazy_greedy(&model))
    });
    group.finish();
}

criterion_group!(benches, paper);
criterion_main!(benches);
