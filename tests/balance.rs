//! The balance problem: the exact method, its MILP and the sorted pairing (two slots per GPU)
//! against exhaustive search, annealing and the heavy starts within the options and between
//! their start and the optimum, repacking down to the optimum of its counts, each bound below
//! the exhaustive optimum, every method's plan through the one evaluator, and the FlashLB
//! example's optimum.
//!
//! The FlashLB example (issue 31: loads 600, 560, 120, 120, 20, 10, 10, 10; 16 slots on 8 GPUs,
//! one group, one node): its optimum 590 / 3 (busiest GPU) and balancedness 181.25 / (590 / 3)
//! = 435 / 472 = 0.921610... were derived by a separate Python script, run once, that tries
//! every count vector (sum 16, each >= 1) and every pairing of the 16 replicas into 8 GPUs in
//! exact rational arithmetic (the same optimum with at most one replica of an expert per GPU;
//! counts 4, 3, 1, 3, 1, 1, 1, 2). EPLB's plan of it carries 232 on its busiest GPU
//! (balancedness 0.781, as the issue reports).

use formulations::balance::milp::{count_ranges, LayerModel, LayerOptions};
use formulations::balance::model::replica_counts;
use formulations::balance::{bounds, evaluate, Instance, Plan};
use formulations::milp::{MilpStatus, SolveOptions, PROVED_GAP};
use formulations::ProblemKind;
use moe_opt::balance::algorithms::{self, exhaustive};
use moe_opt::balance::anneal::anneal;
use moe_opt::balance::exact;
use moe_opt::balance::methods::{Balance, Method};
use moe_opt::balance::pairing;
use moe_opt::balance::repack::{repack, PROBES, SLACKS};
use moe_opt::problem::{self, RunOptions};
use proptest::prelude::*;
use std::ops::Range;

mod common;
use common::{csv_records, moe_opt, scratch};

fn instance(loads: Vec<Vec<f64>>, slots: usize, gpus: usize) -> Instance {
    Instance {
        problem: ProblemKind::Balance,
        name: "t".into(),
        loads,
        num_replicas: slots,
        num_gpus: gpus,
        num_nodes: 1,
        num_groups: 1,
        one_replica_per_gpu: false,
        hierarchical: false,
        current: None,
    }
}

fn flashlb() -> Instance {
    instance(
        vec![vec![600.0, 560.0, 120.0, 120.0, 20.0, 10.0, 10.0, 10.0]],
        16,
        8,
    )
}

/// The small layers of the proptests: 2 or 4 GPUs of 3 or 4 slots, 2 to 8 experts with loads
/// in `loads`, one replica per GPU or not, and hierarchical on 2 nodes with 2 groups or not
/// where `hierarchical` allows; only valid instances.
fn small_layers(hierarchical: bool, loads: Range<u32>) -> impl Strategy<Value = Instance> {
    let shape = (
        1usize..=2,
        3usize..=4,
        1usize..=4,
        any::<bool>(),
        any::<bool>(),
    );
    (shape, prop::collection::vec(loads, 8)).prop_filter_map(
        "a valid layer",
        move |((half, m, pairs, one, h), raw)| {
            let (gpus, experts) = (2 * half, 2 * pairs);
            let loads = raw[..experts].iter().map(|&x| f64::from(x)).collect();
            let mut i = instance(vec![loads], m * gpus, gpus);
            i.one_replica_per_gpu = one;
            if h && hierarchical {
                (i.hierarchical, i.num_nodes, i.num_groups) = (true, 2, 2);
            }
            let valid =
                experts <= m * gpus && formulations::balance::validate::validate(&i).is_ok();
            valid.then_some(i)
        },
    )
}

fn run(i: &Instance, m: Method) -> problem::MethodRun<Balance> {
    problem::run::<Balance>(i, m, &RunOptions::default()).unwrap()
}

#[test]
fn flashlb_example_is_proved_at_the_independent_optimum() {
    for one_per_gpu in [false, true] {
        let i = Instance {
            one_replica_per_gpu: one_per_gpu,
            ..flashlb()
        };
        let r = run(&i, Method::Milp);
        let e = r.evaluation.as_ref().unwrap();
        assert_eq!(r.exact.as_ref().unwrap().status, MilpStatus::Optimal);
        assert!(
            (e.sum_max_load - 590.0 / 3.0).abs() < 1e-9,
            "{}",
            e.sum_max_load
        );
        assert!((e.balancedness - 435.0 / 472.0).abs() < 1e-12);
    }
    // EPLB: 232 on its busiest GPU; under one replica per GPU its plan is refused, with why.
    let eplb = run(&flashlb(), Method::Eplb);
    assert_eq!(eplb.objective(), Some(232.0));
    let one = Instance {
        one_replica_per_gpu: true,
        ..flashlb()
    };
    let refused = run(&one, Method::Eplb);
    assert!(refused.solution.is_none());
    assert!(refused.note.unwrap().contains("two replicas of expert 1"));
}

#[test]
fn evaluator_by_hand_and_its_refusals() {
    // 3 experts (6, 3, 2), 4 slots on 2 GPUs: expert 0 twice (3 each). GPU 0 = {0, 1} = 3 + 3,
    // GPU 1 = {0, 2} = 3 + 2: max 6, mean 11 / 2, balancedness 11 / 12.
    let i = instance(vec![vec![6.0, 3.0, 2.0]], 4, 2);
    let e = evaluate(
        &i,
        &Plan {
            phy2log: vec![vec![0, 1, 0, 2]],
        },
    )
    .unwrap();
    assert_eq!(e.layers[0].gpu_loads, vec![6.0, 5.0]);
    assert_eq!(e.sum_max_load, 6.0);
    assert!((e.balancedness - 11.0 / 12.0).abs() < 1e-15);
    assert_eq!(e.layers[0].replica_counts, vec![2, 1, 1]);
    // Expert 2 without a replica; one replica per GPU broken.
    let err = evaluate(
        &i,
        &Plan {
            phy2log: vec![vec![0, 1, 0, 1]],
        },
    )
    .unwrap_err();
    assert_eq!(err.field, "plan[0]");
    assert!(
        err.reason.contains("expert 2 has no replica"),
        "{}",
        err.reason
    );
    let one = Instance {
        one_replica_per_gpu: true,
        ..i.clone()
    };
    let err = evaluate(
        &one,
        &Plan {
            phy2log: vec![vec![0, 0, 1, 2]],
        },
    )
    .unwrap_err();
    assert!(err.reason.contains("GPU 0 holds two replicas of expert 0"));
    // Moves: current {0, 1 | 0, 2}; plan {0, 2 | 0, 1}: GPU 0 gains 2, GPU 1 gains 1.
    let moving = Instance {
        current: Some(vec![vec![0, 1, 0, 2]]),
        ..i
    };
    let e = evaluate(
        &moving,
        &Plan {
            phy2log: vec![vec![0, 2, 1, 0]],
        },
    )
    .unwrap();
    assert_eq!(e.moved, Some(2));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn exact_method_and_milp_equal_exhaustive_search(
        gpus_per_node in 1usize..=2,
        m in 1usize..=3,
        experts in 2usize..=4,
        one in any::<bool>(),
        hier in any::<bool>(),
        raw in prop::collection::vec(0u32..40, 4),
    ) {
        let nodes = if hier { 2 } else { 1 };
        let gpus = gpus_per_node * nodes;
        let experts = if hier { 4 } else { experts };
        let slots = gpus * m;
        prop_assume!(slots >= experts);
        let mut i = instance(vec![raw[..experts].iter().map(|&x| f64::from(x)).collect()], slots, gpus);
        i.one_replica_per_gpu = one;
        i.hierarchical = hier;
        i.num_nodes = nodes;
        i.num_groups = if hier { 2 } else { 1 };
        prop_assume!(formulations::balance::validate::validate(&i).is_ok());
        let shape = i.shape();
        let w = &i.loads[0];
        let best = exhaustive(&shape, w).unwrap();
        let opt = formulations::balance::evaluate::max_load(&shape, w, &best);
        // The bounds are below the optimum.
        let ranges = count_ranges(&shape, w, None);
        prop_assert!(bounds::lower_bound(&shape, w, &ranges) <= opt * (1.0 + 1e-12), "bound above {opt}");
        // And over the plans at least as good as the greedy's, with its count ranges.
        if let Some(g) = moe_opt::balance::algorithms::greedy(&shape, w) {
            let u = formulations::balance::evaluate::max_load(&shape, w, &g);
            let ranges = count_ranges(&shape, w, Some(u));
            prop_assert!(bounds::lower_bound(&shape, w, &ranges).min(u) <= opt * (1.0 + 1e-12));
        }
        // Two slots per GPU: the least sorted pairing over the count vectors is the optimum,
        // a bound under one replica per GPU; its plan, if any, is one the evaluator accepts,
        // at its stated load, and the optimum itself without that option.
        if m == 2 && !hier {
            let paired = pairing::solve(&shape, w, &ranges).unwrap();
            prop_assert!(paired.bound <= opt * (1.0 + 1e-12), "pairing {} above {opt}", paired.bound);
            if !one {
                prop_assert!((paired.bound - opt).abs() <= 1e-9 * opt.max(1.0));
                prop_assert!(paired.plan.is_some());
            }
            if let Some((plan, v)) = paired.plan {
                prop_assert!(evaluate::check_layer(&shape, &plan).is_ok());
                prop_assert_eq!(formulations::balance::evaluate::max_load(&shape, w, &plan), v);
                prop_assert!(v >= opt * (1.0 - 1e-12));
                if !one {
                    prop_assert!((v - opt).abs() <= 1e-9 * opt.max(1.0));
                }
            }
        }
        // The MILP alone (no bound, full count ranges) finds the optimum.
        let model = LayerModel::build(&shape, w, &LayerOptions::default(), "t".into(), "").unwrap();
        let solved = model.milp.solve(&SolveOptions::default(), None).unwrap();
        prop_assert_eq!(solved.status, MilpStatus::Optimal);
        let plan = model.decode(solved.values.as_ref().unwrap());
        let milp = formulations::balance::evaluate::max_load(&shape, w, &plan);
        prop_assert!((milp - opt).abs() <= 1e-9 * opt.max(1.0), "milp {milp} vs {opt}");
        // The exact method (heuristics, bounds, then the MILP) too; every method's plan passes
        // the evaluator (problem::run evaluates it) and none beats the optimum.
        for method in Method::ALL {
            let r = run(&i, *method);
            if let Some(v) = r.objective() {
                prop_assert!(v >= opt * (1.0 - 1e-12), "{} {v} below {opt}", method.name());
            }
            if *method == Method::Milp {
                prop_assert!((r.objective().unwrap() - opt).abs() <= 1e-9 * opt.max(1.0));
                prop_assert_eq!(r.exact.as_ref().unwrap().status, MilpStatus::Optimal);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Two slots per GPU on up to 4 GPUs and 8 experts: the sorted pairing against exhaustive
    /// search, and the exact method at the optimum.
    #[test]
    fn pairing_equals_exhaustive_search_on_two_slots_per_gpu(
        gpus in 1usize..=4,
        experts in 1usize..=8,
        one in any::<bool>(),
        raw in prop::collection::vec(0u32..60, 8),
    ) {
        let experts = experts.min(2 * gpus).max(1);
        let mut i = instance(vec![raw[..experts].iter().map(|&x| f64::from(x)).collect()], 2 * gpus, gpus);
        i.one_replica_per_gpu = one;
        prop_assume!(formulations::balance::validate::validate(&i).is_ok());
        let shape = i.shape();
        let w = &i.loads[0];
        let opt = evaluate::max_load(&shape, w, &exhaustive(&shape, w).unwrap());
        let paired = pairing::solve(&shape, w, &count_ranges(&shape, w, None)).unwrap();
        prop_assert!(paired.bound <= opt * (1.0 + 1e-12), "pairing {} above {opt}", paired.bound);
        if !one {
            prop_assert!((paired.bound - opt).abs() <= 1e-9 * opt.max(1.0));
        }
        if let Some((plan, v)) = &paired.plan {
            prop_assert!(evaluate::check_layer(&shape, plan).is_ok());
            prop_assert_eq!(evaluate::max_load(&shape, w, plan), *v);
            prop_assert!(*v >= opt * (1.0 - 1e-12));
        } else {
            prop_assert!(one, "a plan exists without the option");
        }
        let r = run(&i, Method::Milp);
        prop_assert!((r.objective().unwrap() - opt).abs() <= 1e-9 * opt.max(1.0));
        prop_assert_eq!(r.exact.as_ref().unwrap().status, MilpStatus::Optimal);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Annealing (three or four slots per GPU, up to 4 GPUs and 8 experts) from the greedy
    /// plan: a valid plan under every option, hierarchical included (2 nodes, 2 groups), no
    /// worse than its start, no better than the exhaustive optimum, the same for the same seed.
    #[test]
    fn annealing_keeps_the_options_and_never_worsens_its_start(
        i in small_layers(true, 0..60),
        seed in 0u64..4,
    ) {
        let shape = i.shape();
        let w = &i.loads[0];
        let start = algorithms::greedy(&shape, w);
        prop_assume!(start.is_some());
        let start = start.unwrap();
        let plan = anneal(&shape, w, &start, seed);
        prop_assert!(evaluate::check_layer(&shape, &plan).is_ok(), "{plan:?}");
        let (v, from) = (evaluate::max_load(&shape, w, &plan), evaluate::max_load(&shape, w, &start));
        prop_assert!(v <= from, "annealed {v} above its start {from}");
        // Exhaustive search where its size limit allows (2 GPUs always; 4 GPUs with few experts).
        if let Ok(best) = exhaustive(&shape, w) {
            let opt = evaluate::max_load(&shape, w, &best);
            prop_assert!(v >= opt * (1.0 - 1e-12), "annealed {v} below the optimum {opt}");
        }
        prop_assert_eq!(anneal(&shape, w, &start, seed), plan);
    }
}

/// Three GPUs of three slots, loads 50, 30, 1, 2, 3, 2 (three redundant slots). The greedy
/// gives them to the largest load per replica (50, 30, then 25: counts 3, 2), and local search
/// from its plan or EPLB's stays above 30. A plan of 30 by hand: expert 1 in three replicas of
/// 10 on one GPU, expert 0 in two of 25, each with two small experts (25 + 3 + 2, 25 + 2 + 1).
/// Exhaustive search, independent of the heuristics, proves 30 optimal; the heavy starts
/// (expert 1 at one more replica than the best plan gives it) reach it.
#[test]
fn heavy_starts_reach_the_optimum_the_greedy_counts_miss() {
    let i = instance(vec![vec![50.0, 30.0, 1.0, 2.0, 3.0, 2.0]], 9, 3);
    let (shape, w) = (i.shape(), &i.loads[0]);
    let opt = evaluate::max_load(&shape, w, &exhaustive(&shape, w).unwrap());
    assert_eq!(opt, 30.0);
    let greedy = algorithms::greedy(&shape, w).unwrap();
    let searched = algorithms::local_search(&shape, w, &greedy);
    assert!(evaluate::max_load(&shape, w, &searched) > 30.0);
    let best = exact::best_heuristic(&shape, w, 1, 1).unwrap();
    assert!(evaluate::check_layer(&shape, &best).is_ok());
    assert_eq!(evaluate::max_load(&shape, w, &best), 30.0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// The heavy starts (up to 4 GPUs of 3 or 4 slots, 8 experts): valid plans under every
    /// option, hierarchical included; the heuristics' best no better than the exhaustive
    /// optimum and no worse than local search from the greedy plan.
    #[test]
    fn heavy_starts_keep_the_options(
        i in small_layers(true, 0..60),
    ) {
        let (shape, w) = (i.shape(), &i.loads[0]);
        let greedy = algorithms::greedy(&shape, w);
        prop_assume!(greedy.is_some());
        let searched = algorithms::local_search(&shape, w, &greedy.unwrap());
        for plan in exact::heavy_starts(&shape, w, &searched) {
            prop_assert!(evaluate::check_layer(&shape, &plan).is_ok(), "{plan:?}");
        }
        let best = exact::best_heuristic(&shape, w, i.num_groups, i.num_nodes).unwrap();
        prop_assert!(evaluate::check_layer(&shape, &best).is_ok(), "{best:?}");
        let v = evaluate::max_load(&shape, w, &best);
        prop_assert!(v <= evaluate::max_load(&shape, w, &searched));
        if let Ok(opt) = exhaustive(&shape, w) {
            let opt = evaluate::max_load(&shape, w, &opt);
            prop_assert!(v >= opt * (1.0 - 1e-12), "{v} below the optimum {opt}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Repacking (2 or 4 GPUs of 3 or 4 slots, up to 8 experts, with and without one replica
    /// per GPU) with an exhaustive optimum as the bound, from two starts: the greedy packing of
    /// that optimum's counts, and the greedy plan. Each result is valid, no worse than its
    /// start, not below the optimum, and within (U - opt) / 2^PROBES of it (U the start's
    /// load) whenever one bisection keeps the optimum between its ends: the first does from
    /// the optimum's own counts (each probe at or above the optimum is feasible with them); the
    /// second, with the counts free, does when the optimum's counts lie in every probe's range,
    /// ceil(w_e / T) to SLACKS[0] more for T between the optimum and U, that is when
    /// c_e <= ceil(w_e / U) + SLACKS[0] (the optimum's GPUs are contents in every window at or
    /// above it, so each probe there is feasible). Either bisection halves its ends PROBES
    /// times from at most U (no probe of layers this small passes its contents cap, so the
    /// first slack decides each).
    #[test]
    fn repacking_bisects_to_the_optimum(
        i in small_layers(false, 1..60),
    ) {
        let experts = i.shape().experts;
        let (shape, w) = (i.shape(), &i.loads[0]);
        let best = exhaustive(&shape, w);
        prop_assume!(best.is_ok());
        let best = best.unwrap();
        let opt = evaluate::max_load(&shape, w, &best);
        let counts = replica_counts(&best, experts);
        let fixed: Vec<(usize, usize)> = counts.iter().copied().enumerate().collect();
        let own = algorithms::greedy_with(&shape, w, &fixed);
        prop_assume!(own.is_some());
        let greedy = algorithms::greedy(&shape, w).unwrap();
        let u = evaluate::max_load(&shape, w, &greedy);
        let in_range = (0..experts).all(|e| counts[e] <= (w[e] / u).ceil() as usize + SLACKS[0]);
        for (start, bisected) in [(own.unwrap(), true), (greedy, in_range)] {
            let repacked = repack(&shape, w, &start, opt, &SolveOptions::default()).unwrap();
            let plan = repacked.plan;
            prop_assert!(evaluate::check_layer(&shape, &plan).is_ok(), "{plan:?}");
            prop_assert!(repacked.bound == opt, "bound {} from the optimum {opt}", repacked.bound);
            let v = evaluate::max_load(&shape, w, &plan);
            let u = evaluate::max_load(&shape, w, &start);
            prop_assert!(v <= u, "repacked {v} above its start {u}");
            prop_assert!(v >= opt * (1.0 - 1e-12), "repacked {v} below the optimum {opt}");
            let step = (u - opt) / f64::from(1u32 << PROBES);
            prop_assert!(!bisected || v <= opt + step + 1e-9, "repacked {v}, optimum {opt}, start {u}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// The bound repacking proves, from the mean and the greedy plan, against the exhaustive
    /// optimum: never above it on the small layers (counts free or forced, one replica per GPU
    /// or not), without a time limit and with one of 60 s (where the probes at the goal are
    /// long: `LONG_PROBE_S`). Where every expert has one replica (S = E: 2 or 3 GPUs of 2 to 4
    /// slots), every counts-fixed probe is complete and decided, so each halves the distance
    /// between the bound and the best plan (or reaches the goal): after PROBES probes the plan
    /// is within the gap of the bound or within (U - mean) / 2^PROBES of it (U the greedy's
    /// load).
    #[test]
    fn repacking_proves_no_bound_above_the_optimum(
        i in small_layers(false, 1..60),
        forced in (2usize..=3, 2usize..=4, prop::collection::vec(1u32..60, 12), any::<bool>()),
    ) {
        let (gpus, m, raw, one) = forced;
        let loads = raw[..gpus * m].iter().map(|&x| f64::from(x)).collect();
        let mut e = instance(vec![loads], gpus * m, gpus);
        e.one_replica_per_gpu = one;
        for (layer, all_one) in [(i, false), (e, true)] {
            let (shape, w) = (layer.shape(), &layer.loads[0]);
            let Ok(best) = exhaustive(&shape, w) else {
                continue;
            };
            let opt = evaluate::max_load(&shape, w, &best);
            let greedy = algorithms::greedy(&shape, w).unwrap();
            let (u, mean) = (evaluate::max_load(&shape, w, &greedy), bounds::mean(&shape, w));
            for limit in [None, Some(60.0)] {
                let options = SolveOptions { time_limit_s: limit, ..SolveOptions::default() };
                let repacked = repack(&shape, w, &greedy, mean, &options).unwrap();
                prop_assert!(evaluate::check_layer(&shape, &repacked.plan).is_ok());
                let (v, b) = (evaluate::max_load(&shape, w, &repacked.plan), repacked.bound);
                prop_assert!(b >= mean && b <= opt * (1.0 + 1e-12), "bound {b}, optimum {opt}");
                prop_assert!(v >= opt * (1.0 - 1e-12), "repacked {v} below the optimum {opt}");
                let step = (u - mean) / f64::from(1u32 << PROBES);
                prop_assert!(
                    !all_one || v <= b * (1.0 + PROVED_GAP) * (1.0 + 1e-12) || v - b <= step + 1e-9,
                    "plan {v}, bound {b}, optimum {opt}, start {u}, mean {mean}, limit {limit:?}"
                );
            }
        }
    }
}

/// The counts-free bisection on the layer of `heavy_starts_reach_the_optimum_the_greedy_counts_miss`
/// (optimum 30): the greedy plan's counts 3, 2, 1, 1, 1, 1 cannot reach it (the three replicas
/// of 16.67 need three GPUs, and two of them share their other two slots with the replicas of
/// 15 and at least 1: 32.67 or more), and repacking from that plan, with 30 as the bound,
/// frees them and reaches 30.
#[test]
fn repacking_frees_the_counts_the_greedy_fixed() {
    let i = instance(vec![vec![50.0, 30.0, 1.0, 2.0, 3.0, 2.0]], 9, 3);
    let (shape, w) = (i.shape(), &i.loads[0]);
    let greedy = algorithms::greedy(&shape, w).unwrap();
    assert_eq!(replica_counts(&greedy, 6), [3, 2, 1, 1, 1, 1]);
    let plan = repack(&shape, w, &greedy, 30.0, &SolveOptions::default())
        .unwrap()
        .plan;
    assert!(evaluate::check_layer(&shape, &plan).is_ok());
    assert_eq!(evaluate::max_load(&shape, w, &plan), 30.0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Every bound, alone, below the exhaustive optimum on layers of up to 4 GPUs and 8
    /// experts (a few heavy ones among light ones, where the heaviest-replicas bound bites),
    /// over every count vector and over those of plans as good as the greedy's.
    #[test]
    fn each_bound_is_below_the_exhaustive_optimum(
        gpus in 2usize..=4,
        m in 2usize..=3,
        experts in 2usize..=8,
        one in any::<bool>(),
        heavy in prop::collection::vec(20u32..100, 3),
        light in prop::collection::vec(0u32..10, 8),
    ) {
        let slots = gpus * m;
        let experts = experts.min(slots);
        let raw: Vec<f64> = heavy.iter().chain(&light).take(experts).map(|&x| f64::from(x)).collect();
        let mut i = instance(vec![raw], slots, gpus);
        i.one_replica_per_gpu = one;
        prop_assume!(formulations::balance::validate::validate(&i).is_ok());
        let shape = i.shape();
        let w = &i.loads[0];
        let Ok(best) = exhaustive(&shape, w) else {
            return Ok(());
        };
        let opt = evaluate::max_load(&shape, w, &best);
        let mut cases = vec![(count_ranges(&shape, w, None), f64::INFINITY)];
        if let Some(g) = moe_opt::balance::algorithms::greedy(&shape, w) {
            let u = evaluate::max_load(&shape, w, &g);
            cases.push((count_ranges(&shape, w, Some(u)), u));
        }
        for (ranges, u) in cases {
            for (name, b) in [
                ("mean", bounds::mean(&shape, w)),
                ("threshold", bounds::threshold(&shape, w, &ranges)),
                ("pair", bounds::pair(&shape, w, &ranges)),
                ("heaviest", bounds::heaviest(&shape, w, &ranges)),
                ("lower_bound", bounds::lower_bound(&shape, w, &ranges)),
            ] {
                prop_assert!(b.min(u) <= opt * (1.0 + 1e-12), "{name} {b} above {opt}");
            }
        }
    }
}

/// The migration front of a small layer against exhaustive search outside moe-opt: loads
/// 10, 7, 4, 2, 1 on 8 slots and 4 GPUs, current placement [0 1 | 0 2 | 1 3 | 4 0]. A Python
/// script, run once, tried all 5^8 plans in exact rationals and took the least busiest GPU per
/// number of replicas moved: OPT(0) = 22/3, OPT(1) = 7, OPT(B >= 2) = 41/6.
#[test]
fn migration_front_is_the_exhaustive_front() {
    let mut i = instance(vec![vec![10.0, 7.0, 4.0, 2.0, 1.0]], 8, 4);
    i.current = Some(vec![vec![0, 1, 0, 2, 1, 3, 4, 0]]);
    let report =
        moe_opt::balance::migration::migration_front(&i, None, &SolveOptions::default()).unwrap();
    let layer = &report.layers[0];
    let front: Vec<(usize, f64)> = layer.front.iter().map(|p| (p.budget, p.max_load)).collect();
    let expected = [(0, 22.0 / 3.0), (1, 7.0), (2, 41.0 / 6.0)];
    assert_eq!(front.len(), expected.len(), "{front:?}");
    for ((b, v), (eb, ev)) in front.iter().zip(expected) {
        assert_eq!(*b, eb);
        assert!((v - ev).abs() < 1e-9, "budget {b}: {v} vs {ev}");
    }
    for p in &layer.front {
        assert_eq!(p.status, MilpStatus::Optimal);
        assert!(p.moved <= p.budget);
    }
    assert!((layer.optimum - 41.0 / 6.0).abs() < 1e-9);
    // EPLB's plan sits on or above the exact front: OPT(EPLB's moves) <= EPLB's load, so the
    // front reaches EPLB's load within EPLB's moves.
    let moves = layer.eplb_moved.unwrap();
    let reached = layer.budget_for_eplb_load.unwrap();
    assert!(reached <= moves, "{reached} > {moves}");
}

#[test]
fn migration_front_refuses_an_instance_without_a_current_placement() {
    let i = instance(vec![vec![10.0, 7.0, 4.0, 2.0, 1.0]], 8, 4);
    let e = moe_opt::balance::migration::migration_front(&i, None, &SolveOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("current"), "{e}");
}

/// The grid bound's rounding by hand: with counts in 1..=2 (L = 2) a bound of 13358.25 rounds
/// to 13358.5, a bound computed a hair above a multiple stays on it, counts 1..=4 give L = 12,
/// and fractional loads give no grid.
#[test]
fn grid_bound_rounds_up_to_the_least_common_multiple() {
    let w = [4.0, 3.0, 1.0];
    assert_eq!(bounds::grid(&w, &[(1, 2), (1, 1), (1, 2)]), Some(2));
    assert_eq!(bounds::grid(&w, &[(1, 4), (1, 1), (1, 1)]), Some(12));
    assert_eq!(bounds::grid(&[4.5, 3.0], &[(1, 2), (1, 1)]), None);
    assert_eq!(bounds::on_grid(13358.25, Some(2)), 13358.5);
    assert_eq!(bounds::on_grid(13358.5 + 1e-9, Some(2)), 13358.5);
    assert_eq!(bounds::on_grid(590.0 / 3.0, Some(12)), 590.0 / 3.0);
    assert_eq!(bounds::on_grid(13358.25, None), 13358.25);
}

/// `sweep` runs the balance problem: on the `tiny` preset with 5 or 6 experts (small enough for
/// exhaustive search)
/// the exact method equals exhaustive search in every cell, and EPLB is never below it.
#[test]
fn sweep_runs_balance_against_exhaustive_search() {
    let dir = scratch("balance-sweep");
    let spec = dir.join("spec.toml");
    std::fs::write(
        &spec,
        "problem = \"balance\"\npreset = \"tiny\"\nseeds = 2\n\
         methods = [\"milp\", \"exhaustive\", \"eplb\"]\n\n\
         [[axes]]\npath = \"experts\"\nvalues = [5, 6]\n",
    )
    .unwrap();
    let out = dir.join("out");
    let run = moe_opt()
        .arg("sweep")
        .arg(&spec)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut cells = std::collections::BTreeMap::<String, Vec<(String, f64)>>::new();
    for row in csv_records(&out.join("results.csv")) {
        cells
            .entry(row["cell"].clone())
            .or_default()
            .push((row["method"].clone(), row["objective"].parse().unwrap()));
    }
    assert_eq!(cells.len(), 4);
    for (cell, rows) in &cells {
        let of = |m: &str| rows.iter().find(|r| r.0 == m).unwrap().1;
        assert!(
            (of("milp") - of("exhaustive")).abs() <= 1e-9 * of("exhaustive"),
            "cell {cell}"
        );
        assert!(
            of("eplb") >= of("exhaustive") * (1.0 - 1e-12),
            "cell {cell}"
        );
    }
}
