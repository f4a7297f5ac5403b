//! ZipMoE (paper 003), one layer's reconstruction schedule, as a [`Problem`]: the exact MILP,
//! exhaustive search, branch and bound (moe-opt's, for layers beyond the MILP), Alg. 1 (both readings of its candidate list) and the baselines. The one
//! evaluator is the simulator (`formulations::zipmoe::Simulator`): a method's priority order
//! becomes a schedule there, so the solution is the simulated schedule and evaluating it reads
//! its makespan.

use std::path::Path;

use formulations::milp::Milp;
use formulations::zipmoe::{Instance, Schedule, Simulator, ZipMoeMilp};
use formulations::{Error, ValidationError};

use super::algorithms::{self, Candidates};
pub use crate::problem::{ExactReport, Reference, RunOptions};
use crate::problem::{Problem, Sense, Solved};

crate::named! {
    /// A way to schedule a layer.
    pub enum Method: "method" {
        /// exact MILP (continuous-time, disjunctive), HiGHS
        Milp,
        /// exhaustive search over I/O and decompression orders
        Exhaustive,
        /// branch and bound over the same orders, bounded by the resource bound (whole layers)
        BranchAndBound,
        /// Alg. 1 (App. A), candidates as in its line 8
        CacheAffinity,
        /// Alg. 1, only type-II tasks inserted (Sec. 3.3's text)
        CacheAffinityText,
        /// baseline: tasks in gate order
        Fifo,
        /// baseline: type-I tasks first
        Type1First,
        /// baseline: seeded random order
        Random,
    }
}

/// ZipMoE: makespan scheduling of a layer's expert reconstruction on a device (paper 003).
pub struct ZipMoe;

/// One method's result on one layer.
pub type MethodRun = crate::problem::MethodRun<ZipMoe>;

impl Problem for ZipMoe {
    const TAG: &'static str = "zipmoe";
    const ABOUT: &'static str =
        "makespan scheduling of a layer's compressed-expert reconstruction (paper 003)";
    const SENSE: Sense = Sense::Minimize;
    const OBJECTIVE: &'static str = "makespan_s";
    type Instance = Instance;
    type Model = Instance;
    type Method = Method;
    type Solution = Schedule;
    type Evaluation = Schedule;
    /// Blocks Alg. 1 built.
    type Detail = Option<usize>;

    fn load(path: &Path) -> Result<Instance, Error> {
        formulations::zipmoe::load(path)
    }

    fn model(instance: &Instance) -> Instance {
        instance.clone()
    }

    const EXACT: &'static [Method] = &[Method::Milp, Method::Exhaustive, Method::BranchAndBound];

    fn solve(
        instance: &Instance,
        method: Method,
        options: &RunOptions,
    ) -> Result<Solved<Self>, Error> {
        let sim = Simulator::new(instance);
        Ok(match method {
            Method::Milp => {
                let solved = ZipMoeMilp::build(instance)?.solve(instance, &options.solve)?;
                Solved::exact(solved.schedule, &solved.solution)
            }
            Method::Exhaustive => Solved::found(algorithms::exhaustive(instance)?),
            Method::BranchAndBound => {
                let solved = algorithms::branch_and_bound(instance, &options.solve)?;
                let (lower, best) = (solved.lower_s, solved.schedule.makespan_s);
                Solved {
                    exact: Some(ExactReport {
                        status: solved.status,
                        objective: Some(best),
                        best_bound: Some(lower),
                        gap: Some(if best > 0.0 {
                            (best - lower) / best
                        } else {
                            0.0
                        }),
                        solve_time_s: options
                            .solve
                            .started
                            .map_or(0.0, |s| s.elapsed().as_secs_f64()),
                        note: None,
                    }),
                    ..Solved::found(solved.schedule)
                }
            }
            Method::CacheAffinity | Method::CacheAffinityText => {
                let candidates = if method == Method::CacheAffinity {
                    Candidates::Algorithm1
                } else {
                    Candidates::TypeIIOnly
                };
                let out = algorithms::cache_affinity(instance, candidates);
                Solved {
                    detail: Some(out.blocks.len()),
                    ..Solved::found(sim.run(&out.priority)?)
                }
            }
            Method::Fifo => Solved::found(sim.run(&algorithms::fifo(instance))?),
            Method::Type1First => Solved::found(sim.run(&algorithms::type1_first(instance))?),
            Method::Random => {
                Solved::found(sim.run(&algorithms::random_order(instance, options.seed))?)
            }
        })
    }

    /// The schedule is the simulator's already (module doc).
    fn evaluate(_: &Instance, schedule: &Schedule) -> Result<Schedule, ValidationError> {
        Ok(schedule.clone())
    }

    fn objective(schedule: &Schedule) -> f64 {
        schedule.makespan_s
    }

    /// The disjunctive makespan MILP with its objective in milliseconds (`makespan_ms`, the
    /// reports' `makespan_s` x 1000, as SlimCaching's F): solved, the objective is in the
    /// rows' unit, H / 1000 (the LP's first line states it), which varies with the instance.
    fn milp(instance: &Instance) -> Result<Milp, Error> {
        let built = ZipMoeMilp::build(instance)?;
        let mut milp = built.milp;
        milp.scale_objective(1e3 / built.scale);
        milp.set_objective_name("makespan_ms");
        Ok(milp)
    }
}

/// Runs one method and evaluates its schedule.
pub fn run(method: Method, instance: &Instance, options: &RunOptions) -> Result<MethodRun, Error> {
    crate::problem::run::<ZipMoe>(instance, method, options)
}
