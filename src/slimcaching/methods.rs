//! SlimCaching (paper 000) as a [`Problem`]: its methods (the exact MILP, exhaustive search,
//! the paper's algorithms and its baselines), each followed by the one evaluator
//! (`formulations::slimcaching::LatencyModel::evaluate`) through [`crate::problem::run`].
//!
//! The exact method solves P1 (18) with HiGHS, warm-started from Alg. 3's placement when that
//! algorithm applies (a feasible MIP start only speeds the search up; the status, bound and gap
//! are HiGHS's). Its placement is decoded and re-evaluated like every other method's.

use std::path::Path;

use formulations::milp::Milp;
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

    const EXACT: &'static [Method] = &[Method::Milp, Method::Exhaustive];

    fn default_methods(instance: &Instance) -> Vec<Method> {
        let experts: usize = instance
            .models
            .iter()
            .map(|m| (m.layers * m.experts_per_layer) as usize)
            .sum();
        let pairs = instance.servers.len() * experts;
        <Method as crate::named::Named>::ALL
            .iter()
            .copied()
            .filter(|m| *m != Method::Exhaustive || pairs <= EXHAUSTIVE_LIMIT)
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

/// Runs one method and evaluates its placement.
pub fn run(method: Method, model: &LatencyModel, options: &RunOptions) -> Result<MethodRun, Error> {
    crate::problem::run::<SlimCaching>(model, method, options)
}
