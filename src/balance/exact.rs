//! The exact method of one layer, and of an instance (its layers in parallel).
//!
//! A layer: the heuristics' best plan (local search from the greedy and from EPLB's plans that
//! respect the options, then from the best [`heavy_starts`]) is the incumbent U; the
//! combinatorial lower bound L ([`formulations::balance::bounds`]) is proved. When U <= L the
//! plan is optimal and no MILP is needed; otherwise, at three slots per GPU or more and unless
//! U is within the gap asked for, the plan is annealed ([`annealed`]) and, if still not within
//! it, repacked with its counts fixed, then free ([`super::repack`]), and U and L are taken
//! again, L also at least the bound the repacking's complete probes prove (at two,
//! [`pairing`] gives the optimum or a bound). If U > L still, HiGHS solves the
//! layer's MILP ([`formulations::balance::milp`]) started from the plan, with T >= L and the
//! count ranges U implies, under the time limit. The status is HiGHS's; a layer proved by the
//! bound alone is `optimal` with the bound as its best bound.
//!
//! Hierarchical layers decompose exactly: a hierarchical plan is a partition of the groups
//! onto the nodes (K / N each) and, on every node, a plan of its experts alone on its S / N
//! slots and G / N GPUs, whose busiest GPU is the node's; so the optimum is the least over the
//! partitions of the largest node optimum. The partitions (nodes are identical, so unordered)
//! are visited by their lower bound (the largest node bound); each node's experts are solved as
//! a plain layer once (memoised by group set), the blocks of a partition sharing the time
//! left; a partition whose bound reaches the best plan found is not solved, and the layer's
//! bound is the least partition bound.
//!
//! Layers share nothing: an instance's layers are solved in parallel (rayon, one HiGHS thread
//! each); each layer's time limit counts from the start of its own solve. The instance's
//! incumbent and bound are the sums of the layers'; it is optimal only when every layer is.

use formulations::balance::evaluate::{check_layer, max_load};
use formulations::balance::milp::{count_ranges, LayerModel, LayerOptions};
use formulations::balance::model::replica_counts;
use formulations::balance::{bounds, Instance, Shape};
use formulations::milp::{MilpStatus, SolveOptions, PROVED_GAP};
use formulations::Error;
use itertools::Itertools;
use rayon::prelude::*;
use serde::Serialize;

use super::algorithms::{greedy, greedy_with, local_search};
use super::anneal::anneal;
use super::pairing;
use super::repack::repack;
use crate::eplb::{rebalance_experts, EplbError, EplbExact, EplbPlan, EplbPolicy};
use crate::problem::ExactReport;

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
    /// The bound before the MILP: the largest of the combinatorial bounds, the repacking's
    /// and the sorted pairing's.
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

impl LayerSolve {
    /// A layer's result from what it settled on, its heuristics' best and its bound before the
    /// MILP; the layer index and the time are set by [`solve_layer`].
    fn new(settled: Settled, heuristic: f64, combinatorial_bound: f64, milp: bool) -> Self {
        LayerSolve {
            layer: 0,
            status: settled.status,
            objective: settled.objective,
            bound: settled.bound,
            gap: gap(settled.objective, settled.bound),
            heuristic,
            combinatorial_bound,
            milp,
            time_s: 0.0,
            note: settled.note,
            plan: settled.plan,
        }
    }
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

/// The seed of the exact method's annealing: a layer's start depends on its loads alone.
const ANNEAL_SEED: u64 = 0x0ba1_a0ce;

/// The heuristics' best feasible plan of a layer: local search from the greedy plan and from
/// EPLB's hierarchical and global plans where they respect the options, then from the best
/// [`HEAVY_SEARCHED`] of the [`heavy_starts`] that best plan implies.
pub fn best_heuristic(shape: &Shape, w: &[f64], groups: usize, nodes: usize) -> Option<Vec<usize>> {
    let mut starts: Vec<Vec<usize>> = greedy(shape, w).into_iter().collect();
    for (g, n) in [(groups, nodes), (1, 1)] {
        if let Ok(p) = eplb_layer(shape, w, g, n) {
            if check_layer(shape, &p).is_ok() {
                starts.push(p);
            }
        }
    }
    let load = |p: &Vec<usize>| max_load(shape, w, p);
    let best = starts
        .into_iter()
        .map(|p| local_search(shape, w, &p))
        .min_by(|a, b| load(a).total_cmp(&load(b)))?;
    let mut heavy = heavy_starts(shape, w, &best);
    heavy.sort_by(|a, b| load(a).total_cmp(&load(b)));
    let searched = heavy
        .into_iter()
        .take(HEAVY_SEARCHED)
        .map(|p| local_search(shape, w, &p));
    // The best plan first: it stays on a tie.
    std::iter::once(best)
        .chain(searched)
        .min_by(|a, b| load(a).total_cmp(&load(b)))
}

/// The experts whose counts [`heavy_starts`] vary: the heaviest two.
pub const HEAVY: usize = 2;

/// How many heavy starts, best first, local search continues from.
pub const HEAVY_SEARCHED: usize = 2;

/// Greedy plans ([`greedy_with`]) with the counts of the [`HEAVY`] heaviest experts given: every
/// combination from the fewest replicas a plan as good as `plan` allows them (a replica of e
/// carries w_e / c_e, so c_e >= w_e / U, U `plan`'s load) to one more than `plan` gives them.
/// The greedy gives each further slot to the largest load per replica, so it replicates a
/// dominant expert on every GPU even where GPUs without it would pack the others better (a
/// Switch layer of two experts carrying 57 % of the load, 9 slots per GPU: 5.8 % above the
/// mean from the greedy's counts, 0.02 % from fewer replicas of the two).
pub fn heavy_starts(shape: &Shape, w: &[f64], plan: &[usize]) -> Vec<Vec<usize>> {
    let upper = max_load(shape, w, plan);
    let counts = replica_counts(plan, shape.experts);
    let mut heaviest: Vec<usize> = (0..shape.experts).collect();
    heaviest.sort_by(|&a, &b| w[b].total_cmp(&w[a]).then(a.cmp(&b)));
    heaviest.truncate(HEAVY);
    let ranges: Vec<std::ops::RangeInclusive<usize>> = heaviest
        .iter()
        .map(|&e| {
            let fewest = if upper > 0.0 {
                ((w[e] / upper).ceil() as usize).max(1)
            } else {
                1
            };
            fewest..=(counts[e] + 1).min(shape.cap())
        })
        .collect();
    ranges
        .into_iter()
        .multi_cartesian_product()
        .filter_map(|c| {
            let fixed: Vec<(usize, usize)> = heaviest.iter().copied().zip(c).collect();
            greedy_with(shape, w, &fixed)
        })
        .collect()
}

/// At three slots per GPU or more, `plan` annealed ([`anneal`]) and searched again; otherwise
/// `plan` itself (two slots per GPU are solved by [`pairing`]).
pub fn annealed(shape: &Shape, w: &[f64], plan: Vec<usize>) -> Vec<usize> {
    if shape.per_gpu() < 3 {
        return plan;
    }
    local_search(shape, w, &anneal(shape, w, &plan, ANNEAL_SEED))
}

/// The exact solve of layer `l` (module doc); its time limit counts from now.
pub fn solve_layer(
    instance: &Instance,
    l: usize,
    options: &SolveOptions,
) -> Result<LayerSolve, Error> {
    let options = options.started_now();
    let shape = instance.shape();
    let w = &instance.loads[l];
    let mut solved = if shape.hierarchical {
        solve_hierarchical(&shape, w, &options)?
    } else {
        solve_plain(
            &shape,
            w,
            (instance.num_groups, instance.num_nodes),
            &options,
        )?
    };
    solved.layer = l;
    solved.time_s = options.started.expect("started").elapsed().as_secs_f64();
    Ok(solved)
}

/// The gap of an incumbent over a bound.
fn gap(objective: f64, bound: f64) -> f64 {
    if objective > 0.0 {
        ((objective - bound) / objective).max(0.0)
    } else {
        0.0
    }
}

/// A layer without the hierarchical option: heuristics, bounds, then the MILP (module doc).
/// `eplb` is EPLB's (groups, nodes) for its own policy's start.
pub fn solve_plain(
    shape: &Shape,
    w: &[f64],
    eplb: (usize, usize),
    options: &SolveOptions,
) -> Result<LayerSolve, Error> {
    let mut plan = best_heuristic(shape, w, eplb.0, eplb.1).ok_or_else(|| {
        Error::Solver("balance: no heuristic found a feasible plan to start from".into())
    })?;
    let mut upper = max_load(shape, w, &plan);
    let mut ranges = count_ranges(shape, w, Some(upper));
    let mut lower = bounds::lower_bound(shape, w, &ranges).min(upper);
    // Annealing, then repacking, only where the plan is neither proved nor within the gap
    // asked for (the bounds are taken again after them: at DeepSeek-V3's size they take
    // seconds).
    let within =
        |upper: f64, lower: f64| upper <= lower * (1.0 + PROVED_GAP.max(options.mip_rel_gap));
    if !within(upper, lower) && shape.per_gpu() >= 3 {
        plan = annealed(shape, w, plan);
        let mut proved = lower;
        if !within(max_load(shape, w, &plan), lower) {
            let repacked = repack(shape, w, &plan, lower, options)?;
            (plan, proved) = (repacked.plan, repacked.bound);
        }
        upper = max_load(shape, w, &plan);
        ranges = count_ranges(shape, w, Some(upper));
        lower = bounds::lower_bound(shape, w, &ranges)
            .max(proved)
            .min(upper);
    }
    let heuristic = upper;
    // Two slots per GPU: the best sorted pairing over the count vectors (pairing's module doc).
    if let Some(paired) = pairing::solve(shape, w, &ranges) {
        lower = lower.max(paired.bound.min(upper));
        if let Some((p, _)) = paired.plan.filter(|(p, _)| check_layer(shape, p).is_ok()) {
            let v = max_load(shape, w, &p);
            if v < upper {
                (plan, upper) = (p, v);
            }
        }
    }
    let done = |settled, milp| LayerSolve::new(settled, heuristic, lower, milp);
    if upper <= lower * (1.0 + PROVED_GAP) {
        let proved = Settled {
            plan,
            objective: upper,
            bound: lower,
            status: MilpStatus::Optimal,
            note: None,
        };
        return Ok(done(proved, false));
    }
    let model = match LayerModel::build(
        shape,
        w,
        &LayerOptions {
            lower,
            upper: Some(upper),
            budget: None,
        },
        "balance layer".into(),
        "",
    ) {
        Ok(model) => model,
        Err(Error::TooLarge(why)) => {
            let note = format!("no MILP ({why}): the heuristic's plan and the bound");
            let unproved = Settled {
                plan,
                objective: upper,
                bound: lower,
                status: MilpStatus::GapLimit,
                note: Some(note),
            };
            return Ok(done(unproved, false));
        }
        Err(e) => return Err(e),
    };
    let settled = solve_from(
        &model,
        shape,
        w,
        plan,
        lower,
        bounds::grid(w, &ranges),
        options,
        |_| true,
    )?;
    Ok(done(settled, true))
}

/// `model` solved from `start` (a feasible plan of the model): the better of the MILP's plan
/// (valid, and accepted by `fits`) and `start`, its load, the bound (the solver's in load
/// units, rounded up to `grid`, at least `lower`, at most the load) and the status (`optimal`
/// once the bound meets the load), and the solver's note. The exact method and the migration
/// front share it.
#[allow(clippy::too_many_arguments)]
pub fn solve_from(
    model: &LayerModel,
    shape: &Shape,
    w: &[f64],
    start: Vec<usize>,
    lower: f64,
    grid: Option<u64>,
    options: &SolveOptions,
    fits: impl Fn(&[usize]) -> bool,
) -> Result<Settled, Error> {
    let upper = max_load(shape, w, &start);
    let begin = model.start(w, &start);
    let solved = model.milp.solve(options, begin.as_deref())?;
    let found = solved
        .values
        .as_deref()
        .map(|v| model.decode(v))
        .filter(|p| check_layer(shape, p).is_ok() && fits(p));
    let (best, objective) = match found {
        Some(p) if max_load(shape, w, &p) < upper => {
            let v = max_load(shape, w, &p);
            (p, v)
        }
        _ => (start, upper),
    };
    let bound = solved
        .best_bound
        .map_or(lower, |b| bounds::on_grid(b / model.scale, grid).max(lower))
        .min(objective);
    let status = match solved.status {
        MilpStatus::Optimal | MilpStatus::GapLimit if objective <= bound * (1.0 + PROVED_GAP) => {
            MilpStatus::Optimal
        }
        MilpStatus::Optimal => MilpStatus::GapLimit,
        MilpStatus::Infeasible | MilpStatus::Unbounded => {
            return Err(Error::Solver(format!(
                "balance: HiGHS reports the model {}, but the start plan is feasible",
                solved.status
            )))
        }
        other => other,
    };
    Ok(Settled {
        plan: best,
        objective,
        bound,
        status,
        note: solved.note,
    })
}

/// What [`solve_from`] settles on.
pub struct Settled {
    /// The better plan.
    pub plan: Vec<usize>,
    /// Its busiest GPU's load.
    pub objective: f64,
    /// The proved lower bound.
    pub bound: f64,
    /// `optimal` once the bound meets the load.
    pub status: MilpStatus,
    /// The solver's note.
    pub note: Option<String>,
}

/// The partitions of `groups` groups into blocks of `per` (unordered: each block listed from its
/// smallest group, blocks by their smallest group).
fn partitions(groups: usize, per: usize) -> Vec<Vec<Vec<usize>>> {
    fn go(left: &[usize], per: usize, acc: &mut Vec<Vec<usize>>, out: &mut Vec<Vec<Vec<usize>>>) {
        let Some((&first, rest)) = left.split_first() else {
            out.push(acc.clone());
            return;
        };
        // The block of `first`: per - 1 more from the rest, in increasing order.
        let mut pick = vec![first];
        fn choose(
            rest: &[usize],
            from: usize,
            need: usize,
            pick: &mut Vec<usize>,
            per: usize,
            acc: &mut Vec<Vec<usize>>,
            out: &mut Vec<Vec<Vec<usize>>>,
        ) {
            if need == 0 {
                let left: Vec<usize> = rest.iter().copied().filter(|g| !pick.contains(g)).collect();
                acc.push(pick.clone());
                go(&left, per, acc, out);
                acc.pop();
                return;
            }
            for i in from..rest.len() {
                pick.push(rest[i]);
                choose(rest, i + 1, need - 1, pick, per, acc, out);
                pick.pop();
            }
        }
        choose(rest, 0, per - 1, &mut pick, per, acc, out);
    }
    let all: Vec<usize> = (0..groups).collect();
    let mut out = Vec::new();
    go(&all, per, &mut Vec::new(), &mut out);
    out
}

/// A hierarchical layer by its exact decomposition (module doc).
fn solve_hierarchical(
    shape: &Shape,
    w: &[f64],
    options: &SolveOptions,
) -> Result<LayerSolve, Error> {
    let node = Shape {
        experts: shape.experts / shape.nodes,
        slots: shape.slots / shape.nodes,
        gpus: shape.gpus_per_node(),
        nodes: 1,
        groups: 1,
        hierarchical: false,
        ..*shape
    };
    let experts_of = |block: &[usize]| -> Vec<usize> {
        block
            .iter()
            .flat_map(|&q| q * shape.group_size()..(q + 1) * shape.group_size())
            .collect()
    };
    let loads_of =
        |block: &[usize]| -> Vec<f64> { experts_of(block).iter().map(|&e| w[e]).collect() };
    let parts = partitions(shape.groups, shape.groups_per_node());
    // Cheap bounds of every block first.
    let mut blocks: std::collections::BTreeMap<Vec<usize>, (f64, Option<LayerSolve>)> =
        std::collections::BTreeMap::new();
    for p in &parts {
        for b in p {
            blocks.entry(b.clone()).or_insert_with(|| {
                let wb = loads_of(b);
                let ranges = count_ranges(&node, &wb, None);
                (bounds::lower_bound(&node, &wb, &ranges), None)
            });
        }
    }
    let part_bound =
        |blocks: &std::collections::BTreeMap<Vec<usize>, (f64, Option<LayerSolve>)>,
         p: &Vec<Vec<usize>>| {
            p.iter()
                .map(|b| {
                    let (lb, s) = &blocks[b];
                    s.as_ref().map_or(*lb, |s| s.bound.max(*lb))
                })
                .fold(0.0, f64::max)
        };
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&a, &b| {
        part_bound(&blocks, &parts[a]).total_cmp(&part_bound(&blocks, &parts[b]))
    });
    let mut best: Option<(f64, usize)> = None;
    let mut used_milp = false;
    let mut heuristic = f64::INFINITY;
    for &i in &order {
        if best.is_some_and(|(v, _)| part_bound(&blocks, &parts[i]) >= v * (1.0 - PROVED_GAP)) {
            continue;
        }
        let mut value: f64 = 0.0;
        let mut h: f64 = 0.0;
        for b in &parts[i] {
            if blocks[b].1.is_none() {
                // The time left shared by the partition's blocks not yet solved: the first
                // must not take it all.
                let unsolved = parts[i].iter().filter(|b| blocks[*b].1.is_none()).count();
                let share = SolveOptions {
                    time_limit_s: options.time_limit_s.map(|limit| {
                        let left =
                            limit - options.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
                        left.max(0.0) / unsolved as f64
                    }),
                    started: Some(std::time::Instant::now()),
                    ..options.clone()
                };
                let solved = solve_plain(&node, &loads_of(b), (1, 1), &share)?;
                blocks.get_mut(b).expect("listed").1 = Some(solved);
            }
            let s = blocks[b].1.as_ref().expect("solved");
            used_milp |= s.milp;
            value = value.max(s.objective);
            h = h.max(s.heuristic);
        }
        heuristic = heuristic.min(h);
        if best.is_none_or(|(v, _)| value < v) {
            best = Some((value, i));
        }
    }
    let (objective, i) = best.expect("at least one partition");
    let bound = parts
        .iter()
        .map(|p| part_bound(&blocks, p))
        .fold(f64::INFINITY, f64::min)
        .min(objective);
    // The plan: node n holds block n of the best partition.
    let mut plan = Vec::with_capacity(shape.slots);
    let mut notes = Vec::new();
    for b in &parts[i] {
        let s = blocks[b].1.as_ref().expect("solved");
        let experts = experts_of(b);
        plan.extend(s.plan.iter().map(|&e| experts[e]));
        notes.extend(s.note.clone());
    }
    let limited = blocks
        .values()
        .filter_map(|(_, s)| s.as_ref())
        .any(|s| s.status == MilpStatus::TimeLimit);
    let status = if objective <= bound * (1.0 + PROVED_GAP) {
        MilpStatus::Optimal
    } else if limited {
        MilpStatus::TimeLimit
    } else {
        MilpStatus::GapLimit
    };
    let combinatorial = parts
        .iter()
        .map(|p| p.iter().map(|b| blocks[b].0).fold(0.0, f64::max))
        .fold(f64::INFINITY, f64::min);
    let settled = Settled {
        plan,
        objective,
        bound,
        status,
        note: notes.into_iter().next(),
    };
    Ok(LayerSolve::new(
        settled,
        heuristic,
        combinatorial,
        used_milp,
    ))
}

/// Every layer's exact solve, in parallel, in layer order.
pub fn solve_all(instance: &Instance, options: &SolveOptions) -> Result<Vec<LayerSolve>, Error> {
    (0..instance.loads.len())
        .into_par_iter()
        .map(|l| solve_layer(instance, l, options))
        .collect()
}

/// `moe-opt eplb --method exact` and `moe_opt.eplb(..., method="exact")`: EPLB's arguments
/// checked as EPLB checks them, then every layer solved exactly under the locality EPLB's own
/// policy keeps (hierarchical when `num_groups % num_nodes == 0`: whole groups per node; global
/// otherwise, groups and nodes ignored). Returns the plan in EPLB's form and the account.
pub fn exact_eplb(
    weight: &[Vec<f64>],
    arguments: [usize; 4],
    options: &SolveOptions,
) -> Result<(EplbPlan, EplbExact), ExactEplbError> {
    let [replicas, groups, nodes, gpus] = arguments;
    let policy = rebalance_experts(weight, replicas, groups, nodes, gpus)?.policy;
    let (groups, nodes) = match policy {
        EplbPolicy::Hierarchical => (groups, nodes),
        EplbPolicy::Global => (1, 1),
    };
    let instance = Instance {
        problem: formulations::ProblemKind::Balance,
        name: "eplb".into(),
        loads: weight.to_vec(),
        num_replicas: replicas,
        num_gpus: gpus,
        num_nodes: nodes,
        num_groups: groups,
        one_replica_per_gpu: false,
        hierarchical: policy == EplbPolicy::Hierarchical,
        current: None,
    };
    formulations::balance::validate::validate(&instance).map_err(|e| {
        ExactEplbError::Other(Error::Invalid {
            path: "<eplb arguments>".into(),
            field: e.field,
            reason: e.reason,
        })
    })?;
    let began = std::time::Instant::now();
    let layers = solve_all(&instance, options).map_err(ExactEplbError::Other)?;
    let reports: Vec<ExactReport> = layers.iter().map(LayerSolve::report).collect();
    let total = total_report(&layers, began.elapsed().as_secs_f64());
    let plan = EplbPlan::from_phy2log(
        policy,
        replicas / gpus,
        layers.into_iter().map(|l| l.plan).collect(),
        weight[0].len(),
    );
    Ok((
        plan,
        EplbExact {
            total,
            layers: reports,
        },
    ))
}

/// Why `exact_eplb` failed: EPLB's own refusal of the arguments, or the solver's.
#[derive(Debug)]
pub enum ExactEplbError {
    /// EPLB refuses the arguments (the same error as EPLB's own method).
    Eplb(EplbError),
    /// Anything else.
    Other(Error),
}

impl From<EplbError> for ExactEplbError {
    fn from(e: EplbError) -> Self {
        ExactEplbError::Eplb(e)
    }
}

impl LayerSolve {
    /// The layer's account in the shared form.
    pub fn report(&self) -> ExactReport {
        ExactReport {
            status: self.status,
            objective: Some(self.objective),
            best_bound: Some(self.bound),
            gap: Some(self.gap),
            solve_time_s: self.time_s,
            note: self.note.clone(),
        }
    }
}

/// The instance's exact report from its layers' (module doc).
pub fn total_report(layers: &[LayerSolve], solve_time_s: f64) -> ExactReport {
    let objective: f64 = layers.iter().map(|l| l.objective).sum();
    let bound: f64 = layers.iter().map(|l| l.bound).sum();
    let status = if layers.iter().all(|l| l.status == MilpStatus::Optimal) {
        MilpStatus::Optimal
    } else if layers.iter().any(|l| l.status == MilpStatus::TimeLimit) {
        MilpStatus::TimeLimit
    } else {
        MilpStatus::GapLimit
    };
    ExactReport {
        status,
        objective: Some(objective),
        best_bound: Some(bound),
        gap: Some(if objective > 0.0 {
            ((objective - bound) / objective).max(0.0)
        } else {
            0.0
        }),
        solve_time_s,
        note: layers.iter().find_map(|l| l.note.clone()),
    }
}
