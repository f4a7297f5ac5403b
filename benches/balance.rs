//! The exact method of `balance` (EPLB's problem solved exactly), one layer at a time: the
//! FlashLB example (8 experts, 16 slots on 8 GPUs: proved), the `deepseek-v3` preset's layer
//! (256 experts, 320 slots on 64 GPUs) to a 1 % gap, and every layer of the real activation
//! counts (../shared/data/activation-counts, or `MOE_OPT_DATA`; skipped when absent) at two
//! serving shapes, each to a 0.1 % gap under a 60 s limit: DeepSeek-V2-Lite on 8 GPUs without
//! redundant slots (64 slots), switch-large-128 on 8 GPUs with one redundant slot per GPU
//! (136 slots), and Qwen1.5-MoE on 32 GPUs with 64 slots (two per GPU: the sorted pairing of
//! `moe_opt::balance::pairing`). Times include the heuristics, the bounds and the MILP, on one
//! thread. Beside them, the annealing step of the exact method alone
//! (`moe_opt::balance::exact::annealed`: the annealing, then local search) on three layers of
//! DeepSeek-V2-Lite on 32 GPUs with 96 slots, and the heuristics' best plan
//! (`moe_opt::balance::exact::best_heuristic`, with the heavy starts) on two layers of
//! switch-large-128 on 16 GPUs with 144 slots.
//! Run: `./dev bench --bench balance` (figures in docs/benchmarks.md).

use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use formulations::balance::Instance;
use formulations::milp::SolveOptions;
use moe_opt::balance::exact::{annealed, best_heuristic, solve_layer};
use moe_opt::balance::generate::{generate, import, Deployment, GeneratorConfig, Preset};
use moe_opt::counts::Header;

/// The solve of one layer to a relative gap, at most 60 s.
fn options(gap: f64) -> SolveOptions {
    SolveOptions {
        time_limit_s: Some(60.0),
        mip_rel_gap: gap,
        threads: 1,
        ..SolveOptions::default()
    }
}

/// Every layer of `instance`, each its own benchmark.
fn layers(c: &mut Criterion, group: &str, instance: &Instance, gap: f64) {
    let mut group = c.benchmark_group(group);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(100));
    for l in 0..instance.loads.len() {
        group.bench_function(format!("layer {l}"), |b| {
            b.iter(|| solve_layer(instance, l, &options(gap)).expect("the layer solves"))
        });
    }
    group.finish();
}

/// A real count file at a deployment, `None` without the data.
fn real(file: &str, deployment: Deployment) -> Option<Instance> {
    let data = std::env::var_os("MOE_OPT_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data"));
    let path = data.join("activation-counts").join(file);
    if !path.exists() {
        eprintln!("{}: absent, its layers are not benchmarked", path.display());
        return None;
    }
    Some(import(&path, &Header::default(), &deployment).expect("the count file imports"))
}

fn balance(c: &mut Criterion) {
    let deployment = |gpus, extra_per_gpu| Deployment {
        gpus,
        extra_per_gpu,
        ..Deployment::default()
    };
    let flashlb = deployment(8, 1)
        .instance(
            "flashlb".into(),
            vec![vec![600.0, 560.0, 120.0, 120.0, 20.0, 10.0, 10.0, 10.0]],
        )
        .expect("valid");
    layers(c, "balance-flashlb-8x16", &flashlb, 0.0);
    let v3 =
        generate(&GeneratorConfig::preset(Preset::DeepseekV3), 1).expect("the preset generates");
    layers(c, "balance-deepseek-v3-256x320", &v3, 0.01);
    if let Some(instance) = real("deepseek.json.gz", deployment(8, 0)) {
        layers(c, "balance-deepseek-v2-lite-g8-x0", &instance, 1e-3);
    }
    if let Some(instance) = real("switch.json.gz", deployment(8, 1)) {
        layers(c, "balance-switch-large-128-g8-x1", &instance, 1e-3);
    }
    if let Some(instance) = real("qwen.json.gz", deployment(32, 0)) {
        layers(c, "balance-qwen1.5-moe-g32-x0", &instance, 1e-3);
    }
    if let Some(instance) = real("deepseek.json.gz", deployment(32, 1)) {
        annealing(c, "balance-anneal-deepseek-v2-lite-g32-x1", &instance);
    }
    if let Some(instance) = real("switch.json.gz", deployment(16, 1)) {
        heuristics(c, "balance-heuristic-switch-large-128-g16-x1", &instance);
    }
}

/// The heuristics' best plan (greedy, EPLB's plans and the heavy starts, each searched
/// locally) of layers 8 and 9, the second dominated by two experts.
fn heuristics(c: &mut Criterion, group: &str, instance: &Instance) {
    let mut group = c.benchmark_group(group);
    group.sample_size(10);
    let shape = instance.shape();
    for l in [8, 9] {
        let w = &instance.loads[l];
        group.bench_function(format!("layer {l}"), |b| {
            b.iter(|| best_heuristic(&shape, w, 1, 1).expect("a plan"))
        });
    }
    group.finish();
}

/// The exact method's annealing step on the first three layers, from the local-search plan.
fn annealing(c: &mut Criterion, group: &str, instance: &Instance) {
    let mut group = c.benchmark_group(group);
    group.sample_size(10);
    let shape = instance.shape();
    for (l, w) in instance.loads.iter().enumerate().take(3) {
        let start = best_heuristic(&shape, w, 1, 1).expect("a start plan");
        group.bench_function(format!("layer {l}"), |b| {
            b.iter(|| annealed(&shape, w, start.clone()))
        });
    }
    group.finish();
}

criterion_group!(benches, balance);
criterion_main!(benches);
