//! Prism on the `testbed-deepseek` preset (DeepSeek-V2-Lite: 26 layers x 64 experts, Top-6;
//! 3 servers with 1, 1, 2 GPUs): the proxy evaluator of (2) (target under 10 ms) and the
//! simulator's throughput in expert invocations per second (target at least 1,000,000).
//!
//! With `PRISM_MILP_SCALE=1` it instead solves the MILP of (2) on the two testbed presets and
//! then on the scaling ladder (`moe_opt::prism::scale::gpu_ladder`), 60 s per size (or
//! `PRISM_MILP_LIMIT` seconds), and prints one row per size. Run: `cargo bench --bench prism`.
//!
//! Measured on the 2-core project machine (shared with other builds), seed 1:
//! * proxy (2) from holder sets 27 us; `evaluate` with feasibility 1.4 ms (target 10 ms);
//! * simulator 936,000 invocations in 0.69 s: 1.36 million invocations/s (target 1 million);
//! * MILP proved optimal (gap <= 1e-12): testbed-mixtral (1,024 binaries) 0.14 s,
//!   testbed-deepseek (6,656) 1.4 s; ladder 4 / 8 / 16 / 32 / 64 / 128 GPUs in 0.7 / 1.2 /
//!   3.6 / 7.8 / 18.4 / 59.3 s (128 GPUs: 212,992 binaries, just inside 60 s); 256 GPUs
//!   (425,984 binaries) stopped at the limit with no useful incumbent. Under heavier load an
//!   earlier run proved 32 GPUs in 21 s and ran out of time at 64 GPUs.

use criterion::{BenchmarkId, Criterion, Throughput};
use formulations::prism::evaluate::{evaluate, proxy_cost_of_holders, RemoteChoice};
use formulations::prism::simulate::{simulate_requests, workload_requests};
use formulations::prism::{ExpertRef, Instance, Placement, ServerId};
use moe_opt::prism::generate::{try_generate, GeneratorConfig, Preset};
use moe_opt::prism::scale::{gpu_ladder, milp_scale};

/// A feasible placement without the paper's algorithms: expert i of the model on GPU
/// i mod G (coverage), then each GPU filled with its server's most frequent experts it lacks.
fn round_robin_then_popular(inst: &Instance) -> Placement {
    let mut p = Placement::empty_for(inst);
    let gpus: Vec<(usize, usize)> = inst
        .servers
        .iter()
        .enumerate()
        .flat_map(|(n, s)| (0..s.gpus.len()).map(move |g| (n, g)))
        .collect();
    for i in 0..inst.expert_count() {
        let (n, g) = gpus[i % gpus.len()];
        p.insert(ServerId(n as u32), g, inst.expert_ref(i));
    }
    for &(n, g) in &gpus {
        let id = ServerId(n as u32);
        let mut order: Vec<usize> = (0..inst.expert_count()).collect();
        let f: Vec<f64> = inst.servers[n].frequencies.concat();
        order.sort_by(|&a, &b| f[b].total_cmp(&f[a]));
        let cap = inst.servers[n].gpus[g].memory_bytes;
        for i in order {
            let r: ExpertRef = inst.expert_ref(i);
            let held = (0..inst.servers[n].gpus.len()).any(|h| p.contains(id, h, r));
            if !held && p.gpu_bytes(inst, id, g) + inst.expert_bytes(r) <= cap {
                p.insert(id, g, r);
            }
        }
    }
    p
}

fn deepseek(c: &mut Criterion) {
    let mut inst = try_generate(&GeneratorConfig::preset(Preset::TestbedDeepseek), 1).unwrap();
    let placement = round_robin_then_popular(&inst);
    assert!(evaluate(&inst, &placement).unwrap().feasible);
    let holders = placement.holders(&inst);
    let mut group = c.benchmark_group("prism-testbed-deepseek");
    group.bench_function("proxy (2) from holders", |b| {
        b.iter(|| proxy_cost_of_holders(&inst, &holders))
    });
    group.bench_function("evaluate (2) + feasibility", |b| {
        b.iter(|| evaluate(&inst, &placement).unwrap())
    });
    // 2,000 requests a server: 3 x 2,000 x 26 layers x 6 experts = 936,000 invocations.
    inst.workload.as_mut().unwrap().requests_per_server = 2000;
    let requests = workload_requests(&inst, 1).unwrap();
    let invocations: u64 = requests
        .iter()
        .map(|r| r.experts.iter().map(|s| s.len() as u64).sum::<u64>())
        .sum();
    group.sample_size(10);
    group.throughput(Throughput::Elements(invocations));
    group.bench_with_input(
        BenchmarkId::new("simulate (invocations)", invocations),
        &requests,
        |b, rs| b.iter(|| simulate_requests(&inst, &placement, rs, RemoteChoice::Fastest).unwrap()),
    );
    group.finish();
}

fn scale() {
    let limit: f64 = std::env::var("PRISM_MILP_LIMIT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60.0);
    println!("MILP of (2): testbed presets, then the GPU ladder; limit {limit} s, seed 1");
    println!("name gpus servers binaries rows status objective gap seconds");
    let testbeds = [Preset::TestbedMixtral, Preset::TestbedDeepseek];
    let rows = testbeds
        .iter()
        .flat_map(|&p| milp_scale(&[GeneratorConfig::preset(p)], 1, limit).unwrap());
    for r in rows.chain(milp_scale(&gpu_ladder(), 1, limit).unwrap()) {
        println!(
            "{} {} {} {} {} {} {:?} {:?} {:.2}",
            r.name,
            r.gpus,
            r.servers,
            r.binaries,
            r.rows,
            r.status,
            r.objective,
            r.gap,
            r.solve_time_s
        );
    }
}

fn main() {
    if std::env::var_os("PRISM_MILP_SCALE").is_some() {
        scale();
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    deepseek(&mut c);
    c.final_summary();
}
