//! The exact method of one layer, and of an instance (its layers in parallel).
//!
//! A layer: the heuristics' best plan (local search from the greedy and from EPLB's plans that
//! respect the options) is the incumbent U; the combinatorial lower bound L
//! ([`formulations::balance::bounds`]) is proved. When U <= L the plan is optimal and no MILP is
//! needed; otherwise HiGHS solves the layer's MILP ([`formulations::balance::milp`]) started
//! from the plan, with T >= L and the count ranges U implies, under the time limit. The status
//! is HiGHS's; a layer proved by the bound alone is `optimal` with the bound as its best bound.
//!
//! Layers share nothing: an instance's layers are solved in parallel (rayon, one HiGHS thread
//! each); each layer's time limit counts from the start of its own solve. The instance's
//! incumbent and bound are the sums of the layers'; it is optimal only when every layer is.

use formulations::balance::evaluate::{check_layer, max_load};
use formulations::balance::milp::{LayerModel, LayerOptions};
use formulations::balance::{bounds, Instance, Shape};
use formulations::milp::{MilpStatus, SolveOptions, PROVED_GAP};
use formulations::Error;
use rayon::prelude::*;
use serde::Serialize;

use super::algorithms::{greedy, local_search};
use crate::eplb::rebalance_experts;

/// One layer's exact solve.
#[derive(Debug, Clone, Serialize)]
pub struct LayerSolve {
    /// The layer.
    pub layer: usize,
    /// How it ended.
    pub status: MilpStatus,
    /// The incumbent's busiest GPU load.
    pub objective: f64,
    /// The proved lower bound on the optimum.
    pub bound: f64,
    /// (objective - bound) / objective (0 for a layer without load).
    pub gap: f64,
    /// The incumbent before the MILP (the heuristics' best).
    pub heuristic: f64,
    /// The combinatorial lower bound.
    pub combinatorial_bound: f64,
    /// Whether HiGHS ran (false: the bound proved the heuristic's plan).
    pub milp: bool,
    /// Seconds.
    pub time_s: f64,
    /// What limited the solve, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The plan (`phy2log`).
    #[serde(skip)]
    pub plan: Vec<usize>,
}

/// EPLB's plan of one layer under `groups` and `nodes` (its policy choice), if EPLB accepts
/// the arguments.
pub fn eplb_layer(
    shape: &Shape,
    w: &[f64],
    groups: usize,
    nodes: usize,
) -> Result<Vec<usize>, String> {
    rebalance_experts(&[w.to_vec()], shape.slots, groups, nodes, shape.gpus)
        .map(|p| p.physical_to_logical.into_iter().next().expect("one layer"))
        .map_err(|e| format!("EPLB refuses the arguments: {e}"))
}

/// The heuristics' best feasible plan of a layer: local search from the greedy plan and from
/// EPLB's hierarchical and global plans where they respect the options.
pub fn best_heuristic(shape: &Shape, w: &[f64], groups: usize, nodes: usize) -> Option<Vec<usize>> {
    let mut starts: Vec<Vec<usize>> = greedy(shape, w).into_iter().collect();
    for (g, n) in [(groups, nodes), (1, 1)] {
        if let Ok(p) = eplb_layer(shape, w, g, n) {
            if check_layer(shape, &p).is_ok() {
                starts.push(p);
            }
        }
    }
    starts
        .into_iter()
        .map(|p| local_search(shape, w, &p))
        .min_by(|a, b| max_load(shape, w, a).total_cmp(&max_load(shape, w, b)))
}

/// The exact solve of layer `l` (module doc).
pub fn solve_layer(
    instance: &Instance,
    l: usize,
    options: &SolveOptions,
) -> Result<LayerSolve, Error> {
    let options = options.started_now();
    let began = options.started.expect("started");
    let shape = instance.shape();
    let w = &instance.loads[l];
    let plan =
        best_heuristic(&shape, w, instance.num_groups, instance.num_nodes).ok_or_else(|| {
            Error::Solver(format!(
                "balance layer {l}: no heuristic found a feasible plan to start from"
            ))
        })?;
    let upper = max_load(&shape, w, &plan);
    let lower = bounds::lower_bound(&shape, w).min(upper);
    let done = |status, objective: f64, bound: f64, plan: Vec<usize>, milp, note| {
        let gap = if objective > 0.0 {
            ((objective - bound) / objective).max(0.0)
        } else {
            0.0
        };
        LayerSolve {
            layer: l,
            status,
            objective,
            bound,
            gap,
            heuristic: upper,
            combinatorial_bound: lower,
            milp,
            time_s: began.elapsed().as_secs_f64(),
            note,
            plan,
        }
    };
    if upper <= lower * (1.0 + PROVED_GAP) {
        return Ok(done(MilpStatus::Optimal, upper, lower, plan, false, None));
    }
    let model = match LayerModel::build(
        &shape,
        w,
        &LayerOptions {
            lower,
            upper: Some(upper),
            budget: None,
        },
        format!("balance layer {l}"),
        "",
    ) {
        Ok(model) => model,
        Err(Error::TooLarge(why)) => {
            let note = format!("no MILP ({why}): the heuristic's plan and the bound");
            return Ok(done(
                MilpStatus::GapLimit,
                upper,
                lower,
                plan,
                false,
                Some(note),
            ));
        }
        Err(e) => return Err(e),
    };
    let start = model.start(w, &plan);
    let solved = model.milp.solve(&options, start.as_deref())?;
    let found = solved
        .values
        .as_deref()
        .map(|v| model.decode(v))
        .filter(|p| check_layer(&shape, p).is_ok());
    let (best, objective) = match found {
        Some(p) if max_load(&shape, w, &p) < upper => {
            let v = max_load(&shape, w, &p);
            (p, v)
        }
        _ => (plan, upper),
    };
    let bound = solved
        .best_bound
        .map_or(lower, |b| (b / model.scale).max(lower))
        .min(objective);
    let status = match solved.status {
        MilpStatus::Optimal | MilpStatus::GapLimit if objective <= bound * (1.0 + PROVED_GAP) => {
            MilpStatus::Optimal
        }
        MilpStatus::Optimal => MilpStatus::GapLimit,
        MilpStatus::Infeasible | MilpStatus::Unbounded => {
            return Err(Error::Solver(format!(
                "balance layer {l}: HiGHS reports the model {}, but the start plan is feasible",
                solved.status
            )))
        }
        other => other,
    };
    Ok(done(
        status,
        objective,
        bound,
        best,
        true,
        solved.note.clone(),
    ))
}

/// Every layer's exact solve, in parallel, in layer order.
pub fn solve_all(instance: &Instance, options: &SolveOptions) -> Result<Vec<LayerSolve>, Error> {
    (0..instance.loads.len())
        .into_par_iter()
        .map(|l| solve_layer(instance, l, options))
        .collect()
}
