//! The exact MILP against exhaustive search, and every method against the proved optimum.
//!
//! Exhaustive search is the independent reference: it enumerates every feasible placement and
//! evaluates F with the evaluator, knowing nothing of the MILP. On at least 50 seeded `tiny`
//! instances (mixing K = 1 and K = 2 models, one and several servers) the MILP must prove an
//! optimum equal to the exhaustive one, and its decoded placement, re-evaluated, must give the
//! MILP's objective.

use formulations::milp::{MilpStatus, SolveOptions};
use formulations::slimcaching::{LatencyModel, SlimCachingMilp};
use moe_opt::slimcaching::algorithms;
use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};
use moe_opt::slimcaching::methods::{self, Method, Reference, RunOptions};

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-12)
}

#[test]
fn milp_optimum_equals_exhaustive_optimum_on_fifty_tiny_instances() {
    let config = GeneratorConfig::preset(Preset::Tiny);
    let (mut one_server, mut several_servers, mut mixed_k) = (0, 0, 0);
    for seed in 0..50 {
        let instance = generate(&config, seed);
        let model = LatencyModel::new(&instance);
        if instance.servers.len() == 1 {
            one_server += 1;
        } else {
            several_servers += 1;
        }
        let ks: std::collections::BTreeSet<u32> = instance.models.iter().map(|m| m.top_k).collect();
        if ks.contains(&1) && ks.iter().any(|&k| k > 1) {
            mixed_k += 1;
        }
        let (best, best_value) = algorithms::exhaustive(&model).expect("tiny fits the limit");
        assert!(model.is_feasible(&best));
        let milp = SlimCachingMilp::p1(&model);
        let solved = milp
            .solve(&model, &SolveOptions::default(), None)
            .expect("HiGHS solves a tiny MILP");
        assert_eq!(solved.solution.status, MilpStatus::Optimal, "seed {seed}");
        let objective = solved.solution.objective.unwrap();
        let placement = solved.placement.unwrap();
        assert!(model.is_feasible(&placement), "seed {seed}");
        let reevaluated = model.objective(&placement);
        assert!(
            close(reevaluated, objective, 1e-6),
            "seed {seed}: MILP says {objective}, evaluator says {reevaluated}"
        );
        assert!(
            close(objective, best_value, 1e-6),
            "seed {seed}: MILP optimum {objective}, exhaustive optimum {best_value}"
        );
    }
    assert!(
        one_server > 0 && several_servers > 0,
        "{one_server} / {several_servers}"
    );
    assert!(mixed_k > 0, "no instance mixes K = 1 and K > 1");
}

#[test]
fn every_method_on_small_instances_is_feasible_and_at_most_the_proved_optimum() {
    let config = GeneratorConfig::preset(Preset::Small);
    let options = RunOptions::default();
    for seed in 0..3 {
        let instance = generate(&config, seed);
        let model = LatencyModel::new(&instance);
        let runs: Vec<_> = Method::ALL
            .iter()
            .copied()
            .filter(|m| *m != Method::Exhaustive)
            .map(|m| methods::run(m, &model, &options).expect("method runs"))
            .collect();
        let Reference::Optimum { value: opt, source } = Reference::from_runs(&runs) else {
            panic!("seed {seed}: the MILP did not prove an optimum on a small instance");
        };
        assert_eq!(source, "milp", "seed {seed}");
        for run in &runs {
            let e = run
                .evaluation
                .as_ref()
                .expect("every method returns a placement");
            assert!(e.feasible, "seed {seed}: {} is infeasible", run.method);
            assert!(
                e.objective <= opt * (1.0 + 1e-6) + 1e-12,
                "seed {seed}: {} beats the proved optimum ({} > {opt})",
                run.method,
                e.objective
            );
        }
    }
}

#[test]
fn the_lagrangian_method_brackets_the_milp_optimum_and_names_its_bound() {
    // Its placement is the better of Alg. 1's and Alg. 3's; its bound is at least the MILP's
    // proved optimum; without the MILP, compare's reference is that bound, named.
    let config = GeneratorConfig::preset(Preset::Small);
    let options = RunOptions::default();
    for seed in 0..3 {
        let model = LatencyModel::new(&generate(&config, seed));
        let run = |m| methods::run(m, &model, &options).expect("method runs");
        let (milp, lagrangian) = (run(Method::Milp), run(Method::Lagrangian));
        let opt = milp.objective().unwrap();
        let f = lagrangian.objective().unwrap();
        let best_heuristic = [Method::Greedy, Method::SuccessiveMaxconv]
            .map(|m| run(m).objective().unwrap())
            .into_iter()
            .fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(f, best_heuristic, "seed {seed}");
        let exact = lagrangian.exact.as_ref().unwrap();
        let bound = exact.best_bound.unwrap();
        assert!(
            bound >= opt * (1.0 - 1e-9) && opt >= f,
            "seed {seed}: {bound} {opt} {f}"
        );
        assert_eq!(exact.objective, Some(f));
        // The gap as the MILP reports it: relative, in milliseconds.
        let gap = (bound - f) * 1e3 / (f * 1e3).max(1.0);
        assert!((exact.gap.unwrap() - gap).abs() <= 1e-12, "seed {seed}");
        assert_eq!(
            lagrangian.is_proved_optimal(),
            exact.status == MilpStatus::Optimal
        );
        let reference = Reference::from_runs(&[lagrangian.clone(), run(Method::Greedy)]);
        assert_eq!(
            reference,
            Reference::Bound {
                value: bound,
                source: "lagrangian"
            }
        );
        // With the MILP's proved optimum beside it, the optimum is the reference.
        assert_eq!(
            Reference::from_runs(&[lagrangian, milp]),
            Reference::Optimum {
                value: opt,
                source: "milp"
            }
        );
    }
}

#[test]
fn compare_runs_the_lagrangian_bound_by_default_only_where_the_milp_cannot_prove() {
    use moe_opt::problem::Problem;
    use moe_opt::slimcaching::methods::SlimCaching;
    for (preset, expected) in [(Preset::Small, false), (Preset::Paper, true)] {
        let instance = generate(&GeneratorConfig::preset(preset), 1);
        let defaults = SlimCaching::default_methods(&instance);
        assert_eq!(
            defaults.contains(&Method::Lagrangian),
            expected,
            "{preset:?}"
        );
        assert!(defaults.contains(&Method::Milp));
    }
}
