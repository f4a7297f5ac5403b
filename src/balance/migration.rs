//! `moe-opt migration-front`: the exact trade-off, per layer, between the busiest GPU's load and
//! the replicas copied to GPUs from the instance's `current` placement (EPLB ignores what it
//! moves; a serving engine pays for every expert weight it copies).
//!
//! For a move budget B, OPT(B) is the least busiest-GPU load over the plans that copy at most B
//! replicas ([`formulations::balance::evaluate::moved`]: per GPU, the replicas it holds that it
//! did not hold before). OPT(0) is the current plan's load (a plan within budget 0 holds the same
//! replicas on every GPU); OPT is non-increasing in B and reaches the unconstrained optimum once B
//! is at least the moves of an optimal plan. The front is walked B = 1, 2, ...: each budget is
//! the layer's MILP with the budget rows ([`formulations::balance::milp`]), started from the
//! previous budget's plan (feasible: it moves at most B - 1), its count ranges from that plan's
//! load and its lower bound the unconstrained one. The walk stops where the load meets the
//! unconstrained lower bound (nothing more to gain), at the moves of the unconstrained solve's
//! plan (which reaches its load), or at `--max-budget`. A point is proved when its MILP is; a
//! stopped one reports its bound, so the front is bracketed point by point.
//!
//! EPLB's plan (its own policy under the instance's groups and nodes) is placed beside the front
//! with its load and its moves as engines apply it (slot for slot, GPUs as EPLB numbers them),
//! and the least budget whose load is at most EPLB's.

use formulations::balance::evaluate::{check_layer, max_load, moved};
use formulations::balance::milp::{LayerModel, LayerOptions};
use formulations::balance::{Instance, Shape};
use formulations::milp::{MilpStatus, SolveOptions, PROVED_GAP};
use formulations::Error;
use rayon::prelude::*;
use serde::Serialize;

use super::commands::InstanceInfo;
use super::exact::{eplb_layer, solve_from, solve_layer};
use crate::report::VERSION;

/// One budget of one layer.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The layer.
    pub layer: usize,
    /// Replicas the plan may copy.
    pub budget: usize,
    /// The best plan's busiest GPU load within the budget.
    pub max_load: f64,
    /// The proved lower bound on OPT(budget).
    pub bound: f64,
    /// Replicas the best plan copies (at most the budget).
    pub moved: usize,
    /// mean / busiest of the best plan.
    pub balancedness: f64,
    /// How the budget's solve ended (`optimal`: proved).
    pub status: MilpStatus,
}

/// One layer's front and EPLB beside it.
#[derive(Debug, Clone, Serialize)]
pub struct LayerFront {
    /// The layer.
    pub layer: usize,
    /// The unconstrained optimum's busiest GPU load (the best plan found) and its bound.
    pub optimum: f64,
    /// The proved lower bound on the unconstrained optimum.
    pub optimum_bound: f64,
    /// The points, budget 0 first; only budgets whose load is below the previous one's.
    pub front: Vec<Point>,
    /// EPLB's busiest GPU load (null when EPLB refuses the arguments or its plan breaks an
    /// option).
    pub eplb_max_load: Option<f64>,
    /// Replicas EPLB's plan copies.
    pub eplb_moved: Option<usize>,
    /// The least budget on the front whose load is at most EPLB's.
    pub budget_for_eplb_load: Option<usize>,
}

/// Output of `migration-front`.
#[derive(Debug, Clone, Serialize)]
pub struct MigrationReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The instance.
    pub instance: InstanceInfo,
    /// Time limit per layer and budget, seconds (null: none).
    pub time_limit_s: Option<f64>,
    /// The largest budget tried (null: none given).
    pub max_budget: Option<usize>,
    /// Per layer.
    pub layers: Vec<LayerFront>,
}

/// The front of every layer (module doc), layers in parallel.
pub fn migration_front(
    instance: &Instance,
    max_budget: Option<usize>,
    options: &SolveOptions,
) -> Result<MigrationReport, Error> {
    let current = instance.current.as_ref().ok_or_else(|| Error::Invalid {
        path: "<instance>".into(),
        field: "current".into(),
        reason: "migration-front needs the current placement (one phy2log per layer)".into(),
    })?;
    let progress = crate::progress::Progress::new(instance.loads.len() as u64, "layers");
    let layers = (0..instance.loads.len())
        .into_par_iter()
        .map(|l| {
            let front = layer_front(instance, l, &current[l], max_budget, options);
            progress.inc();
            front
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(MigrationReport {
        moe_opt_version: VERSION,
        instance: InstanceInfo::new(instance),
        time_limit_s: options.time_limit_s,
        max_budget,
        layers,
    })
}

/// OPT(budget) from `start` (a plan within the budget), bracketed: (plan, load, bound, status).
fn solve_budget(
    shape: &Shape,
    w: &[f64],
    current: &[usize],
    budget: usize,
    start: &[usize],
    lower: f64,
    options: &SolveOptions,
) -> Result<(Vec<usize>, f64, f64, MilpStatus), Error> {
    let model = LayerModel::build(
        shape,
        w,
        &LayerOptions {
            lower,
            upper: Some(max_load(shape, w, start)),
            budget: Some((current.to_vec(), budget)),
        },
        "balance migration".into(),
        "",
    )?;
    // Each budget's time limit counts from its own start.
    let settled = solve_from(
        &model,
        shape,
        w,
        start.to_vec(),
        lower,
        None,
        &options.started_now(),
        |p| moved(shape, current, p) <= budget,
    )?;
    Ok((
        settled.plan,
        settled.objective,
        settled.bound,
        settled.status,
    ))
}

/// One layer's front (module doc).
fn layer_front(
    instance: &Instance,
    l: usize,
    current: &[usize],
    max_budget: Option<usize>,
    options: &SolveOptions,
) -> Result<LayerFront, Error> {
    let shape = instance.shape();
    let w = &instance.loads[l];
    let mean = formulations::balance::bounds::mean(&shape, w);
    let balancedness = |load: f64| if load > 0.0 { mean / load } else { 1.0 };
    let optimum = solve_layer(instance, l, options)?;
    let reach = moved(&shape, current, &optimum.plan);
    let last = max_budget.map_or(reach, |m| m.min(reach));
    let mut plan = current.to_vec();
    let mut load = max_load(&shape, w, current);
    let point = |budget, load: f64, bound, plan: &[usize], status| Point {
        layer: l,
        budget,
        max_load: load,
        bound,
        moved: moved(&shape, current, plan),
        balancedness: balancedness(load),
        status,
    };
    let mut front = vec![point(0, load, load, &plan, MilpStatus::Optimal)];
    for budget in 1..=last {
        if load <= optimum.bound * (1.0 + PROVED_GAP) {
            break;
        }
        let (p, v, bound, status) =
            solve_budget(&shape, w, current, budget, &plan, optimum.bound, options)?;
        let better = v < load * (1.0 - PROVED_GAP);
        (plan, load) = (p, v);
        if better || status != MilpStatus::Optimal {
            front.push(point(budget, load, bound, &plan, status));
        }
    }
    // The unconstrained solve's plan reaches its load with `reach` moves.
    if max_budget.is_none_or(|m| reach <= m) && optimum.objective < load * (1.0 - PROVED_GAP) {
        front.push(point(
            reach,
            optimum.objective,
            optimum.bound,
            &optimum.plan,
            optimum.status,
        ));
    }
    let eplb = eplb_layer(&shape, w, instance.num_groups, instance.num_nodes)
        .ok()
        .filter(|p| check_layer(&shape, p).is_ok());
    let eplb_max_load = eplb.as_ref().map(|p| max_load(&shape, w, p));
    Ok(LayerFront {
        layer: l,
        optimum: optimum.objective,
        optimum_bound: optimum.bound,
        budget_for_eplb_load: eplb_max_load.and_then(|e| {
            front
                .iter()
                .find(|p| p.max_load <= e * (1.0 + PROVED_GAP))
                .map(|p| p.budget)
        }),
        eplb_moved: eplb.as_ref().map(|p| moved(&shape, current, p)),
        eplb_max_load,
        front,
    })
}

impl MigrationReport {
    /// Every point, a row each (`--csv`).
    pub fn rows(&self) -> Vec<&Point> {
        self.layers.iter().flat_map(|l| &l.front).collect()
    }

    /// For humans: per layer its front, then EPLB's plan beside it.
    pub fn text(&self) -> String {
        let mut text = format!(
            "{}: {} layers x {} experts, {} slots on {} GPUs; moves counted from `current`\n",
            self.instance.name,
            self.instance.layers,
            self.instance.experts,
            self.instance.slots,
            self.instance.gpus
        );
        for layer in &self.layers {
            let rows: Vec<Vec<String>> = layer
                .front
                .iter()
                .map(|p| {
                    vec![
                        p.budget.to_string(),
                        p.moved.to_string(),
                        format!("{:.4}", p.max_load),
                        format!("{:.4}", p.bound),
                        format!("{:.4}", p.balancedness),
                        p.status.to_string(),
                    ]
                })
                .collect();
            text.push_str(&format!(
                "layer {}: optimum {:.4} (bound {:.4})\n{}",
                layer.layer,
                layer.optimum,
                layer.optimum_bound,
                crate::render::table(
                    &[
                        "budget",
                        "moved",
                        "max load",
                        "bound",
                        "balancedness",
                        "status"
                    ],
                    &rows,
                    1
                )
            ));
            match (layer.eplb_max_load, layer.eplb_moved) {
                (Some(load), Some(moves)) => text.push_str(&format!(
                    "  EPLB: max load {load:.4} with {moves} replicas moved; the front reaches \
                     that load with {}\n",
                    layer
                        .budget_for_eplb_load
                        .map_or("more moves than walked".to_string(), |b| format!(
                            "{b} moved"
                        ))
                )),
                _ => text.push_str("  EPLB: no plan under the instance's options\n"),
            }
        }
        text
    }
}
