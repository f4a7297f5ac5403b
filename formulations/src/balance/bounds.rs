//! Lower bounds on a layer's optimum (the busiest GPU's load), valid for every plan, each
//! proved here and tested against exhaustive optima.
//!
//! Notation: E experts with loads w_e >= 0, S slots on G GPUs, m = S / G slots per GPU, a plan
//! gives expert e a count c_e (sum S) and puts S replicas, c_e of load w_e / c_e each, m on every
//! GPU. T is the plan's busiest GPU. Every bound takes count ranges c_e in [lo_e, hi_e] that
//! every plan of interest satisfies: [`super::milp::count_ranges`] derives them from a plan's
//! value U (a plan with T <= U has w_e / c_e <= U, so c_e >= lo_e; the others need their lo,
//! so c_e <= S - sum_{f != e} lo_f; and c_e <= cap, [`Shape::cap`]). A bound B proved over the
//! plans with T <= U gives min(B, U) <= OPT, since an optimal plan is one of them.
//!
//! * **Mean** ([`mean`]): T >= W / G, W = sum w_e. The replicas' loads sum to W whatever the
//!   counts, and the busiest of G GPUs carries at least their average.
//! * **Smallest replicas** ([`smallest`]): let M hold hi_e copies of w_e / hi_e for every e.
//!   Any r replicas of a plan sum to at least the r smallest elements of M: expert e's c_e <=
//!   hi_e replicas each carry w_e / c_e >= w_e / hi_e, so the plan's replicas map one-to-one
//!   onto elements of M no larger than them.
//! * **Threshold** ([`threshold`], for a load a and j in 0..m): let N_a(c) be the number of
//!   replicas of load >= a under counts c. If N_a(c) > j G for every count vector c in the
//!   ranges, then T >= (j + 1) a + s_{m-j-1}, s_r the sum of the r smallest elements of M.
//!   Proof: the plan has more than j G replicas of load >= a on G GPUs, so some GPU holds
//!   j + 1 of them (pigeonhole); its other m - j - 1 replicas sum to at least s_{m-j-1}. With
//!   j = 0 this is the replication bound: the least a with N_a(c) >= 1 for all c is
//!   min_c max_e w_e / c_e, the value EPLB's greedy replication reaches (its docstring: "such
//!   that the maximum load of all replicas is minimized"). With S = E (every count 1) and
//!   j = 0 it is the heaviest expert plus the m - 1 lightest.
//!
//! * **Pair** ([`pair`], for loads a >= b): weigh a replica psi(p) = [p >= a] + [p >= b]. A GPU
//!   whose psi-sum is 3 or more holds a replica >= a and another >= b (load >= a + b +
//!   s_{m-2}) or three replicas >= b (load >= 3 b + s_{m-3}; impossible when m = 2). So if
//!   sum_e c_e psi(w_e / c_e) > 2 G for every count vector c, some GPU's psi-sum exceeds 2
//!   and T >= min(a + b + s_{m-2}, 3 b + s_{m-3}). With m = 2 and fixed counts it is the
//!   classical pairing bound p_i + p_{2G+1-i} (the i-th largest replica and the
//!   (2G+1-i)-th).
//!
//! * **Heaviest replicas** ([`heaviest`], for i in 1..=G): let M_lo hold lo_e copies of
//!   w_e / hi_e for every e. A plan's replicas include, for every e, lo_e that carry at least
//!   w_e / hi_e, so its k-th largest replica is at least the k-th largest element h_k of M_lo,
//!   and its i largest sum to at least H_i = h_1 + ... + h_i. Either its i largest replicas
//!   lie on i distinct GPUs, which then hold them and (m - 1) i other replicas, whose loads sum
//!   to at least H_i + s_{(m-1) i} (s as above, now up to (m - 1) G elements), so the busiest
//!   of them carries at least A_i = (H_i + s_{(m-1) i}) / i; or two of them share a GPU, the
//!   larger at least h_{i-1} and the smaller at least h_i, so that GPU carries at least
//!   B_i = h_{i-1} + h_i + s_{m-2}. So T >= min(A_i, B_i) (B_1 is infinite). With every count
//!   fixed and the heaviest experts too heavy to share a GPU, it is the bin of the i-th
//!   heaviest expert filled with the lightest ones on average.
//!
//! * **Grid** ([`grid`], [`on_grid`]): with integer loads, every replica carries w_e / c_e, a
//!   multiple of 1 / L for L the least common multiple of every count in the ranges, so every
//!   GPU's load and T are multiples of 1 / L; a lower bound B on T then rounds up to the next
//!   multiple, ceil(B L) / L (B L is first lowered by a relative 1e-9, so that a B computed a
//!   hair above a multiple it equals does not round past it). It applies to any proved bound,
//!   the MILP's too; without integer loads, or with L above [`MAX_GRID`], it is not used.
//!
//! min_c N_a(c) is exact, not relaxed: N_a(c) = sum_e c_e [w_e / c_e >= a] is a sum over experts
//! of a function of c_e alone, so its minimum over sum c_e = S, c_e in its range, is a
//! resource-allocation DP over experts and slots ([`min_weight`]; the same for the pair bound's
//! weights). Options only shrink
//! the set of plans, so a bound over all count vectors holds under them too (the hierarchical
//! option's per-node sums are dropped: a relaxation; the exact method bounds each node's
//! experts on its own, `moe_opt::balance::exact`).

use super::model::Shape;

/// W / G.
pub fn mean(shape: &Shape, w: &[f64]) -> f64 {
    w.iter().sum::<f64>() / shape.gpus as f64
}

/// The sums s_0, s_1, ..., s_m of the r smallest elements of M (module doc).
pub fn smallest(shape: &Shape, w: &[f64], ranges: &[(usize, usize)]) -> Vec<f64> {
    smallest_up_to(w, ranges, shape.per_gpu())
}

/// The sums s_0, s_1, ..., s_n of the r smallest elements of M (fewer when M has fewer).
fn smallest_up_to(w: &[f64], ranges: &[(usize, usize)], n: usize) -> Vec<f64> {
    let mut values: Vec<(f64, usize)> = w
        .iter()
        .zip(ranges)
        .map(|(&x, &(_, hi))| (x / hi as f64, hi))
        .collect();
    values.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut sums = vec![0.0];
    'fill: for (v, copies) in values {
        for _ in 0..copies {
            if sums.len() > n {
                break 'fill;
            }
            sums.push(sums[sums.len() - 1] + v);
        }
    }
    sums
}

/// min over count vectors (sum S, c_e in its range) of sum_e c_e psi(w_e / c_e), for a weight
/// psi of a replica's load (module doc): a DP over experts, `best[s]` the least sum of the
/// experts so far in `s` slots; O(S x range) an expert.
pub fn min_weight(
    shape: &Shape,
    w: &[f64],
    ranges: &[(usize, usize)],
    psi: impl Fn(f64) -> usize,
) -> usize {
    let s_total = shape.slots;
    const NONE: usize = usize::MAX / 2;
    let mut best = vec![NONE; s_total + 1];
    best[0] = 0;
    for (&x, &(lo, hi)) in w.iter().zip(ranges) {
        let mut next = vec![NONE; s_total + 1];
        for (s, &prev) in best.iter().enumerate() {
            if prev >= NONE {
                continue;
            }
            for c in lo..=hi.min(s_total - s) {
                let cost = c * psi(x / c as f64);
                next[s + c] = next[s + c].min(prev + cost);
            }
        }
        best = next;
    }
    best[s_total]
}

/// The threshold bound (module doc) at its best over a in the replicas' possible loads
/// {w_e / c} and j in 0..m: the largest (j + 1) a + s_{m-j-1} proved.
pub fn threshold(shape: &Shape, w: &[f64], ranges: &[(usize, usize)]) -> f64 {
    let (m, g) = (shape.per_gpu(), shape.gpus);
    let low = smallest(shape, w, ranges);
    let candidates = candidates(w, ranges);
    let mut best: f64 = 0.0;
    for j in 0..m {
        // N_a is nonincreasing in a: the largest candidate with min N_a > j G, by bisection.
        let lo = candidates
            .partition_point(|&a| min_weight(shape, w, ranges, |p| usize::from(p >= a)) > j * g);
        if lo > 0 {
            let a = candidates[lo - 1];
            let rest = low.get(m - j - 1).copied().unwrap_or(0.0);
            best = best.max((j + 1) as f64 * a + rest);
        }
    }
    best
}

/// The pair bound (module doc) at its best over the [`PAIR_CANDIDATES`] largest loads a (and
/// every b <= a, by bisection).
pub fn pair(shape: &Shape, w: &[f64], ranges: &[(usize, usize)]) -> f64 {
    let (m, g) = (shape.per_gpu(), shape.gpus);
    if m < 2 {
        return 0.0;
    }
    let low = smallest(shape, w, ranges);
    let candidates = candidates(w, ranges);
    let mut best: f64 = 0.0;
    for ai in (0..candidates.len()).rev().take(PAIR_CANDIDATES) {
        let a = candidates[ai];
        let lo = candidates[..=ai].partition_point(|&b| {
            min_weight(shape, w, ranges, |p| {
                usize::from(p >= a) + usize::from(p >= b)
            }) > 2 * g
        });
        if lo > 0 {
            let b = candidates[lo - 1];
            let two = a + b + low[m - 2];
            let three = if m >= 3 {
                3.0 * b + low[m - 3]
            } else {
                f64::INFINITY
            };
            best = best.max(two.min(three));
        }
    }
    best
}

/// The heaviest-replicas bound (module doc) at its best over i in 1..=G.
pub fn heaviest(shape: &Shape, w: &[f64], ranges: &[(usize, usize)]) -> f64 {
    let (m, g) = (shape.per_gpu(), shape.gpus);
    let mut h: Vec<f64> = w
        .iter()
        .zip(ranges)
        .flat_map(|(&x, &(lo, hi))| std::iter::repeat_n(x / hi as f64, lo))
        .collect();
    h.sort_by(|a, b| b.total_cmp(a));
    let low = smallest_up_to(w, ranges, (m - 1) * g);
    let mut best: f64 = 0.0;
    let mut top = 0.0;
    for i in 1..=g.min(h.len()) {
        top += h[i - 1];
        let Some(&fill) = low.get((m - 1) * i) else {
            break;
        };
        let apart = (top + fill) / i as f64;
        let shared = if i >= 2 && m >= 2 {
            h[i - 2] + h[i - 1] + low[m - 2]
        } else {
            f64::INFINITY
        };
        best = best.max(apart.min(shared));
    }
    best
}

/// How many of the largest replica loads the pair bound tries as a.
pub const PAIR_CANDIDATES: usize = 48;

/// The replicas' possible loads w_e / c, c in the ranges, positive, ascending, distinct.
fn candidates(w: &[f64], ranges: &[(usize, usize)]) -> Vec<f64> {
    let mut candidates: Vec<f64> = w
        .iter()
        .zip(ranges)
        .flat_map(|(&x, &(lo, hi))| (lo..=hi).map(move |c| x / c as f64))
        .filter(|&a| a > 0.0)
        .collect();
    candidates.sort_by(f64::total_cmp);
    candidates.dedup();
    candidates
}

/// The largest grid denominator L used (module doc: beyond it the rounding gains nothing).
pub const MAX_GRID: u64 = 1 << 20;

/// L, the least common multiple of every count in `ranges`, when every load is an integer and
/// L is at most [`MAX_GRID`] (module doc).
pub fn grid(w: &[f64], ranges: &[(usize, usize)]) -> Option<u64> {
    if !w.iter().all(|x| x.is_finite() && x.fract() == 0.0) {
        return None;
    }
    let mut l = 1u64;
    for &(lo, hi) in ranges {
        for k in lo.max(1)..=hi {
            l = num_integer::lcm(l, k as u64);
            if l > MAX_GRID {
                return None;
            }
        }
    }
    Some(l)
}

/// A lower bound rounded up to the grid of 1 / `l` (module doc).
pub fn on_grid(bound: f64, l: Option<u64>) -> f64 {
    match l {
        Some(l) if bound > 0.0 => {
            let scaled = bound * l as f64;
            (scaled - 1e-9 * scaled).ceil() / l as f64
        }
        _ => bound,
    }
}

/// The best of the bounds (module doc) over the plans whose counts lie in `ranges`.
pub fn lower_bound(shape: &Shape, w: &[f64], ranges: &[(usize, usize)]) -> f64 {
    let best = mean(shape, w)
        .max(threshold(shape, w, ranges))
        .max(pair(shape, w, ranges))
        .max(heaviest(shape, w, ranges));
    on_grid(best, grid(w, ranges))
}
