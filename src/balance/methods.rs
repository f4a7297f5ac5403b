//! Balance as a [`Problem`]: EPLB's load balancing solved exactly ([`super::exact`]),
//! by exhaustive search, by EPLB itself (the port in [`crate::eplb`], unchanged) and by the
//! greedy and local search of [`super::algorithms`]. Every method returns a plan for every
//! layer, or none with the reason; the one evaluator (`formulations::balance::evaluate`)
//! judges every plan.
//!
//! EPLB and the options: EPLB knows neither option, so its plan is checked against them. A plan
//! that breaks one (two replicas of an expert on a GPU under `one_replica_per_gpu`; groups split
//! over nodes under `hierarchical`, which the global policy ignores) is not returned: the method
//! reports none, naming the first layer and the rule it breaks (no silent repair; the local
//! search, which starts from EPLB's plans where they are feasible, is the repaired reading).

use std::path::Path;

use formulations::balance::evaluate::check_layer;
use formulations::balance::milp::instance_milp;
use formulations::balance::{evaluate, Evaluation, Instance, Plan};
use formulations::milp::Milp;
use formulations::{Error, ValidationError};

use super::algorithms;
use super::exact::{self, eplb_layer, LayerSolve};
pub use crate::problem::{ExactReport, Reference, RunOptions};
use crate::problem::{Problem, Sense, Solved};

crate::named! {
    /// A way to balance the layers.
    pub enum Method: "method" {
        /// exact: combinatorial bounds, then HiGHS's MILP (counts by binaries, copies per count) from the best heuristic plan
        Milp,
        /// exhaustive search over every GPU's content (tiny layers)
        Exhaustive,
        /// EPLB's rebalance_experts, its own policy choice (hierarchical when groups % nodes == 0)
        Eplb,
        /// EPLB's global policy (one group, one node)
        EplbGlobal,
        /// greedy: replicas by largest load per replica, packed heaviest first onto the least loaded GPU
        Greedy,
        /// local search (replica swaps, slot hand-overs) from the greedy and EPLB plans and from greedy plans with the two heaviest experts' counts varied, annealed at 3+ slots per GPU
        LocalSearch,
    }
}

/// Balance: EPLB's problem, expert replication and placement on GPUs.
pub struct Balance;

/// One method's result.
pub type MethodRun = crate::problem::MethodRun<Balance>;

/// Each layer's plan by a per-layer function, or none with the first layer's reason.
fn per_layer(
    instance: &Instance,
    f: impl Fn(usize, &[f64]) -> Result<Vec<usize>, String>,
) -> Solved<Balance> {
    let mut phy2log = Vec::with_capacity(instance.loads.len());
    for (l, w) in instance.loads.iter().enumerate() {
        match f(l, w) {
            Ok(p) => phy2log.push(p),
            Err(why) => return Solved::none(format!("layer {l}: {why}")),
        }
    }
    Solved::found(Plan { phy2log })
}

/// A plan of EPLB's, if it respects the instance's options (module doc).
fn eplb_checked(
    instance: &Instance,
    w: &[f64],
    groups: usize,
    nodes: usize,
) -> Result<Vec<usize>, String> {
    let shape = instance.shape();
    let plan = eplb_layer(&shape, w, groups, nodes)?;
    check_layer(&shape, &plan)
        .map(|()| plan)
        .map_err(|(_, why)| format!("EPLB's plan breaks an option: {why}"))
}

impl Problem for Balance {
    const TAG: &'static str = "balance";
    const ABOUT: &'static str =
        "EPLB's expert replication and placement on GPUs, solved exactly (DeepSeek's EPLB)";
    const SENSE: Sense = Sense::Minimize;
    const OBJECTIVE: &'static str = "sum_max_gpu_load";
    type Instance = Instance;
    type Model = Instance;
    type Method = Method;
    type Solution = Plan;
    type Evaluation = Evaluation;
    /// The exact method's layers.
    type Detail = Vec<LayerSolve>;

    fn load(path: &Path) -> Result<Instance, Error> {
        formulations::balance::load(path)
    }

    fn model(instance: &Instance) -> Instance {
        instance.clone()
    }

    const EXACT: &'static [Method] = &[Method::Milp, Method::Exhaustive];

    fn solve(
        instance: &Instance,
        method: Method,
        options: &RunOptions,
    ) -> Result<Solved<Self>, Error> {
        let shape = instance.shape();
        Ok(match method {
            Method::Milp => {
                let layers = exact::solve_all(instance, &options.solve)?;
                let report = exact::total_report(
                    &layers,
                    options
                        .solve
                        .started
                        .map_or(0.0, |s| s.elapsed().as_secs_f64()),
                );
                let plan = Plan {
                    phy2log: layers.iter().map(|l| l.plan.clone()).collect(),
                };
                Solved {
                    exact: Some(report),
                    detail: layers,
                    ..Solved::found(plan)
                }
            }
            Method::Exhaustive => {
                let mut phy2log = Vec::new();
                for w in &instance.loads {
                    phy2log.push(algorithms::exhaustive(&shape, w)?);
                }
                Solved::found(Plan { phy2log })
            }
            Method::Eplb => per_layer(instance, |_, w| {
                eplb_checked(instance, w, instance.num_groups, instance.num_nodes)
            }),
            Method::EplbGlobal => per_layer(instance, |_, w| eplb_checked(instance, w, 1, 1)),
            Method::Greedy => per_layer(instance, |_, w| {
                algorithms::greedy(&shape, w)
                    .ok_or_else(|| "the greedy packing found no GPU for a replica".to_string())
            }),
            Method::LocalSearch => per_layer(instance, |_, w| {
                exact::best_heuristic(&shape, w, instance.num_groups, instance.num_nodes)
                    .map(|plan| exact::annealed(&shape, w, plan))
                    .ok_or_else(|| "no start plan respects the options".to_string())
            }),
        })
    }

    fn evaluate(instance: &Instance, plan: &Plan) -> Result<Evaluation, ValidationError> {
        evaluate(instance, plan)
    }

    fn objective(evaluation: &Evaluation) -> f64 {
        evaluation.sum_max_load
    }

    /// Every layer's MILP side by side, the objective their sum (`formulations::balance::milp`).
    fn milp(instance: &Instance) -> Result<Milp, Error> {
        instance_milp(instance)
    }
}
