//! The Lagrangian bound of P1 (`slimcaching::lagrangian`) against optima found independently:
//! * never below the brute-force optimum (every feasible placement enumerated) on seeded tiny
//!   instances (property test over the seed);
//! * never below HiGHS's proved MILP optimum on small instances with Top-1/2/3 models, and, once
//!   converged, equal to the LP relaxation of the whole of P1 solved by HiGHS (the storage rows
//!   are the only rows linking the parts, so at the best prices the two LPs agree).

mod common;

use common::{all_pairs, brute_force_max, random_instance, random_small_instance, SplitMix64};
use formulations::milp::{MilpStatus, Relaxation, SolveOptions};
use formulations::slimcaching::lagrangian::{lagrangian_bound, LagrangianOptions, Stop};
use formulations::slimcaching::milp::OBJECTIVE_SCALE;
use formulations::slimcaching::{LatencyModel, SlimCachingMilp};
use proptest::prelude::*;

fn bound(model: &LatencyModel) -> (f64, Stop) {
    let out = lagrangian_bound(model, &LagrangianOptions::default(), |_| {}).expect("bound");
    (out.bound, out.stop)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn never_below_the_brute_force_optimum(seed in any::<u64>()) {
        let mut rng = SplitMix64::new(seed);
        let inst = random_small_instance(&mut rng, 12);
        let model = LatencyModel::new(&inst);
        let (best, _) = brute_force_max(&model, &model.empty_placement(), &all_pairs(&model));
        let (upper, _) = bound(&model);
        prop_assert!(
            upper >= best - 1e-12 * best.abs().max(1e-3),
            "bound {upper} below the optimum {best}"
        );
    }
}

#[test]
fn never_below_the_milp_optimum_and_equal_to_the_lp_relaxation() {
    let mut rng = SplitMix64::new(0x1A6_0001);
    for i in 0..12 {
        let servers = rng.range(2, 3) as usize;
        let users = rng.range(2, 5) as usize;
        let inst = random_instance(&mut rng, servers, &[(2, 2, 4), (1, 2, 3), (3, 1, 4)], users);
        let model = LatencyModel::new(&inst);
        let p1 = SlimCachingMilp::p1(&model);
        let s = p1
            .solve(&model, &SolveOptions::default(), None)
            .expect("MILP");
        assert_eq!(s.solution.status, MilpStatus::Optimal, "instance {i}");
        let opt = s.solution.objective.expect("optimum");
        let (upper, stop) = bound(&model);
        assert!(
            upper >= opt - 1e-9 * opt.abs().max(1e-3),
            "instance {i}: bound {upper} below the MILP optimum {opt}"
        );
        let lp = Relaxation::new(&p1.milp)
            .and_then(|mut r| r.solve(None))
            .expect("LP of P1")
            .bound
            / OBJECTIVE_SCALE;
        assert_eq!(stop, Stop::Converged, "instance {i}");
        assert!(
            (upper - lp).abs() <= 1e-5 * lp.abs().max(1e-3),
            "instance {i}: Lagrangian {upper} vs LP relaxation {lp}"
        );
    }
}
