//! ZipMoE's exact methods agree, and every method's schedule is feasible by the independent
//! checker (`formulations::zipmoe::check`).

use formulations::milp::{MilpStatus, SolveOptions};
use formulations::zipmoe::{check, lower_bound, Simulator, ZipMoeMilp};
use moe_opt::zipmoe::algorithms::{self, Candidates};
use moe_opt::zipmoe::claims::family_tiny;

#[test]
fn milp_optimum_equals_exhaustive_search_on_tiny_layers() {
    for seed in 0..12 {
        let i = family_tiny(seed);
        let ex = algorithms::exhaustive(&i).unwrap();
        assert_eq!(check(&i, &ex.rows), Ok(ex.makespan_s));
        let solved = ZipMoeMilp::build(&i)
            .unwrap()
            .solve(&i, &SolveOptions::default())
            .unwrap();
        assert_eq!(solved.solution.status, MilpStatus::Optimal, "seed {seed}");
        let milp = solved.solution.objective.unwrap();
        let tol = 1e-6 * ex.makespan_s;
        assert!(
            (milp - ex.makespan_s).abs() <= tol,
            "seed {seed}: MILP {milp} vs exhaustive {}",
            ex.makespan_s
        );
        let s = solved.schedule.unwrap();
        assert!((check(&i, &s.rows).unwrap() - ex.makespan_s).abs() <= tol);
        // Every heuristic is feasible and no better than the optimum.
        let sim = Simulator::new(&i);
        for p in [
            algorithms::cache_affinity(&i, Candidates::Algorithm1).priority,
            algorithms::cache_affinity(&i, Candidates::TypeIIOnly).priority,
            algorithms::fifo(&i),
            algorithms::type1_first(&i),
            algorithms::random_order(&i, seed),
        ] {
            let h = sim.run(&p).unwrap();
            assert_eq!(check(&i, &h.rows), Ok(h.makespan_s));
            assert!(h.makespan_s >= ex.makespan_s - tol);
        }
        eprintln!(
            "seed {seed}: experts {} OPT {:.4} LB {:.4}",
            i.experts.len(),
            ex.makespan_s,
            lower_bound(&i).value_s
        );
    }
}
