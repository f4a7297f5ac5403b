//! The three oracles of offline expert caching agree on many small random instances: Belady's
//! MIN, the fixed-routing MILP and the exhaustive search (fixed routing); the flexible MILP and
//! the exhaustive search (flexible routing, with max-rank and with mass rules). Expected
//! values come from the independent oracles, never from the code under test alone.

use formulations::cache::exhaustive::{exhaustive, fits_exhaustive};
use formulations::cache::milp::OfflineMilp;
use formulations::cache::offline::{evaluate, freedom_used, validate, CacheInstance, Freedom};
use formulations::cache::Trace;
use formulations::milp::{MilpStatus, SolveOptions};
use formulations::ProblemKind;
use moe_opt::cache::belady::belady_schedule;
use moe_opt::cache::bounds::{compare, exact_milp, instance_from_trace, OfflineMethod};
use moe_opt::cache::generate::{generate, GeneratorConfig, Locality};
use moe_opt::cache::policy::{replay, Lru};
use moe_opt::cache::routers::{DeltaEstimate, RouterSpec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A generated one-layer trace with token-to-token drift rho.
fn drifting(seed: u64, experts: usize, top_k: usize, tokens: usize, rho: f64) -> Trace {
    let config = GeneratorConfig::synthetic(experts, top_k, 1, tokens, Locality::drift(rho));
    generate(&config, seed).unwrap()
}

fn random_instance(seed: u64, max_experts: usize, max_tokens: usize) -> CacheInstance {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let experts = rng.random_range(3..=max_experts);
    let top_k = rng.random_range(1..=experts.min(3) - 1);
    let tokens = rng.random_range(4..=max_tokens);
    let capacity = rng.random_range(top_k..=experts);
    let rho = rng.random_range(0.0..0.95);
    let freedom = Freedom {
        top_j: rng.random_range(0..top_k),
        max_rank: rng.random_bool(0.7).then(|| rng.random_range(1..=experts)),
        min_mass: rng.random_bool(0.4).then(|| rng.random_range(0.3..=1.0)),
    };
    let i = CacheInstance {
        problem: ProblemKind::CacheOffline,
        name: format!("random-{seed}"),
        capacity,
        layer: 0,
        freedom,
        trace: drifting(seed, experts, top_k, tokens, rho),
    };
    validate(&i).unwrap();
    i
}

#[test]
fn belady_fixed_milp_and_exhaustive_agree() {
    let opts = SolveOptions::default();
    for seed in 0..40 {
        let i = random_instance(seed, 7, 14);
        assert!(fits_exhaustive(&i));
        let (exact, schedule) = exhaustive(&i, false).unwrap();
        assert_eq!(evaluate(&i, &schedule, false).unwrap().loads, exact);
        let (belady, b_schedule) = belady_schedule(i.capacity, &i.requests());
        assert_eq!(evaluate(&i, &b_schedule, false).unwrap().loads, belady);
        assert_eq!(belady, exact, "seed {seed}: Belady vs exhaustive");
        let milp = OfflineMilp::build(&i, false).unwrap();
        let s = milp.solve(&i, &opts, None).unwrap();
        assert_eq!(s.solution.status, MilpStatus::Optimal, "seed {seed}");
        assert_eq!(s.evaluation.unwrap().loads, exact, "seed {seed}: MILP");
        // LRU can never beat the optimum.
        assert!(replay(Lru::new(i.capacity, i.experts()), &i.requests()).loads >= exact);
    }
}

#[test]
fn flexible_milp_matches_exhaustive_and_never_exceeds_the_fixed_optimum() {
    let opts = SolveOptions::default();
    let mut strictly_better = 0;
    for seed in 100..140 {
        let i = random_instance(seed, 6, 10);
        let (flex, schedule) = exhaustive(&i, true).unwrap();
        assert_eq!(evaluate(&i, &schedule, true).unwrap().loads, flex);
        let (fixed, _) = exhaustive(&i, false).unwrap();
        assert!(flex <= fixed, "seed {seed}");
        strictly_better += usize::from(flex < fixed);
        let milp = OfflineMilp::build(&i, true).unwrap();
        let start = belady_schedule(i.capacity, &i.requests()).1;
        let s = milp.solve(&i, &opts, Some(&start)).unwrap();
        assert_eq!(s.solution.status, MilpStatus::Optimal, "seed {seed}");
        assert_eq!(
            s.evaluation.unwrap().loads,
            flex,
            "seed {seed}: {:?}",
            i.freedom
        );
    }
    // The freedom matters on some of these instances (otherwise the test proves little).
    assert!(
        strictly_better >= 5,
        "only {strictly_better} instances gained"
    );
}

#[test]
fn compare_reports_ratios_to_the_proved_optima() {
    let trace = drifting(7, 6, 2, 10, 0.8);
    let freedom = Freedom {
        top_j: 1,
        max_rank: Some(4),
        min_mass: None,
    };
    let i = instance_from_trace(&trace, 0, 3, freedom, "cmp").unwrap();
    let report = compare(&i, &OfflineMethod::ALL, &SolveOptions::default()).unwrap();
    let loads = |m: OfflineMethod| {
        report
            .methods
            .iter()
            .find(|l| l.report.method == m)
            .unwrap()
            .report
            .loads
            .unwrap()
    };
    let (ef, ex) = (
        exhaustive(&i, false).unwrap().0,
        exhaustive(&i, true).unwrap().0,
    );
    assert_eq!(report.fixed_optimum_loads, Some(ef));
    assert_eq!(report.flexible_optimum_loads, Some(ex));
    assert_eq!(loads(OfflineMethod::Belady), ef);
    assert_eq!(loads(OfflineMethod::MilpFlexible), ex);
    let belady = report
        .methods
        .iter()
        .find(|l| l.report.method == OfflineMethod::Belady)
        .unwrap();
    assert_eq!(belady.ratio_to_fixed_optimum, Some(1.0));
    assert!(report.text().contains("milp-flexible"));
    assert!(exact_milp(&i, true).unwrap().to_lp().contains("pick_0"));
    // A capacity below K is refused with the field named.
    let err = instance_from_trace(&trace, 0, 1, freedom, "bad").unwrap_err();
    assert!(err.to_string().contains("capacity"), "{err}");
}

#[test]
fn routers_never_beat_the_flexible_optimum_of_the_freedom_they_use() {
    let opts = SolveOptions::default();
    let mut reranked = 0;
    for seed in 200..230 {
        let i = random_instance(seed, 7, 12);
        let (j, k) = (i.freedom.top_j, i.top_k());
        let m = i.freedom.max_rank.unwrap_or(i.experts());
        let routers = [
            OfflineMethod::Routed(RouterSpec::MaxRank { m, j }),
            OfflineMethod::Routed(RouterSpec::Cumsum { p: 0.9, j }),
            OfflineMethod::Routed(RouterSpec::CachePrior {
                lambda: 1.0,
                j,
                delta: DeltaEstimate::Running,
            }),
        ];
        let mut methods = vec![OfflineMethod::Lru, OfflineMethod::Routed(RouterSpec::TopK)];
        methods.extend(routers);
        let report = compare(&i, &methods, &opts).unwrap();
        let line = |n: usize| &report.methods[n].report;
        // The original routing replayed as a router is LRU on the original stream.
        assert_eq!(line(1).loads, line(0).loads, "seed {seed}");
        assert_eq!(line(1).within_freedom, Some(true));
        assert_eq!(
            (line(1).used_top_j, line(1).rerouted_steps),
            (Some(k), Some(0))
        );
        // Max-Rank with the instance's J and M stays within its freedom (Alg. 1).
        if i.freedom.min_mass.is_none() {
            assert_eq!(line(2).within_freedom, Some(true), "seed {seed}");
        }
        for n in 2..5 {
            let r = line(n);
            reranked += usize::from(r.rerouted_steps.unwrap() > 0);
            // The exhaustive optimum at the router's used freedom bounds it.
            let used = CacheInstance {
                freedom: Freedom {
                    top_j: r.used_top_j.unwrap(),
                    max_rank: r.used_max_rank,
                    min_mass: None,
                },
                ..i.clone()
            };
            let (bound, _) = exhaustive(&used, true).unwrap();
            assert!(
                r.loads.unwrap() >= bound,
                "seed {seed}: {} {:?} < {bound}",
                r.method.name(),
                r.loads
            );
        }
    }
    assert!(
        reranked >= 20,
        "only {reranked} router runs changed the routing"
    );
}

#[test]
fn a_router_schedule_is_admitted_by_the_freedom_it_used() {
    let i = random_instance(3, 7, 12);
    let spec = RouterSpec::CachePrior {
        lambda: 2.0,
        j: 0,
        delta: DeltaEstimate::Running,
    };
    let schedule = moe_opt::cache::bounds::routed_schedule(&i, &spec).unwrap();
    let used = CacheInstance {
        freedom: freedom_used(&i, &schedule),
        ..i.clone()
    };
    validate(&used).unwrap();
    evaluate(&used, &schedule, true).unwrap();
    // Pruning runs fewer than K experts: no offline schedule, and the error says so.
    let err = "pruning:h=1".parse::<OfflineMethod>().unwrap_err();
    assert!(err.contains("fewer than K"), "{err}");
}
