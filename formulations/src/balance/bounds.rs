//! Lower bounds on a layer's optimum (the busiest GPU's load), valid for every plan, each
//! proved here and tested against exhaustive optima.
//!
//! Notation: E experts with loads w_e >= 0, S slots on G GPUs, m = S / G slots per GPU, a plan
//! gives expert e a count c_e in [1, cap] (sum S; cap = [`Shape::cap`]) and puts S replicas,
//! c_e of load w_e / c_e each, m on every GPU. T is the plan's busiest GPU.
//!
//! * **Mean** ([`mean`]): T >= W / G, W = sum w_e. The replicas' loads sum to W whatever the
//!   counts, and the busiest of G GPUs carries at least their average.
//! * **Low replica** q = min_e w_e / cap: every replica carries at least q, since c_e <= cap.
//! * **Threshold** ([`threshold`], for a load a and j in 0..m): let N_a(c) be the number of
//!   replicas of load >= a under counts c. If N_a(c) > j G for every count vector c, then
//!   T >= (j + 1) a + (m - j - 1) q. Proof: the plan's counts c have more than j G replicas of
//!   load >= a on G GPUs, so some GPU holds j + 1 of them (pigeonhole); it holds m replicas in
//!   all, and the other m - j - 1 carry at least q each. With j = 0 this is the replication
//!   bound: the least a with N_a(c) >= 1 for all c is min_c max_e w_e / c_e, the value EPLB's
//!   greedy replication reaches (its docstring: "such that the maximum load of all replicas is
//!   minimized"), plus (m - 1) q.
//!
//! min_c N_a(c) is exact, not relaxed: N_a(c) = sum_e c_e [w_e / c_e >= a] is a sum over experts
//! of a function of c_e alone, so its minimum over sum c_e = S, 1 <= c_e <= cap is a
//! resource-allocation DP over experts and slots ([`min_heavy_replicas`]). Options only shrink
//! the set of plans, so a bound over all count vectors holds under them too (the hierarchical
//! option's per-node sums are dropped: a relaxation).

use super::model::Shape;

/// W / G.
pub fn mean(shape: &Shape, w: &[f64]) -> f64 {
    w.iter().sum::<f64>() / shape.gpus as f64
}

/// The least load of any replica in any plan, min_e w_e / cap.
pub fn low_replica(shape: &Shape, w: &[f64]) -> f64 {
    let cap = shape.cap() as f64;
    w.iter().map(|&x| x / cap).fold(f64::INFINITY, f64::min)
}

/// True when the replica of an expert of load `w` at count `c` carries at least `a`.
fn heavy(w: f64, c: usize, a: f64) -> bool {
    w / c as f64 >= a
}

/// min over count vectors (sum S, each in 1..=cap) of the replicas of load >= `a` (module doc):
/// a DP over experts, `best[s]` the fewest heavy replicas of the experts so far in `s` slots.
/// An expert's cost is c for c <= k (its replicas stay >= a) and 0 above; O(E S cap).
pub fn min_heavy_replicas(shape: &Shape, w: &[f64], a: f64) -> usize {
    let (s_total, cap) = (shape.slots, shape.cap());
    const NONE: usize = usize::MAX / 2;
    let mut best = vec![NONE; s_total + 1];
    best[0] = 0;
    let mut used = 0;
    for &x in w {
        // k: the largest count whose replicas still carry >= a (0 if none).
        let k = (1..=cap).take_while(|&c| heavy(x, c, a)).count();
        let top = (used + cap).min(s_total);
        let mut next = vec![NONE; s_total + 1];
        for s in 1..=top {
            let mut v = NONE;
            for c in 1..=cap.min(s) {
                let prev = best[s - c];
                if prev >= NONE {
                    continue;
                }
                let cost = if c <= k { c } else { 0 };
                v = v.min(prev + cost);
            }
            next[s] = v;
        }
        best = next;
        used = top;
    }
    best[s_total]
}

/// The threshold bound (module doc) at its best over a in the replicas' possible loads
/// {w_e / c} and j in 0..m: the largest (j + 1) a + (m - j - 1) q proved.
pub fn threshold(shape: &Shape, w: &[f64]) -> f64 {
    let (m, g, cap) = (shape.per_gpu(), shape.gpus, shape.cap());
    let q = low_replica(shape, w);
    let mut candidates: Vec<f64> = w
        .iter()
        .flat_map(|&x| (1..=cap).map(move |c| x / c as f64))
        .filter(|&a| a > 0.0)
        .collect();
    candidates.sort_by(f64::total_cmp);
    candidates.dedup();
    let mut best: f64 = 0.0;
    for j in 0..m {
        // N_a is nonincreasing in a: the largest candidate with min N_a > j G, by bisection.
        let holds = |a: f64| min_heavy_replicas(shape, w, a) > j * g;
        let (mut lo, mut hi) = (0usize, candidates.len());
        // Invariant: candidates[..lo] hold, candidates[hi..] do not.
        while lo < hi {
            let mid = (lo + hi) / 2;
            if holds(candidates[mid]) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo > 0 {
            let a = candidates[lo - 1];
            best = best.max((j + 1) as f64 * a + (m - j - 1) as f64 * q);
        }
    }
    best
}

/// The best of the bounds (module doc).
pub fn lower_bound(shape: &Shape, w: &[f64]) -> f64 {
    mean(shape, w).max(threshold(shape, w))
}
