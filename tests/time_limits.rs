//! A MILP stopped by its time limit says so: status `time_limit` (never `optimal`), and what it
//! reports is consistent. The instance is SlimCaching's `paper` preset (about 600,000 rows),
//! whose root LP alone takes HiGHS several seconds, so a limit of a second cannot prove it.
//! The incumbent is re-checked by the evaluator (feasible, same objective) and the bound must
//! be on the right side (SlimCaching maximises: bound >= incumbent). No wall-clock time is
//! asserted (the margin over the limit is measured in docs/command-line.md).

use formulations::milp::MilpStatus;
use formulations::slimcaching::LatencyModel;
use moe_opt::slimcaching::algorithms;
use moe_opt::slimcaching::generate::{generate, GeneratorConfig, Preset};
use moe_opt::slimcaching::methods::{self, Method, MethodRun, RunOptions};

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-12)
}

fn paper_model() -> LatencyModel {
    LatencyModel::new(&generate(&GeneratorConfig::preset(Preset::Paper), 0))
}

fn milp_with_limit(model: &LatencyModel, seconds: f64) -> MethodRun {
    let mut options = RunOptions::default();
    options.solve.time_limit_s = Some(seconds);
    methods::run(Method::Milp, model, &options).expect("a stopped solve is a result")
}

/// What holds for every stopped solve: status, incumbent re-evaluated, bound side, gap.
fn assert_consistent(model: &LatencyModel, run: &MethodRun) {
    let exact = run.exact.as_ref().expect("the MILP reports its account");
    assert_eq!(exact.status, MilpStatus::TimeLimit, "{exact:?}");
    assert!(!run.is_proved_optimal());
    assert_eq!(exact.objective.is_some(), run.solution.is_some());
    if let (Some(o), Some(p)) = (exact.objective, run.solution.as_ref()) {
        assert!(model.is_feasible(p));
        let evaluated = run.objective().expect("evaluated");
        assert!(close(evaluated, o, 1e-6), "MILP {o}, evaluator {evaluated}");
        if let Some(b) = exact.best_bound {
            assert!(b >= o - 1e-9 * o.abs(), "bound {b} below incumbent {o}");
            assert!(exact.gap.is_some());
        }
    }
    if exact.best_bound.is_none() {
        assert!(exact.gap.is_none());
    }
}

#[test]
fn paper_preset_stopped_by_a_one_second_limit_reports_time_limit() {
    let model = paper_model();
    let run = milp_with_limit(&model, 1.0);
    assert_consistent(&model, &run);
    // The MIP start (Alg. 3's placement, feasible) is an incumbent whatever HiGHS reached.
    assert!(run.solution.is_some(), "{:?}", run.exact);
}

/// A limit that has run out before the model is built: no HiGHS run at all, the MIP start
/// (Alg. 3's placement) is the incumbent, no bound, and the note says why.
#[test]
fn limit_spent_before_the_model_is_built_reports_the_start_and_no_bound() {
    let model = paper_model();
    let run = milp_with_limit(&model, 1e-9);
    assert_consistent(&model, &run);
    let exact = run.exact.as_ref().unwrap();
    assert_eq!(exact.best_bound, None);
    let start = algorithms::successive_maxconv(&model).expect("Alg. 3 applies");
    let start_value = model.objective(&start.placement);
    assert!(close(exact.objective.unwrap(), start_value, 1e-6));
    let note = exact.note.as_deref().unwrap_or_default();
    assert!(note.contains("time limit ran out"), "{note}");
    assert!(note.contains("MIP start"), "{note}");
}
