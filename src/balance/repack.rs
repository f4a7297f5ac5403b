//! Repacking a plan: the exact method's last improvement of its start at three slots per GPU
//! or more, where neither local search nor annealing reaches the bound.
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
//! load, never below the gap asked for (a plan there counts no more than one at it): a
//! feasible T gives a plan (checked by the evaluator), an infeasible one raises the low end for
//! these counts only. (At 60 s with a gap of 0.1 %, bisecting from the bound instead took
//! fewer of the hierarchical layers at 32 GPUs with 96 slots within it: DeepSeek-V2-Lite's 23
//! of 26 against 24, Qwen1.5-MoE's 18 of 24 against 19.)
//!
//! Where the plan's counts cannot reach the goal, a second bisection frees them: each expert
//! takes one count c from ceil(w_e / T) (a replica carries at most T) to two more (one where
//! two give too many contents, [`SLACKS`]), by binaries y_{e,c} (sum_c y_{e,c} = 1); a content
//! holds replicas of kinds (e, c), one count per expert, each of load w_e / c, and
//! sum_p n_{(e,c),p} x_p = c y_{e,c}. On the heavier node of DeepSeek-V2-Lite's layer 1 under
//! the hierarchical option (16 GPUs, 48 slots) no packing of the annealed counts comes within
//! 0.3 % of the bound, and this program finds a plan within 0.1 %.
//!
//! A probe is *complete* when its enumeration was not cut and its kinds hold, for every expert,
//! every count in the range [`count_ranges`] gives under its target T (at least the least c
//! with w_e / c <= T, at most the slots the other experts' least counts leave). A complete
//! probe that is infeasible proves that no plan's busiest GPU carries T or less: such a plan
//! gives every expert one count in its range (a GPU carries at least each of its replicas,
//! and the counts sum to S), every GPU of it carries a load in the window (at most T; at least
//! W - (G - 1) T, as the other GPUs carry at most (G - 1) T), so its GPUs are contents of the
//! probe (a content holds at most c_e replicas of expert e, at most one under
//! one-replica-per-GPU, one count per expert) and the number of GPUs taking each content is a
//! solution of the program. So T is a lower bound on the layer, and the exact method takes
//! it. Where the ranges under the plan's load are single counts (no redundant slot: S = E,
//! every expert one replica; a third of the real-data table's shapes), every counts-fixed
//! probe below that load is complete or the ranges leave no plan at all, and freeing the
//! counts would find nothing more, so the counts-fixed bisection alone runs, with all the
//! time. An incomplete probe (counts left out above the slack, or other than the plan's) that
//! is infeasible raises its bisection's low end only.
//!
//! The counts-free programs are larger, and grow fast above the goal (on Qwen1.5-MoE's layer
//! 19 at 32 GPUs with 96 slots: 38,700 contents at the goal with two counts of slack, 9,500
//! with one, 38,300 with one at 0.46 % above the mean). So where the repacking has 20 s or
//! more (twice a probe's limit) or no limit, this bisection probes the goal first, with all the
//! time left: a plan there ends the repacking, an infeasible program raises the low end, and an
//! undecided one ends it (every later probe would be larger); and the counts-fixed bisection
//! takes at most half the time left, so that the counts-free one has the rest. With less, the
//! counts-fixed bisection takes all it needs and the counts-free one starts halfway, as at 3 s
//! per layer the counts-fixed probes do the most (giving them half, and starting the other at
//! the goal, left 10 fewer layers proved and 10 fewer within 0.1 % in the real-data table). In
//! either bisection a probe whose enumeration passes its cap is not made, and it or an
//! undecided probe lowers the top of the later ones instead of raising the low end. On that
//! layer, at 60 s, the counts-fixed bisection ends at 0.98 % above the bound after 30 s, and
//! the counts-free probe at the goal finds a plan within 0.1 % in the next 15 s. With
//! [`LONG_PROBE_S`] or more left the probe at the goal is long: one count of slack first, then
//! two where one gives an infeasible program, with the counts-fixed cap.

use formulations::balance::evaluate::{check_layer, max_load};
use formulations::balance::milp::count_ranges;
use formulations::balance::model::replica_counts;
use formulations::balance::Shape;
use formulations::milp::{Milp, MilpStatus, Sense, SolveOptions, PROVED_GAP};
use formulations::Error;

/// Most contents a probe enumerates; a probe that would need more is not made, and the later
/// probes of its bisection stay below it (their windows are narrower).
pub const MAX_CONTENTS: usize = 200_000;

/// Most steps (partial contents) of a probe's enumeration: with many slots per GPU the
/// partial contents outnumber the complete ones by far, so a probe that would take more is
/// not made either.
pub const MAX_STEPS: usize = 4_000_000;

/// Most contents a probe with the counts free enumerates: beyond about this many HiGHS's
/// presolve, which does not check the time limit, outlasts it (11 s for a limit of 2 s on
/// 68,000 contents of a Qwen1.5-MoE layer at 32 GPUs; 1.1 s for 1 s on 25,000), and such
/// programs stayed undecided after 30 s anyway.
pub const MAX_FREE_CONTENTS: usize = 30_000;

/// Seconds left from which a probe at the goal is *long*: it tries the counts' slacks from the
/// fewest up, going on while they give an infeasible program that is not complete, and may
/// enumerate up to [`MAX_CONTENTS`] contents with the counts free (a presolve that overruns
/// its limit is small against the time). On Qwen1.5-MoE's layer 0 at 32 GPUs with 96 slots the
/// program at the goal has no LP solution with one count of slack, and with two (49,459
/// contents) holds a plan, which HiGHS found in 64 and 108 s outside moe-opt (highspy) and in
/// moe-opt within the layer's 60 s. Trying two counts first (with the larger cap) left
/// DeepSeek-V2-Lite's layer 12 at 32 GPUs with 96 slots 0.16 % above its bound at 60 s, where
/// one count first brings it within 0.1 %.
pub const LONG_PROBE_S: f64 = 25.0;

/// Most probes of each bisection.
pub const PROBES: usize = 8;

/// How many counts above ceil(w_e / T) an expert may take when the counts are free: two, or
/// one where two give a probe too many contents (on a Qwen1.5-MoE layer at 32 GPUs with 96
/// slots, 0.1 % above the mean: 38,700 contents with two, 9,500 with one).
pub const SLACKS: [usize; 2] = [2, 1];

/// Longest a probe may run, seconds (also without a time limit: a probe that cannot decide is
/// a bisection step without a plan).
const PROBE_LIMIT_S: f64 = 10.0;

/// What [`repack`] returns: its best plan, and the bound its probes proved.
#[derive(Debug, Clone, PartialEq)]
pub struct Repacked {
    /// The best plan the probes found, or the plan repacking started from.
    pub plan: Vec<usize>,
    /// A proved lower bound on the layer: the highest target of a complete probe (module doc)
    /// that was infeasible, or the bound repacking was given.
    pub bound: f64,
}

/// The best plan [`repack`]'s probes find, with `plan`'s counts and then with the counts free
/// (module doc), or `plan` itself, and the bound the complete probes prove; `lower` is a proved
/// bound on the layer. Each bisection stops once a plan is within the larger of
/// `options.mip_rel_gap` and [`PROVED_GAP`] of the bound, after [`PROBES`] probes, or when the
/// time limit has run out. A hierarchical layer is returned as it is (the exact method solves
/// its nodes as plain layers).
///
/// # Complexity
/// G GPUs of m slots, E experts, K = E kinds with the counts fixed and at most 3E with them
/// free, P contents in the window. Per probe: the enumeration, O(K^m) steps in the
/// worst case, cut at [`MAX_STEPS`] steps or [`MAX_CONTENTS`] contents, then one integer
/// program of P + K variables and E + K + 1 rows.
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
/// // is 6 + 4 + 1 | 5 + 3 + 2 (11 and 10). With six slots every expert has one replica, so
/// // a probe with these counts that is infeasible proves a bound: no split of the integer
/// // total 21 has both sides below 11.
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
/// let options = SolveOptions::default();
/// let repacked = repack(&shape, &w, &[0, 1, 2, 3, 4, 5], 10.5, &options).unwrap();
/// assert_eq!(max_load(&shape, &w, &repacked.plan), 11.0);
/// assert!(repacked.bound > 10.98 && repacked.bound < 11.0);
/// ```
pub fn repack(
    shape: &Shape,
    w: &[f64],
    plan: &[usize],
    lower: f64,
    options: &SolveOptions,
) -> Result<Repacked, Error> {
    if shape.hierarchical || shape.per_gpu() < 2 {
        return Ok(Repacked {
            plan: plan.to_vec(),
            bound: lower,
        });
    }
    let counts = replica_counts(plan, shape.experts);
    let gap = PROVED_GAP.max(options.mip_rel_gap);
    let high = max_load(shape, w, plan);
    let mut bisection = Bisection {
        shape,
        w,
        gap,
        bound: lower,
        high,
        best: plan.to_vec(),
        began: options.started.unwrap_or_else(std::time::Instant::now),
        options,
    };
    // Counts forced below the plan's load (no redundant slot, say): every probe with them is
    // complete, and freeing them finds nothing more.
    let forced = count_ranges(shape, w, Some(high))
        .iter()
        .all(|(least, most)| least == most);
    // With time for a long counts-free probe (module doc), the counts-fixed bisection leaves it
    // half, and the counts-free one starts at the goal.
    let ample = !forced
        && options.time_limit_s.is_none_or(|limit| {
            limit - bisection.began.elapsed().as_secs_f64() >= 2.0 * PROBE_LIMIT_S
        });
    let share = if ample { 0.5 } else { 1.0 };
    bisection.run(MAX_CONTENTS, share, false, &[0], |_, _| {
        fixed_kinds(w, &counts)
    })?;
    if !forced {
        bisection.run(MAX_FREE_CONTENTS, 1.0, ample, &SLACKS, |target, slack| {
            free_kinds(shape, w, target, slack)
        })?;
    }
    Ok(Repacked {
        plan: bisection.best,
        bound: bisection.bound,
    })
}

/// An expert at one count: a replica of it carries `load` = w_e / `count`.
#[derive(Debug, Clone, Copy)]
struct Kind {
    expert: usize,
    count: usize,
    load: f64,
}

/// The kinds of fixed counts: one per expert.
fn fixed_kinds(w: &[f64], counts: &[usize]) -> Vec<Kind> {
    (0..w.len())
        .map(|e| Kind {
            expert: e,
            count: counts[e],
            load: w[e] / counts[e] as f64,
        })
        .collect()
}

/// The kinds of free counts under `target` (module doc): ceil(w_e / target) to `slack` more,
/// at most G under one-replica-per-GPU.
fn free_kinds(shape: &Shape, w: &[f64], target: f64, slack: usize) -> Vec<Kind> {
    let most = if shape.one_per_gpu {
        shape.gpus
    } else {
        shape.slots
    };
    let mut kinds = Vec::new();
    for (e, &load) in w.iter().enumerate() {
        let least = ((load / target * (1.0 - 1e-12)).ceil() as usize).max(1);
        for count in least..=(least + slack).min(most) {
            kinds.push(Kind {
                expert: e,
                count,
                load: load / count as f64,
            });
        }
    }
    kinds
}

/// The bisection state both of [`repack`]'s runs share: the proved bound and the best plan so
/// far and its load.
struct Bisection<'a> {
    shape: &'a Shape,
    w: &'a [f64],
    options: &'a SolveOptions,
    began: std::time::Instant,
    gap: f64,
    bound: f64,
    high: f64,
    best: Vec<usize>,
}

impl Bisection<'_> {
    /// The load within the gap of the proved bound: a plan there ends the repacking, and none
    /// below it counts for more.
    fn goal(&self) -> f64 {
        self.bound * (1.0 + self.gap)
    }

    /// Up to [`PROBES`] probes between the bound and the best plan's load, none below the
    /// goal, within `share` of the time left: each with the kinds `kinds(target, slack)` gives
    /// for the first of `slacks` whose enumeration stays within `cap` contents (a long probe
    /// at the goal goes the other way: [`LONG_PROBE_S`]). A probe cut at
    /// every slack, or undecided within its limit, lowers the top of the later probes (lower
    /// targets have narrower windows, so fewer contents), and ends the bisection at the goal;
    /// an infeasible one raises the low end, and the bound where it was complete.
    fn run(
        &mut self,
        cap: usize,
        share: f64,
        from_goal: bool,
        slacks: &[usize],
        kinds: impl Fn(f64, usize) -> Vec<Kind>,
    ) -> Result<(), Error> {
        let end = self.options.time_limit_s.map(|limit| {
            let now = self.began.elapsed().as_secs_f64();
            now + (limit - now) * share
        });
        let (mut low, mut top) = (self.bound, self.high);
        for probe in 0..PROBES {
            let left = end.map_or(PROBE_LIMIT_S, |end| {
                end - self.began.elapsed().as_secs_f64()
            });
            if self.high <= self.goal() || left <= 0.0 {
                break;
            }
            let target = if probe == 0 && from_goal {
                self.goal()
            } else {
                ((low + top.min(self.high)) / 2.0).max(self.goal())
            };
            // The probe's clock starts before its enumeration, which it covers. No probe follows
            // one at the goal that is undecided, so that one may take all the time left.
            let limit = if target <= self.goal() {
                left
            } else {
                left.min(PROBE_LIMIT_S)
            };
            // A long probe at the goal tries the slacks from the fewest up, on past an infeasible
            // one that is not complete, with the larger cap; the others from the most down.
            let long = target <= self.goal() && left >= LONG_PROBE_S;
            let (cap, order) = if long {
                (
                    cap.max(MAX_CONTENTS),
                    slacks.iter().rev().copied().collect(),
                )
            } else {
                (cap, slacks.to_vec())
            };
            let options = SolveOptions {
                time_limit_s: Some(limit),
                started: Some(std::time::Instant::now()),
                ..self.options.clone()
            };
            let (shape, w) = (self.shape, self.w);
            let (mut found, mut complete) = (Probe::Cut, false);
            for slack in order {
                let kinds = kinds(target, slack);
                let probe = probe_at(shape, w, &kinds, target, cap, &options)?;
                if matches!(probe, Probe::Cut) {
                    continue;
                }
                (found, complete) = (probe, covers(shape, w, target, &kinds));
                if !(long && matches!(found, Probe::Infeasible) && !complete) {
                    break;
                }
            }
            match found {
                Probe::Plan(p)
                    if check_layer(shape, &p).is_ok() && max_load(shape, w, &p) < self.high =>
                {
                    self.high = max_load(shape, w, &p);
                    self.best = p;
                }
                Probe::Cut | Probe::Undecided if target <= self.goal() => break,
                Probe::Cut | Probe::Undecided => top = target,
                Probe::Infeasible if complete => {
                    low = target;
                    self.bound = self.bound.max(target);
                }
                _ => low = target,
            }
        }
        Ok(())
    }
}

/// Whether `kinds` hold, for every expert, every count a plan whose busiest GPU carries at most
/// `target` may give it (`count_ranges`): then an infeasible probe at `target` proves that no
/// plan carries that little (module doc).
fn covers(shape: &Shape, w: &[f64], target: f64, kinds: &[Kind]) -> bool {
    count_ranges(shape, w, Some(target))
        .iter()
        .enumerate()
        .all(|(e, &(least, most))| {
            (least..=most).all(|c| kinds.iter().any(|k| k.expert == e && k.count == c))
        })
}

/// What a probe found.
enum Probe {
    /// A plan whose busiest GPU carries at most the target.
    Plan(Vec<usize>),
    /// None: the program is infeasible.
    Infeasible,
    /// None within the probe's time limit.
    Undecided,
    /// The enumeration passed its `cap` contents or [`MAX_STEPS`] steps: no program was made.
    Cut,
}

/// A plan of `kinds` whose busiest GPU carries at most `target`, if the probe finds one.
fn probe_at(
    shape: &Shape,
    w: &[f64],
    kinds: &[Kind],
    target: f64,
    cap: usize,
    options: &SolveOptions,
) -> Result<Probe, Error> {
    let total: f64 = w.iter().sum();
    let floor = total - (shape.gpus - 1) as f64 * target;
    let contents = match contents(shape, kinds, floor, target, cap) {
        Some(c) if !c.is_empty() => c,
        Some(_) => return Ok(Probe::Infeasible),
        None => return Ok(Probe::Cut),
    };
    let mut milp = Milp::new("balance repack", Sense::Minimize);
    let gpus = shape.gpus as f64;
    let x: Vec<_> = (0..contents.len())
        .map(|p| milp.integer(format!("x_{p}"), 0.0, gpus))
        .collect();
    milp.row("gpus", x.iter().map(|&v| (v, 1.0)).collect(), gpus, gpus);
    let mut holding = vec![Vec::new(); kinds.len()];
    for (p, content) in contents.iter().enumerate() {
        for (i, &k) in content.iter().enumerate() {
            // Each kind once per content, with its multiplicity there.
            if i == 0 || content[i - 1] != k {
                let n = content.iter().filter(|&&f| f == k).count();
                holding[k].push((x[p], n as f64));
            }
        }
    }
    // An expert of one kind holds its count; of several, the count its binary chooses.
    let mut choices = vec![Vec::new(); shape.experts];
    for (k, mut terms) in holding.into_iter().enumerate() {
        let Kind { expert, count, .. } = kinds[k];
        let c = count as f64;
        if kinds.iter().filter(|o| o.expert == expert).count() == 1 {
            milp.row(format!("count_{expert}"), terms, c, c);
        } else {
            let y = milp.binary(format!("y_{expert}_{count}"));
            choices[expert].push((y, 1.0));
            terms.push((y, -c));
            milp.row(format!("count_{expert}_{count}"), terms, 0.0, 0.0);
        }
    }
    for (e, terms) in choices.into_iter().enumerate() {
        if !terms.is_empty() {
            milp.row(format!("one_count_{e}"), terms, 1.0, 1.0);
        }
    }
    let solved = milp.solve(options, None)?;
    let values = match (solved.status, solved.values) {
        (MilpStatus::Infeasible, _) => return Ok(Probe::Infeasible),
        (_, None) => return Ok(Probe::Undecided),
        (_, Some(values)) => values,
    };
    let mut plan = Vec::with_capacity(shape.slots);
    for (p, content) in contents.iter().enumerate() {
        for _ in 0..values[p].round() as usize {
            plan.extend(content.iter().map(|&k| kinds[k].expert));
        }
    }
    // A solution that does not round to a whole plan proves nothing.
    Ok(if plan.len() == shape.slots {
        Probe::Plan(plan)
    } else {
        Probe::Undecided
    })
}

/// The GPU contents of `kinds` whose load lies in [`floor`, `ceiling`], each a sorted list of
/// kinds (module doc); `None` beyond `cap` contents or [`MAX_STEPS`] steps.
fn contents(
    shape: &Shape,
    kinds: &[Kind],
    floor: f64,
    ceiling: f64,
    cap: usize,
) -> Option<Vec<Vec<usize>>> {
    let m = shape.per_gpu();
    let most: Vec<usize> = kinds
        .iter()
        .map(|k| {
            if shape.one_per_gpu {
                k.count.min(1)
            } else {
                k.count.min(m)
            }
        })
        .collect();
    // Kinds by replica load, lightest first: what is left to add lies between the next
    // replica's load and the heaviest's, per slot.
    let mut order: Vec<usize> = (0..kinds.len()).collect();
    order.sort_by(|&a, &b| kinds[a].load.total_cmp(&kinds[b].load).then(a.cmp(&b)));
    let window = Window {
        heaviest: order.last().map_or(0.0, |&k| kinds[k].load),
        tolerance: 1e-9 * ceiling.abs().max(1.0),
        floor,
        ceiling,
        cap,
        order,
        kinds,
        most,
    };
    let mut out = Vec::new();
    let mut steps = 0;
    window
        .walk(0, m, 0.0, &mut Vec::with_capacity(m), &mut out, &mut steps)
        .then_some(out)
}

/// The enumeration of [`contents`].
struct Window<'a> {
    order: Vec<usize>,
    kinds: &'a [Kind],
    most: Vec<usize>,
    floor: f64,
    ceiling: f64,
    cap: usize,
    heaviest: f64,
    tolerance: f64,
}

impl Window<'_> {
    /// Adds to `out` every completion of `content` (`left` more replicas, from `order[from..]`,
    /// its load so far `sum`); false once `out` holds more than `cap` contents or `steps`
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
            return out.len() <= self.cap;
        }
        for (i, &k) in self.order.iter().enumerate().skip(from) {
            let r = self.kinds[k].load;
            // The rest weighs at least r a slot: past the ceiling here is past it for every
            // later (heavier) kind too.
            if sum + r * left as f64 > self.ceiling + self.tolerance {
                break;
            }
            let most_after = sum + r + self.heaviest * (left - 1) as f64;
            let used = content.iter().filter(|&&f| f == k).count();
            // One count per expert in a content.
            let other_count = content
                .iter()
                .any(|&f| f != k && self.kinds[f].expert == self.kinds[k].expert);
            if most_after < self.floor - self.tolerance || used >= self.most[k] || other_count {
                continue;
            }
            // `from` stays at i: the same kind again while its multiplicity allows.
            content.push(k);
            let more = self.walk(i, left - 1, sum + r, content, out, steps);
            content.pop();
            if !more {
                return false;
            }
        }
        true
    }
}
