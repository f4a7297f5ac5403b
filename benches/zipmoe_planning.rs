//! ZipMoE cache-pool planning (paper 003, App. C-D): Alg. 4's grid search for 64 experts and
//! k = 6 (DeepSeek-V2-Lite's shape, one layer, all four pools, grid step 0.05 = 1,771 splits;
//! target under 1 s), and eq. (24)'s IPF to 1e-9 on 128 experts (k = 8, synthetic Zipf counts).
//! Run: `cargo bench --bench zipmoe_planning`.

use criterion::{criterion_group, criterion_main, Criterion};
use formulations::zipmoe::pool::IpfOptions;
use moe_opt::zipmoe::planning::counts::SyntheticCounts;
use moe_opt::zipmoe::planning::generate::{generate, PlanConfig};
use moe_opt::zipmoe::planning::{ipf, planner};

fn planning(c: &mut Criterion) {
    let instance = generate(&SyntheticCounts::default(), &PlanConfig::default(), 1)
        .expect("the default configuration is valid");
    let layers = planner::fit_layers(&instance).expect("eq. (24) converges");
    let wide = generate(
        &SyntheticCounts {
            experts: 128,
            top_k: 8,
            ..SyntheticCounts::default()
        },
        &PlanConfig::default(),
        1,
    )
    .expect("the configuration is valid");
    let f = wide.layers[0].inclusion_probabilities.clone();
    let options = IpfOptions {
        tolerance: 1e-9,
        max_iterations: 100_000,
    };
    let mut group = c.benchmark_group("zipmoe-planning");
    group.sample_size(10);
    group.bench_function("alg4 grid search (64 experts, k = 6, 1771 splits)", |b| {
        b.iter(|| planner::search(&instance, &layers))
    });
    group.bench_function("alg4 plan incl. eq. (24) (64 experts, k = 6)", |b| {
        b.iter(|| planner::plan(&instance).unwrap())
    });
    group.bench_function("eq. (24) IPF to 1e-9 (128 experts, k = 8)", |b| {
        b.iter(|| ipf::fit(&f, 8, &options, "f").unwrap())
    });
    group.finish();
}

criterion_group!(benches, planning);
criterion_main!(benches);
