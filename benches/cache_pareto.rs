//! The Pareto sweep of paper 002's cache-aware routers (issue 5, Sec. 6): 4 routers x 50 knob
//! values x 3 cache sizes = 600 LRU replays of a 100k-token trace, in parallel with rayon.
//! Target: under 10 s on 2 cores. The trace: E = 64, K = 6 (DeepSeek-V2-Lite's routed
//! experts), one layer, 100,000 tokens of AR(1) logits (rho = 0.9); capacities E/4, E/2, 3E/4.
//! The 4 x 50 routers: Max-Rank M = 6..=55, Cumsum p and Cache-Prior lambda (running and
//! whole-trace delta_avg) at 50 points of [0, 1], J = 2. The shared rank table is built once,
//! outside the timed loop (its build is timed separately).

use criterion::{criterion_group, criterion_main, Criterion};
use moe_opt::cache::generate::{generate, GeneratorConfig, Locality};
use moe_opt::cache::pareto::{sweep, unit_grid};
use moe_opt::cache::policy::Lru;
use moe_opt::cache::routers::{DeltaEstimate, RankTable, ReplayOptions, RouterSpec};

fn routers() -> Vec<RouterSpec> {
    let j = 2;
    let mut specs: Vec<RouterSpec> = (6..56).map(|m| RouterSpec::MaxRank { m, j }).collect();
    let unit = unit_grid(50);
    specs.extend(unit.iter().map(|&p| RouterSpec::Cumsum { p, j }));
    for delta in [DeltaEstimate::Running, DeltaEstimate::Trace] {
        specs.extend(
            unit.iter()
                .map(|&lambda| RouterSpec::CachePrior { lambda, j, delta }),
        );
    }
    specs
}

fn pareto(c: &mut Criterion) {
    let trace = generate(
        &GeneratorConfig::synthetic(64, 6, 1, 100_000, Locality::drift(0.9)),
        1,
    )
    .expect("valid config");
    let table = RankTable::new(&trace);
    let specs = routers();
    assert_eq!(specs.len(), 200);
    let capacities = [16, 32, 48];
    let options = ReplayOptions::default();
    let mut group = c.benchmark_group("cache-pareto");
    group.sample_size(10);
    group.bench_function("rank table (100k tokens, E = 64)", |b| {
        b.iter(|| RankTable::new(&trace))
    });
    group.bench_function("sweep 4 x 50 routers x 3 capacities", |b| {
        b.iter(|| sweep(&table, &specs, &capacities, &options, Lru::new).unwrap())
    });
    group.finish();
}

criterion_group!(benches, pareto);
criterion_main!(benches);
