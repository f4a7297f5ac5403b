//! Repacking a plan with its counts fixed: the exact method's last improvement of its start at
//! three slots per GPU or more, where neither local search nor annealing reaches the bound.
//!
//! What keeps an annealed plan above the mean is mostly its packing, not its counts. With the
//! counts c fixed, a plan whose busiest GPU carries at most T is a choice of G GPU contents,
//! with repetition, that holds every expert's replicas exactly: a content p is a multiset of m
//! experts (at most c_e of expert e; at most one under one-replica-per-GPU) whose load lies in
//! [W - (G - 1) T, T] (the other G - 1 GPUs carry at most (G - 1) T of the total W, so none
//! carries less), and x_p GPUs take it:
//!
//! sum_p x_p = G,    sum_p n_{e,p} x_p = c_e for every expert e,    x_p >= 0 integer.
//!
//! Near the mean the window is narrow, so the contents are few (about 4,000 on a layer of
//! DeepSeek-V2-Lite at 32 GPUs with 96 slots, T 0.1 % above the mean) and HiGHS decides the
//! program in about a second. [`repack`] bisects T between the layer's bound and the plan's
//! load: a feasible T gives a plan (checked by the evaluator), an infeasible one raises the low
//! end for these counts only. That is no bound on the layer, whose counts are free, so the
//! exact method's bound does not use it.

use formulations::balance::evaluate::{check_layer, max_load};
use formulations::balance::model::replica_counts;
use formulations::balance::Shape;
use formulations::milp::{Milp, MilpStatus, Sense, SolveOptions, PROVED_GAP};
use formulations::Error;

/// Most contents a probe enumerates; a probe that would need more is not made.
pub const MAX_CONTENTS: usize = 200_000;

/// Most steps (partial contents) of a probe's enumeration: with many slots per GPU the
/// partial contents outnumber the complete ones by far, so a probe that would take more is
/// not made either.
pub const MAX_STEPS: usize = 4_000_000;

/// Most probes of the bisection.
pub const PROBES: usize = 8;

/// Longest a probe may run, seconds (also without a time limit: a probe that cannot decide is
/// a bisection step without a plan).
const PROBE_LIMIT_S: f64 = 10.0;

/// The best plan [`repack`]'s probes find with `plan`'s counts (module doc), or `plan` itself;
/// `lower` is a proved bound on the layer. Probes stop once a plan is within the larger of
/// `options.mip_rel_gap` and [`PROVED_GAP`] of `lower`, after [`PROBES`] probes, or when the
/// time limit has run out. A hierarchical layer is returned as it is (the exact method solves
/// its nodes as plain layers).
///
/// # Complexity
/// G GPUs of m slots, E experts, P contents in the window. Per probe: the enumeration,
/// O(E^m) steps in the worst case, cut at [`MAX_STEPS`] steps or [`MAX_CONTENTS`] contents,
/// then one integer program of P variables and E + 1 rows.
///
/// # Examples
/// ```
/// use formulations::balance::evaluate::max_load;
/// use formulations::balance::Shape;
/// use formulations::milp::SolveOptions;
/// use moe_opt::balance::repack::repack;
///
/// // Two GPUs of three slots, six experts of one replica each (loads 6, 5, 4, 3, 2, 1; mean
/// // 10.5): the plan 6 + 5 + 4 | 3 + 2 + 1 carries 15; the best split of the same replicas
/// // is 6 + 4 + 1 | 5 + 3 + 2 (11 and 10).
/// let shape = Shape {
///     experts: 6,
///     slots: 6,
///     gpus: 2,
///     nodes: 1,
///     groups: 1,
///     one_per_gpu: false,
///     hierarchical: false,
/// };
/// let w = [6.0, 5.0, 4.0, 3.0, 2.0, 1.0];
/// let plan = repack(&shape, &w, &[0, 1, 2, 3, 4, 5], 10.5, &SolveOptions::default()).unwrap();
/// assert_eq!(max_load(&shape, &w, &plan), 11.0);
/// ```
pub fn repack(
    shape: &Shape,
    w: &[f64],
    plan: &[usize],
    lower: f64,
    options: &SolveOptions,
) -> Result<Vec<usize>, Error> {
    let mut best = plan.to_vec();
    if shape.hierarchical || shape.per_gpu() < 2 {
        return Ok(best);
    }
    let began = options.started.unwrap_or_else(std::time::Instant::now);
    let counts = replica_counts(plan, shape.experts);
    let goal = lower * (1.0 + PROVED_GAP.max(options.mip_rel_gap));
    let (mut low, mut high) = (lower, max_load(shape, w, plan));
    for _ in 0..PROBES {
        let left = options
            .time_limit_s
            .map_or(PROBE_LIMIT_S, |limit| limit - began.elapsed().as_secs_f64());
        if high <= goal || left <= 0.0 {
            break;
        }
        let target = (low + high) / 2.0;
        // The probe's clock starts before its enumeration, which it covers.
        let probe = SolveOptions {
            time_limit_s: Some(left.min(PROBE_LIMIT_S)),
            started: Some(std::time::Instant::now()),
            ..options.clone()
        };
        match probe_at(shape, w, &counts, target, &probe)? {
            Some(p) if check_layer(shape, &p).is_ok() && max_load(shape, w, &p) < high => {
                high = max_load(shape, w, &p);
                best = p;
            }
            _ => low = target,
        }
    }
    Ok(best)
}

/// A plan with `counts` whose busiest GPU carries at most `target`, if the probe finds one
/// (`None`: infeasible, undecided within its limit, or beyond [`MAX_CONTENTS`] contents or
/// [`MAX_STEPS`] steps of enumeration).
fn probe_at(
    shape: &Shape,
    w: &[f64],
    counts: &[usize],
    target: f64,
    options: &SolveOptions,
) -> Result<Option<Vec<usize>>, Error> {
    let total: f64 = w.iter().sum();
    let floor = total - (shape.gpus - 1) as f64 * target;
    let contents = match contents(shape, w, counts, floor, target) {
        Some(c) if !c.is_empty() => c,
        _ => return Ok(None),
    };
    let mut milp = Milp::new("balance repack", Sense::Minimize);
    let gpus = shape.gpus as f64;
    let x: Vec<_> = (0..contents.len())
        .map(|p| milp.integer(format!("x_{p}"), 0.0, gpus))
        .collect();
    milp.row("gpus", x.iter().map(|&v| (v, 1.0)).collect(), gpus, gpus);
    let mut holding = vec![Vec::new(); shape.experts];
    for (p, content) in contents.iter().enumerate() {
        for (i, &e) in content.iter().enumerate() {
            // Each expert once per content, with its multiplicity there.
            if i == 0 || content[i - 1] != e {
                let n = content.iter().filter(|&&f| f == e).count();
                holding[e].push((x[p], n as f64));
            }
        }
    }
    for (e, terms) in holding.into_iter().enumerate() {
        let c = counts[e] as f64;
        milp.row(format!("count_{e}"), terms, c, c);
    }
    let solved = milp.solve(options, None)?;
    let values = match (solved.status, solved.values) {
        (MilpStatus::Infeasible, _) | (_, None) => return Ok(None),
        (_, Some(values)) => values,
    };
    let mut plan = Vec::with_capacity(shape.slots);
    for (p, content) in contents.iter().enumerate() {
        for _ in 0..values[p].round() as usize {
            plan.extend_from_slice(content);
        }
    }
    Ok((plan.len() == shape.slots).then_some(plan))
}

/// The GPU contents with `counts` whose load lies in [`floor`, `ceiling`], each sorted by
/// expert (module doc); `None` beyond [`MAX_CONTENTS`] contents or [`MAX_STEPS`] steps.
fn contents(
    shape: &Shape,
    w: &[f64],
    counts: &[usize],
    floor: f64,
    ceiling: f64,
) -> Option<Vec<Vec<usize>>> {
    let m = shape.per_gpu();
    let load: Vec<f64> = (0..shape.experts)
        .map(|e| w[e] / counts[e] as f64)
        .collect();
    let most: Vec<usize> = counts
        .iter()
        .map(|&c| {
            if shape.one_per_gpu {
                c.min(1)
            } else {
                c.min(m)
            }
        })
        .collect();
    // Experts by replica load, lightest first: what is left to add lies between the next
    // replica's load and the heaviest's, per slot.
    let mut order: Vec<usize> = (0..shape.experts).collect();
    order.sort_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)));
    let window = Window {
        heaviest: order.last().map_or(0.0, |&e| load[e]),
        tolerance: 1e-9 * ceiling.abs().max(1.0),
        floor,
        ceiling,
        order,
        load,
        most,
    };
    let mut out = Vec::new();
    let mut steps = 0;
    window
        .walk(0, m, 0.0, &mut Vec::with_capacity(m), &mut out, &mut steps)
        .then_some(out)
}

/// The enumeration of [`contents`].
struct Window {
    order: Vec<usize>,
    load: Vec<f64>,
    most: Vec<usize>,
    floor: f64,
    ceiling: f64,
    heaviest: f64,
    tolerance: f64,
}

impl Window {
    /// Adds to `out` every completion of `content` (`left` more replicas, from `order[from..]`,
    /// its load so far `sum`); false once `out` holds more than [`MAX_CONTENTS`] or `steps`
    /// passes [`MAX_STEPS`].
    fn walk(
        &self,
        from: usize,
        left: usize,
        sum: f64,
        content: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
        steps: &mut usize,
    ) -> bool {
        *steps += 1;
        if *steps > MAX_STEPS {
            return false;
        }
        if left == 0 {
            if sum >= self.floor - self.tolerance {
                let mut c = content.clone();
                c.sort_unstable();
                out.push(c);
            }
            return out.len() <= MAX_CONTENTS;
        }
        for (i, &e) in self.order.iter().enumerate().skip(from) {
            let r = self.load[e];
            // The rest weighs at least r a slot: past the ceiling here is past it for every
            // later (heavier) expert too.
            if sum + r * left as f64 > self.ceiling + self.tolerance {
                break;
            }
            let most_after = sum + r + self.heaviest * (left - 1) as f64;
            let used = content.iter().filter(|&&f| f == e).count();
            if most_after < self.floor - self.tolerance || used >= self.most[e] {
                continue;
            }
            // `from` stays at i: the same expert again while its multiplicity allows.
            content.push(e);
            let more = self.walk(i, left - 1, sum + r, content, out, steps);
            content.pop();
            if !more {
                return false;
            }
        }
        true
    }
}
