//! Running any method on an instance: the exact MILP, exhaustive search, the paper's
//! algorithms and its baselines, each followed by the one evaluator
//! (`formulations::slimcaching::LatencyModel::evaluate`).
//!
//! The exact method solves P1 (18) with HiGHS, warm-started from Alg. 3's placement when that
//! algorithm applies (a feasible MIP start only speeds the search up; the status, bound and gap
//! are HiGHS's). Its placement is decoded and re-evaluated like every other method's.

use std::str::FromStr;
use std::time::Instant;

use formulations::milp::MilpStatus;
use formulations::slimcaching::{Evaluation, LatencyModel, Placement, SlimCachingMilp};
use formulations::Error;
use serde::Serialize;

use super::algorithms;

/// A way to choose a placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Exact MILP of P1 (18) with HiGHS.
    Milp,
    /// Exhaustive search over all feasible placements (tiny instances only).
    Exhaustive,
    /// Alg. 1: greedy on F(i|S)/b_i.
    Greedy,
    /// Alg. 1 with lazy (Minoux) evaluations.
    LazyGreedy,
    /// Alg. 2: successive greedy decomposition with the knapsack DP.
    SuccessiveDp,
    /// Alg. 3: successive decomposition with max-convolution over size classes.
    SuccessiveMaxconv,
    /// Baseline: each server caches its most frequently requested experts.
    Lfu,
    /// Baseline: seeded random experts until full.
    Random,
    /// Baseline: whole MoE layers (U-shaped split inference).
    UShaped,
}

impl Method {
    /// Every method, exact ones first.
    pub const ALL: [Method; 9] = [
        Method::Milp,
        Method::Exhaustive,
        Method::Greedy,
        Method::LazyGreedy,
        Method::SuccessiveDp,
        Method::SuccessiveMaxconv,
        Method::Lfu,
        Method::Random,
        Method::UShaped,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Milp => "milp",
            Method::Exhaustive => "exhaustive",
            Method::Greedy => "greedy",
            Method::LazyGreedy => "lazy-greedy",
            Method::SuccessiveDp => "successive-dp",
            Method::SuccessiveMaxconv => "successive-maxconv",
            Method::Lfu => "lfu",
            Method::Random => "random",
            Method::UShaped => "u-shaped",
        }
    }

    /// Where the method comes from.
    pub fn description(self) -> &'static str {
        match self {
            Method::Milp => "exact MILP of P1 (18), HiGHS",
            Method::Exhaustive => "exhaustive search",
            Method::Greedy => "Alg. 1 greedy",
            Method::LazyGreedy => "Alg. 1, lazy evaluations",
            Method::SuccessiveDp => "Alg. 2 successive DP",
            Method::SuccessiveMaxconv => "Alg. 3 max-convolution",
            Method::Lfu => "baseline LFU",
            Method::Random => "baseline Random",
            Method::UShaped => "baseline U-shaped (layer)",
        }
    }

    /// True for methods whose answer is a proved optimum when they finish.
    pub fn is_exact(self) -> bool {
        matches!(self, Method::Milp | Method::Exhaustive)
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
                format!(
                    "unknown method `{s}`; expected one of: {}",
                    names.join(", ")
                )
            })
    }
}

pub use crate::report::RunOptions;

/// The MILP's own account of a solve, in F's units (seconds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExactReport {
    /// How the solve ended.
    pub status: MilpStatus,
    /// The incumbent's objective as the MILP computes it.
    pub objective_s: Option<f64>,
    /// Best bound on the optimum of F.
    pub best_bound_s: Option<f64>,
    /// Relative gap between them.
    pub gap: Option<f64>,
    /// Seconds in HiGHS.
    pub solve_time_s: f64,
}

/// One method's result on one instance.
#[derive(Debug, Clone)]
pub struct MethodRun {
    /// The method.
    pub method: Method,
    /// Its placement (absent when an exact solve found no incumbent).
    pub placement: Option<Placement>,
    /// The evaluator's account of the placement.
    pub evaluation: Option<Evaluation>,
    /// Wall-clock seconds of the method (MILP: building and solving).
    pub runtime_s: f64,
    /// Marginal-gain evaluations, for the greedy and successive algorithms.
    pub evaluations: Option<u64>,
    /// For the successive algorithms: the optimum of each P3_n.
    pub subproblem_values: Option<Vec<f64>>,
    /// For the MILP: status, bound and gap.
    pub exact: Option<ExactReport>,
}

impl MethodRun {
    /// F of the placement, if there is one.
    pub fn objective(&self) -> Option<f64> {
        self.evaluation.as_ref().map(|e| e.objective)
    }

    /// True when the objective is a proved optimum (exhaustive search, or MILP with status
    /// optimal).
    pub fn is_proved_optimal(&self) -> bool {
        match self.method {
            Method::Exhaustive => self.placement.is_some(),
            Method::Milp => self
                .exact
                .as_ref()
                .is_some_and(|e| e.status == MilpStatus::Optimal),
            _ => false,
        }
    }
}

/// Runs one method and evaluates its placement.
pub fn run(method: Method, model: &LatencyModel, options: &RunOptions) -> Result<MethodRun, Error> {
    let began = Instant::now();
    let mut evaluations = None;
    let mut subproblem_values = None;
    let mut exact = None;
    let placement = match method {
        Method::Milp => {
            let start = algorithms::successive_maxconv(model)
                .ok()
                .map(|s| s.placement);
            let milp = SlimCachingMilp::p1(model);
            let solved = milp.solve(model, &options.solve, start.as_ref())?;
            let s = &solved.solution;
            exact = Some(ExactReport {
                status: s.status,
                objective_s: s.objective,
                best_bound_s: s.best_bound,
                gap: s.gap,
                solve_time_s: s.solve_time_s,
            });
            solved.placement
        }
        Method::Exhaustive => Some(algorithms::exhaustive(model)?.0),
        Method::Greedy | Method::LazyGreedy => {
            let out = if method == Method::Greedy {
                algorithms::greedy(model)
            } else {
                algorithms::lazy_greedy(model)
            };
            evaluations = Some(out.evaluations);
            Some(out.placement)
        }
        Method::SuccessiveDp | Method::SuccessiveMaxconv => {
            let out = if method == Method::SuccessiveDp {
                algorithms::successive_dp(model)?
            } else {
                algorithms::successive_maxconv(model)?
            };
            evaluations = Some(out.evaluations);
            subproblem_values = Some(out.subproblem_values);
            Some(out.placement)
        }
        Method::Lfu => Some(algorithms::lfu(model)),
        Method::Random => Some(algorithms::random(model, options.seed)),
        Method::UShaped => Some(algorithms::u_shaped(model)),
    };
    let runtime_s = began.elapsed().as_secs_f64();
    let evaluation = placement.as_ref().map(|p| model.evaluate(p));
    Ok(MethodRun {
        method,
        placement,
        evaluation,
        runtime_s,
        evaluations,
        subproblem_values,
        exact,
    })
}

/// What a method's F is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Reference {
    /// A proved optimum (exhaustive search or MILP with status optimal).
    Optimum(f64),
    /// Only an upper bound on the optimum (MILP stopped early): ratios are lower bounds.
    Bound(f64),
    /// Nothing to compare with.
    None,
}

impl Reference {
    /// The reference from a set of runs: the first proved optimum, else the tightest bound.
    pub fn from_runs(runs: &[MethodRun]) -> Self {
        if let Some(opt) = runs
            .iter()
            .find(|r| r.is_proved_optimal())
            .and_then(MethodRun::objective)
        {
            return Reference::Optimum(opt);
        }
        runs.iter()
            .filter_map(|r| r.exact.as_ref()?.best_bound_s)
            .min_by(f64::total_cmp)
            .map_or(Reference::None, Reference::Bound)
    }

    /// F / reference, when the reference is positive.
    pub fn ratio(self, objective: f64) -> Option<f64> {
        match self {
            Reference::Optimum(v) | Reference::Bound(v) if v > 0.0 => Some(objective / v),
            _ => None,
        }
    }
}
