//! SlimCaching (paper 000) as a [`Problem`]: its methods (the exact MILP, exhaustive search,
//! the paper's algorithms and its baselines), each followed by the one evaluator
//! (`formulations::slimcaching::LatencyModel::evaluate`) through [`crate::problem::run`].
//!
//! The exact method solves P1 (18) with HiGHS, warm-started from Alg. 3's placement when that
//! algorithm applies (a feasible MIP start only speeds the search up; the status, bound and gap
//! are HiGHS's). Its placement is decoded and re-evaluated like every other method's.
//!
//! `lagrangian` is moe-opt's method for the paper's sizes, where the MILP's root LP does not
//! finish (issue 34): its placement is the better of Alg. 1's and Alg. 3's, its bound the
//! Lagrangian relaxation of the storage rows (`formulations::slimcaching::lagrangian`, proved
//! in its module doc), its gap HiGHS's (bound - F) / max(F, 1) in milliseconds. It stops at
//! `--gap`, at `--time-limit` or when the bound has converged, and proves an optimum only when
//! the gap closes; `compare` runs it by
//! default on instances of the paper's size (P1 above `PAPER_SIZED_VARIABLES` variables) and
//! takes its bound as the reference where it is the tightest, and names it.

use std::path::Path;

use formulations::milp::{Milp, MilpStatus, PROVED_GAP};
use formulations::slimcaching::lagrangian::{lagrangian_bound, LagrangianOptions, Stop};
use formulations::slimcaching::milp::{p1_variables, OBJECTIVE_SCALE, PAPER_SIZED_VARIABLES};
use formulations::slimcaching::{Evaluation, Instance, LatencyModel, Placement, SlimCachingMilp};
use formulations::{Error, ValidationError};

use super::algorithms::{self, EXHAUSTIVE_LIMIT};
use crate::problem::{Problem, Sense, Solved};

crate::named! {
    /// A way to choose a placement.
    pub enum Method: "method" {
        /// exact MILP of P1 (18), HiGHS
        Milp,
        /// exhaustive search
        Exhaustive,
        /// Lagrangian bound on (18b), placement the best of Algs. 1 and 3 (moe-opt)
        Lagrangian,
        /// Alg. 1 greedy
        Greedy,
        /// Alg. 1, lazy evaluations
        LazyGreedy,
        /// Alg. 2 successive DP
        SuccessiveDp,
        /// Alg. 3 max-convolution
        SuccessiveMaxconv,
        /// Alg. 1 repaired (moe-opt): per server, density greedy or best single expert
        SuccessiveGreedy,
        /// baseline LFU
        Lfu,
        /// baseline Random
        Random,
        /// baseline U-shaped (layer)
        UShaped,
    }
}

pub use crate::problem::{ExactReport, Reference, RunOptions};

/// SlimCaching: expert caching on cooperating edge servers (paper 000).
pub struct SlimCaching;

/// One method's result on one instance.
pub type MethodRun = crate::problem::MethodRun<SlimCaching>;

impl Problem for SlimCaching {
    const TAG: &'static str = "slimcaching";
    const ABOUT: &'static str = "expert caching on cooperating edge servers (paper 000)";
    const SENSE: Sense = Sense::Maximize;
    const OBJECTIVE: &'static str = "latency_reduction_s";
    type Instance = Instance;
    type Model = LatencyModel;
    type Method = Method;
    type Solution = Placement;
    type Evaluation = Evaluation;
    /// The successive algorithms' optimum of each P3_n, seconds.
    type Detail = Option<Vec<f64>>;

    fn load(path: &Path) -> Result<Instance, Error> {
        formulations::slimcaching::load(path)
    }

    fn model(instance: &Instance) -> LatencyModel {
        LatencyModel::new(instance)
    }

    /// `lagrangian` proves an optimum only when its gap closes.
    const EXACT: &'static [Method] = &[Method::Milp, Method::Exhaustive, Method::Lagrangian];

    fn default_methods(instance: &Instance) -> Vec<Method> {
        let experts: usize = instance
            .models
            .iter()
            .map(|m| (m.layers * m.experts_per_layer) as usize)
            .sum();
        let pairs = instance.servers.len() * experts;
        let paper_sized = p1_variables(&LatencyModel::new(instance)) > PAPER_SIZED_VARIABLES;
        <Method as crate::named::Named>::ALL
            .iter()
            .copied()
            .filter(|m| *m != Method::Exhaustive || pairs <= EXHAUSTIVE_LIMIT)
            // Where the MILP proves its optimum the bound adds nothing.
            .filter(|m| *m != Method::Lagrangian || paper_sized)
            // moe-opt's repair, not the paper's: run on request (`--methods`).
            .filter(|m| *m != Method::SuccessiveGreedy)
            .collect()
    }

    /// The MILP solves P1 (18), warm-started from Alg. 3's placement when that algorithm
    /// applies.
    fn solve(
        model: &LatencyModel,
        method: Method,
        options: &RunOptions,
    ) -> Result<Solved<Self>, Error> {
        Ok(match method {
            Method::Milp => {
                let milp = SlimCachingMilp::checked_p1(model, options.solve.max_variables)?;
                let start = algorithms::successive_maxconv(model)
                    .ok()
                    .map(|s| s.placement);
                let solved = milp.solve(model, &options.solve, start.as_ref())?;
                Solved::exact(solved.placement, &solved.solution)
            }
            Method::Exhaustive => Solved::found(algorithms::exhaustive(model)?.0),
            Method::Lagrangian => lagrangian(model, options)?,
            Method::Greedy | Method::LazyGreedy => {
                let out = if method == Method::Greedy {
                    algorithms::greedy(model)
                } else {
                    algorithms::lazy_greedy(model)
                };
                Solved {
                    evaluations: Some(out.evaluations),
                    ..Solved::found(out.placement)
                }
            }
            Method::SuccessiveDp | Method::SuccessiveMaxconv => {
                let out = if method == Method::SuccessiveDp {
                    algorithms::successive_dp(model)?
                } else {
                    algorithms::successive_maxconv(model)?
                };
                Solved {
                    evaluations: Some(out.evaluations),
                    detail: Some(out.subproblem_values),
                    ..Solved::found(out.placement)
                }
            }
            Method::SuccessiveGreedy => {
                let out = algorithms::successive_greedy(model);
                Solved {
                    evaluations: Some(out.evaluations),
                    detail: Some(out.subproblem_values),
                    ..Solved::found(out.placement)
                }
            }
            Method::Lfu => Solved::found(algorithms::lfu(model)),
            Method::Random => Solved::found(algorithms::random(model, options.seed)),
            Method::UShaped => Solved::found(algorithms::u_shaped(model)),
        })
    }

    fn evaluate(
        model: &LatencyModel,
        placement: &Placement,
    ) -> Result<Evaluation, ValidationError> {
        Ok(model.evaluate(placement))
    }

    fn objective(evaluation: &Evaluation) -> f64 {
        evaluation.objective
    }

    /// P1 (18).
    fn milp(model: &LatencyModel) -> Result<Milp, Error> {
        Ok(SlimCachingMilp::checked_p1(model, formulations::milp::MAX_MILP_VARIABLES)?.milp)
    }
}

/// The `lagrangian` method (module doc): the placement first, then the bound, which stops once
/// within `--gap` of it.
fn lagrangian(model: &LatencyModel, options: &RunOptions) -> Result<Solved<SlimCaching>, Error> {
    let mut placement = algorithms::greedy(model).placement;
    if let Ok(alg3) = algorithms::successive_maxconv(model) {
        if model.objective(&alg3.placement) > model.objective(&placement) {
            placement = alg3.placement;
        }
    }
    let value = model.objective(&placement);
    let settings = LagrangianOptions {
        solve: options.solve.clone(),
        gap: options.solve.mip_rel_gap,
        incumbent: Some(value),
        ..LagrangianOptions::default()
    };
    let bar = crate::progress::Progress::new(settings.max_iterations as u64, "Lagrangian bound");
    let out = lagrangian_bound(model, &settings, |it| {
        bar.inc();
        bar.message(&format!(
            "Lagrangian bound {:.4} ms (F {:.4} ms)",
            it.best * 1e3,
            value * 1e3
        ));
    })?;
    drop(bar);
    // HiGHS's definition (`MilpSolution::gap`) in the MILP's unit (`OBJECTIVE_SCALE`), so that
    // the gap and the status mean the same as the `milp` method's.
    let (f, bound) = (value * OBJECTIVE_SCALE, out.bound * OBJECTIVE_SCALE);
    let gap = (bound - f).max(0.0) / f.abs().max(1.0);
    let status = match out.stop {
        _ if gap <= PROVED_GAP => MilpStatus::Optimal,
        Stop::TimeLimit => MilpStatus::TimeLimit,
        Stop::Converged | Stop::Gap | Stop::Iterations => MilpStatus::GapLimit,
    };
    let ended = match out.stop {
        Stop::Converged => "the bound converged",
        Stop::Gap => "the bound came within --gap of the placement",
        Stop::TimeLimit => "--time-limit ran out",
        Stop::Iterations => "it made the most evaluations allowed",
    };
    let exact = ExactReport {
        status,
        objective: Some(value),
        best_bound: Some(out.bound),
        gap: Some(gap),
        solve_time_s: options
            .solve
            .started
            .map_or(0.0, |t| t.elapsed().as_secs_f64()),
        note: Some(format!(
            "Lagrangian bound after {} evaluations, stopped because {ended}",
            out.iterations
        )),
    };
    Ok(Solved {
        exact: Some(exact),
        ..Solved::found(placement)
    })
}

/// Runs one method and evaluates its placement.
pub fn run(method: Method, model: &LatencyModel, options: &RunOptions) -> Result<MethodRun, Error> {
    crate::problem::run::<SlimCaching>(model, method, options)
}
