//! `moe-opt redundancy`: how many redundant slots a deployment needs. For slot counts from
//! S_0 (the least multiple of the GPUs at least the experts: every expert needs a slot, every
//! GPU the same number) up to S_0 plus a few per GPU, every layer is solved exactly and EPLB's
//! plan is evaluated, so the best balancedness reachable (with its certificate) stands beside
//! EPLB's, per layer and over layers.
//!
//! Over layers the balancedness is a step's: the sum of the layers' mean GPU loads over the sum
//! of their busiest (a step waits on every layer's busiest GPU). The optimum's is certified on
//! both sides: its plan reaches `balancedness` (mean / incumbent), and no plan reaches more than
//! `balancedness_upper` (mean / proved bound); they meet where every layer is proved.
//!
//! "balancedness >= X needs N redundant slots" is stated only as far as the certificates go: N
//! is the least slot count whose plan reaches X; it is the minimum when every smaller count's
//! upper bound is below X, and otherwise reported as "at most N".

use formulations::balance::evaluate::check_layer;
use formulations::balance::{bounds, Instance};
use formulations::milp::{MilpStatus, SolveOptions};
use formulations::Error;
use rayon::prelude::*;
use serde::Serialize;

use super::commands::InstanceInfo;
use super::exact::{eplb_layer, solve_layer};
use crate::report::VERSION;

/// One slot count and layer.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Physical slots.
    pub slots: usize,
    /// Slots beyond the experts (S - E).
    pub redundant_slots: usize,
    /// The layer.
    pub layer: usize,
    /// The best plan's busiest GPU load.
    pub max_load: f64,
    /// The proved lower bound on it.
    pub bound: f64,
    /// EPLB's busiest GPU load (null when its plan breaks an option).
    pub eplb_max_load: Option<f64>,
    /// mean / busiest of the best plan found.
    pub balancedness: f64,
    /// mean / proved lower bound on the busiest: no plan is better balanced.
    pub balancedness_upper: f64,
    /// The exact solve's status.
    pub status: MilpStatus,
    /// EPLB's balancedness (null when its plan breaks an option).
    pub eplb_balancedness: Option<f64>,
}

/// One slot count over all layers.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// Physical slots.
    pub slots: usize,
    /// Slots beyond the experts.
    pub redundant_slots: usize,
    /// Redundant slots per GPU, (S - S_0) / G.
    pub extra_per_gpu: usize,
    /// The best plans' step balancedness (sum of means / sum of maxima).
    pub balancedness: f64,
    /// No plan's step balancedness exceeds this (sum of means / sum of bounds).
    pub balancedness_upper: f64,
    /// Optimal when every layer is proved.
    pub status: MilpStatus,
    /// The least layer balancedness of the best plans.
    pub min_layer_balancedness: f64,
    /// EPLB's step balancedness (null when a layer's plan breaks an option).
    pub eplb_balancedness: Option<f64>,
    /// EPLB's least layer balancedness.
    pub eplb_min_layer_balancedness: Option<f64>,
}

/// Output of `redundancy`.
#[derive(Debug, Clone, Serialize)]
pub struct RedundancyReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The instance (its `num_replicas` is replaced by each point's).
    pub instance: InstanceInfo,
    /// The balancedness the sentence asks for.
    pub target: f64,
    /// Time limit per layer and slot count, seconds (null: none).
    pub time_limit_s: Option<f64>,
    /// One point per slot count.
    pub points: Vec<Point>,
    /// One row per slot count and layer.
    pub rows: Vec<Row>,
    /// Redundant slots the optimum needs to reach the target (null: not within the range).
    pub optimum_needs: Option<usize>,
    /// Whether that count is proved the least (false: at most that many).
    pub optimum_needs_proved: bool,
    /// Redundant slots EPLB needs (null: not within the range).
    pub eplb_needs: Option<usize>,
    /// The answer in words.
    pub sentence: String,
}

/// Runs the curve (module doc): `extra_per_gpu` more slots per GPU at most, each layer's exact
/// solve limited by `options` (its clock per layer).
pub fn redundancy(
    instance: &Instance,
    extra_per_gpu: usize,
    target: f64,
    options: &SolveOptions,
) -> Result<RedundancyReport, Error> {
    let shape = instance.shape();
    let (e, g) = (shape.experts, shape.gpus);
    let s0 = e.div_ceil(g) * g;
    let slot_counts: Vec<usize> = (0..=extra_per_gpu).map(|r| s0 + r * g).collect();
    let mut instances = Vec::new();
    for &s in &slot_counts {
        let i = instance.with_slots(s);
        formulations::balance::validate::validate(&i).map_err(|err| {
            Error::command_line(
                "--extra-per-gpu",
                format!("{s} slots: {}: {}", err.field, err.reason),
            )
        })?;
        instances.push(i);
    }
    let layers = instance.loads.len();
    let tasks: Vec<(usize, usize)> = (0..instances.len())
        .flat_map(|i| (0..layers).map(move |l| (i, l)))
        .collect();
    let progress = crate::progress::Progress::new(tasks.len() as u64, "layers x slot counts");
    let rows: Vec<Row> = tasks
        .par_iter()
        .map(|&(i, l)| {
            let inst = &instances[i];
            let shape = inst.shape();
            let w = &inst.loads[l];
            let solved = solve_layer(inst, l, options)?;
            let mean = bounds::mean(&shape, w);
            let ratio = |max: f64| if max > 0.0 { mean / max } else { 1.0 };
            let eplb = eplb_layer(&shape, w, inst.num_groups, inst.num_nodes)
                .ok()
                .filter(|p| check_layer(&shape, p).is_ok())
                .map(|p| formulations::balance::evaluate::max_load(&shape, w, &p));
            progress.inc();
            Ok(Row {
                slots: shape.slots,
                redundant_slots: shape.slots - e,
                layer: l,
                max_load: solved.objective,
                bound: solved.bound,
                eplb_max_load: eplb,
                balancedness: ratio(solved.objective),
                balancedness_upper: ratio(solved.bound),
                status: solved.status,
                eplb_balancedness: eplb.map(ratio),
            })
        })
        .collect::<Result<_, Error>>()?;
    let mean_sum: f64 = instance.loads.iter().map(|w| bounds::mean(&shape, w)).sum();
    let step = |maxima: f64| if maxima > 0.0 { mean_sum / maxima } else { 1.0 };
    let points: Vec<Point> = slot_counts
        .iter()
        .enumerate()
        .map(|(r, &s)| {
            let at: Vec<&Row> = rows.iter().filter(|x| x.slots == s).collect();
            let eplb: Option<f64> = at.iter().map(|x| x.eplb_max_load).sum();
            Point {
                slots: s,
                redundant_slots: s - e,
                extra_per_gpu: r,
                balancedness: step(at.iter().map(|x| x.max_load).sum()),
                balancedness_upper: step(at.iter().map(|x| x.bound).sum()),
                status: if at.iter().all(|x| x.status == MilpStatus::Optimal) {
                    MilpStatus::Optimal
                } else if at.iter().any(|x| x.status == MilpStatus::TimeLimit) {
                    MilpStatus::TimeLimit
                } else {
                    MilpStatus::GapLimit
                },
                min_layer_balancedness: at.iter().map(|x| x.balancedness).fold(1.0, f64::min),
                eplb_balancedness: eplb.map(step),
                eplb_min_layer_balancedness: at
                    .iter()
                    .map(|x| x.eplb_balancedness)
                    .collect::<Option<Vec<f64>>>()
                    .map(|b| b.into_iter().fold(1.0, f64::min)),
            }
        })
        .collect();
    let reached = points.iter().position(|p| p.balancedness >= target);
    let optimum_needs = reached.map(|i| points[i].redundant_slots);
    let optimum_needs_proved =
        reached.is_some_and(|i| points[..i].iter().all(|p| p.balancedness_upper < target));
    let eplb_needs = points
        .iter()
        .find(|p| p.eplb_balancedness.is_some_and(|b| b >= target))
        .map(|p| p.redundant_slots);
    let top = points.last().map_or(0, |p| p.redundant_slots);
    let optimum_words = match optimum_needs {
        Some(n) if optimum_needs_proved => format!("needs {n} redundant slots"),
        Some(n) => format!("needs at most {n} redundant slots (the bounds do not exclude fewer)"),
        None => format!("is not reached with up to {top} redundant slots"),
    };
    let eplb_words = match eplb_needs {
        Some(n) => format!("EPLB needs {n}"),
        None => format!("EPLB does not reach it with up to {top}"),
    };
    Ok(RedundancyReport {
        moe_opt_version: VERSION,
        instance: InstanceInfo::new(instance),
        target,
        time_limit_s: options.time_limit_s,
        sentence: format!("balancedness >= {target} {optimum_words}; {eplb_words}"),
        points,
        rows,
        optimum_needs,
        optimum_needs_proved,
        eplb_needs,
    })
}

impl RedundancyReport {
    /// For humans: a line per slot count, then the sentence.
    pub fn text(&self) -> String {
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.4}"));
        let rows: Vec<Vec<String>> = self
            .points
            .iter()
            .map(|p| {
                vec![
                    p.slots.to_string(),
                    p.redundant_slots.to_string(),
                    format!("{:.4}", p.balancedness),
                    format!("{:.4}", p.balancedness_upper),
                    p.status.to_string(),
                    format!("{:.4}", p.min_layer_balancedness),
                    f(p.eplb_balancedness),
                    f(p.eplb_min_layer_balancedness),
                ]
            })
            .collect();
        format!(
            "{}: {} layers x {} experts on {} GPUs\n{}{}\n",
            self.instance.name,
            self.instance.layers,
            self.instance.experts,
            self.instance.gpus,
            crate::render::table(
                &[
                    "slots",
                    "redundant",
                    "optimum",
                    "upper bound",
                    "status",
                    "min layer",
                    "EPLB",
                    "EPLB min layer",
                ],
                &rows,
                1
            ),
            self.sentence
        )
    }
}
