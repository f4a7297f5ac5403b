//! Running any method on a ZipMoE layer: the exact MILP, exhaustive search, Alg. 1 (both
//! readings of its candidate list) and the baselines, each evaluated by the one evaluator
//! (`formulations::zipmoe::Simulator`).

use std::str::FromStr;
use std::time::Instant;

use formulations::milp::MilpStatus;
use formulations::zipmoe::{Instance, Schedule, Simulator, ZipMoeMilp};
use formulations::Error;
use serde::Serialize;

use super::algorithms::{self, Candidates};
pub use crate::report::RunOptions;

/// A way to schedule a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Exact MILP (continuous-time, disjunctive), HiGHS.
    Milp,
    /// Exhaustive search over I/O and decompression orders (tiny layers only).
    Exhaustive,
    /// Alg. 1 (App. A) with U = (sigma_II, sigma_I) as in its line 8.
    CacheAffinity,
    /// Alg. 1 with only type-II tasks inserted into a block (Sec. 3.3's text).
    CacheAffinityText,
    /// Baseline: tasks in gate order.
    Fifo,
    /// Baseline: type-I tasks first.
    Type1First,
    /// Baseline: seeded random order.
    Random,
}

impl Method {
    /// Every method, exact ones first.
    pub const ALL: [Method; 7] = [
        Method::Milp,
        Method::Exhaustive,
        Method::CacheAffinity,
        Method::CacheAffinityText,
        Method::Fifo,
        Method::Type1First,
        Method::Random,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Milp => "milp",
            Method::Exhaustive => "exhaustive",
            Method::CacheAffinity => "cache-affinity",
            Method::CacheAffinityText => "cache-affinity-text",
            Method::Fifo => "fifo",
            Method::Type1First => "type1-first",
            Method::Random => "random",
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

/// The MILP's own account of a solve, seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExactReport {
    /// How the solve ended.
    pub status: MilpStatus,
    /// The incumbent's makespan as the MILP computes it.
    pub objective_s: Option<f64>,
    /// Best lower bound on the optimal makespan.
    pub best_bound_s: Option<f64>,
    /// Relative gap between them.
    pub gap: Option<f64>,
    /// Seconds in HiGHS.
    pub solve_time_s: f64,
}

/// One method's result on one layer.
#[derive(Debug, Clone)]
pub struct MethodRun {
    /// The method.
    pub method: Method,
    /// The evaluator's schedule (absent when the MILP found no incumbent).
    pub schedule: Option<Schedule>,
    /// Wall-clock seconds of the method.
    pub runtime_s: f64,
    /// Blocks built (Alg. 1).
    pub blocks: Option<usize>,
    /// For the MILP: status, bound and gap.
    pub exact: Option<ExactReport>,
}

impl MethodRun {
    /// The makespan, if there is a schedule.
    pub fn makespan(&self) -> Option<f64> {
        self.schedule.as_ref().map(|s| s.makespan_s)
    }

    /// True when the makespan is a proved optimum (exhaustive search, or MILP optimal). For
    /// the MILP the proved value is the evaluator's makespan of the decoded schedule, which
    /// equals the MILP optimum up to HiGHS's tolerances.
    pub fn is_proved_optimal(&self) -> bool {
        match self.method {
            Method::Exhaustive => self.schedule.is_some(),
            Method::Milp => {
                self.schedule.is_some()
                    && self
                        .exact
                        .as_ref()
                        .is_some_and(|e| e.status == MilpStatus::Optimal)
            }
            _ => false,
        }
    }
}

/// Runs one method and evaluates its schedule.
pub fn run(method: Method, instance: &Instance, options: &RunOptions) -> Result<MethodRun, Error> {
    let began = Instant::now();
    let sim = Simulator::new(instance);
    let mut blocks = None;
    let mut exact = None;
    let schedule = match method {
        Method::Milp => {
            let solved = ZipMoeMilp::build(instance)?.solve(instance, &options.solve)?;
            let s = &solved.solution;
            exact = Some(ExactReport {
                status: s.status,
                objective_s: s.objective,
                best_bound_s: s.best_bound,
                gap: s.gap,
                solve_time_s: s.solve_time_s,
            });
            solved.schedule
        }
        Method::Exhaustive => Some(algorithms::exhaustive(instance)?),
        Method::CacheAffinity | Method::CacheAffinityText => {
            let candidates = if method == Method::CacheAffinity {
                Candidates::Algorithm1
            } else {
                Candidates::TypeIIOnly
            };
            let out = algorithms::cache_affinity(instance, candidates);
            blocks = Some(out.blocks.len());
            Some(sim.run(&out.priority)?)
        }
        Method::Fifo => Some(sim.run(&algorithms::fifo(instance))?),
        Method::Type1First => Some(sim.run(&algorithms::type1_first(instance))?),
        Method::Random => Some(sim.run(&algorithms::random_order(instance, options.seed))?),
    };
    Ok(MethodRun {
        method,
        schedule,
        runtime_s: began.elapsed().as_secs_f64(),
        blocks,
        exact,
    })
}

/// What a method's makespan is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Reference {
    /// A proved optimum (exhaustive search or MILP with status optimal), seconds.
    Optimum(f64),
    /// Only a lower bound on the optimum (MILP stopped early): ratios are upper bounds.
    Bound(f64),
    /// Nothing to compare with.
    None,
}

impl Reference {
    /// The first proved optimum among the runs, else the largest MILP bound.
    pub fn from_runs(runs: &[MethodRun]) -> Self {
        if let Some(opt) = runs
            .iter()
            .find(|r| r.is_proved_optimal())
            .and_then(MethodRun::makespan)
        {
            return Reference::Optimum(opt);
        }
        runs.iter()
            .filter_map(|r| r.exact.as_ref()?.best_bound_s)
            .max_by(f64::total_cmp)
            .map_or(Reference::None, Reference::Bound)
    }

    /// makespan / reference, when the reference is positive.
    pub fn ratio(self, makespan: f64) -> Option<f64> {
        match self {
            Reference::Optimum(v) | Reference::Bound(v) if v > 0.0 => Some(makespan / v),
            _ => None,
        }
    }
}
