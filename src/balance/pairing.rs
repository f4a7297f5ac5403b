//! Two slots per GPU, solved exactly by the counts: the exact method's shortcut where m = 2.
//!
//! With m = S / G = 2 a plan is a count vector c (sum S) and a perfect matching of its 2 G
//! replicas into G pairs, one pair a GPU; the busiest GPU is the largest pair sum.
//!
//! * **Sorted pairing is optimal for fixed counts.** Sort the replicas r_1 <= ... <= r_2G and
//!   pair r_i with r_(2G+1-i); call the largest of these sums P(c). No matching of the same
//!   replicas has a smaller largest pair. Proof by induction on G: in any matching, let r_2G
//!   be paired with r_j and r_1 with r_k. Re-pairing them as (r_2G, r_1) and (r_j, r_k) does
//!   not raise the largest sum, since r_2G + r_1 <= r_2G + r_j and r_j + r_k <= r_2G + r_j.
//!   The pair (r_1, r_2G) is then fixed, and the rest is the same problem on G - 1 pairs,
//!   whose sorted pairing is what remains of the sorted pairing.
//! * **Without the one-per-GPU option,** every matching is a plan: two replicas of one expert
//!   may share a GPU. So OPT = min_c P(c) over the count vectors in the ranges
//!   ([`formulations::balance::milp::count_ranges`]: every plan at most as busy as the
//!   incumbent U has its counts there, and an optimal plan is one of them).
//! * **With it,** a plan's replicas still form a matching, so min_c P(c) is a lower bound. The
//!   sorted pairing of a vector is a plan when none of its pairs joins two replicas of one
//!   expert, so the least P(c) over such vectors is a plan's value. The two meet on most
//!   layers; where they do not, the MILP takes over from both.
//!
//! The count vectors are enumerated, expert by expert (at most [`MAX_COUNT_VECTORS`]; beyond,
//! [`solve`] declines and the MILP alone decides). Replicas sort by (load, expert), so one
//! expert's replicas lie side by side.

use formulations::balance::Shape;

/// The most count vectors [`solve`] enumerates (a layer of Qwen1.5-MoE on 32 GPUs, 64 slots:
/// under a second, release build).
pub const MAX_COUNT_VECTORS: u64 = 2_000_000;

/// What [`solve`] proves of a layer with two slots per GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    /// min_c P(c): no plan is less busy (module doc).
    pub bound: f64,
    /// The best sorted pairing that is a plan (`phy2log`, GPU g on slots 2g and 2g + 1) and
    /// its busiest GPU; `None` when every vector's pairing breaks the one-per-GPU option.
    pub plan: Option<(Vec<usize>, f64)>,
}

/// The least largest pair over every count vector within `ranges` (module doc). `None` when
/// m != 2, the ranges admit no vector, or more than [`MAX_COUNT_VECTORS`] of them.
///
/// # Complexity
/// V count vectors of E experts on S slots, R the widest range: O(E S R) to count the vectors,
/// then a sort of the S replicas per vector; O(E S R + V S log S) time, O(E + S) memory.
///
/// # Examples
/// ```
/// use formulations::balance::milp::count_ranges;
/// use formulations::balance::Shape;
/// use moe_opt::balance::pairing::solve;
///
/// // Loads 9, 4, 3 on 4 slots of 2 GPUs: expert 0 twice (4.5 + 4.5) pairs as 4.5 + 3 and
/// // 4.5 + 4; doubling expert 1 or 2 instead leaves 9 on one GPU.
/// let shape = Shape { experts: 3, slots: 4, gpus: 2, nodes: 1, groups: 1,
///                     one_per_gpu: false, hierarchical: false };
/// let w = [9.0, 4.0, 3.0];
/// let paired = solve(&shape, &w, &count_ranges(&shape, &w, None)).unwrap();
/// assert_eq!(paired.bound, 8.5);
/// assert_eq!(paired.plan, Some((vec![2, 0, 1, 0], 8.5)));
/// ```
pub fn solve(shape: &Shape, w: &[f64], ranges: &[(usize, usize)]) -> Option<Paired> {
    if shape.per_gpu() != 2 || vectors(shape.slots, ranges) > MAX_COUNT_VECTORS {
        return None;
    }
    // The least and most slots the experts from e on can take.
    let mut rest = vec![(0, 0); w.len() + 1];
    for e in (0..w.len()).rev() {
        rest[e] = (rest[e + 1].0 + ranges[e].0, rest[e + 1].1 + ranges[e].1);
    }
    let mut search = Search {
        w,
        ranges,
        rest,
        one_per_gpu: shape.one_per_gpu,
        counts: vec![0; w.len()],
        replicas: Vec::with_capacity(shape.slots),
        bound: f64::INFINITY,
        plan: None,
    };
    search.go(0, shape.slots);
    search.bound.is_finite().then_some(Paired {
        bound: search.bound,
        plan: search.plan,
    })
}

/// The number of count vectors with sum `slots` within `ranges` (saturating), by a DP over
/// experts.
fn vectors(slots: usize, ranges: &[(usize, usize)]) -> u64 {
    let mut ways = vec![0u64; slots + 1];
    ways[0] = 1;
    for &(lo, hi) in ranges {
        let mut next = vec![0u64; slots + 1];
        for (s, &n) in ways.iter().enumerate().filter(|(_, &n)| n > 0) {
            for c in lo..=hi.min(slots - s) {
                next[s + c] = next[s + c].saturating_add(n);
            }
        }
        ways = next;
    }
    ways[slots]
}

/// The enumeration's state.
struct Search<'a> {
    w: &'a [f64],
    ranges: &'a [(usize, usize)],
    rest: Vec<(usize, usize)>,
    one_per_gpu: bool,
    counts: Vec<usize>,
    replicas: Vec<(f64, usize)>,
    bound: f64,
    plan: Option<(Vec<usize>, f64)>,
}

impl Search<'_> {
    /// Counts for experts `e..` with `left` slots to fill.
    fn go(&mut self, e: usize, left: usize) {
        if e == self.w.len() {
            if left == 0 {
                self.pair();
            }
            return;
        }
        let (lo, hi) = self.ranges[e];
        // The experts after e must still be able to take what is left.
        let (min_rest, max_rest) = self.rest[e + 1];
        for c in lo..=hi.min(left) {
            if left - c < min_rest || left - c > max_rest {
                continue;
            }
            self.counts[e] = c;
            self.go(e + 1, left - c);
        }
    }

    /// The sorted pairing of the current counts: updates the bound and, when it is a plan,
    /// the best plan.
    fn pair(&mut self) {
        self.replicas.clear();
        for (e, (&x, &c)) in self.w.iter().zip(&self.counts).enumerate() {
            // As the evaluator divides.
            let load = x / c as f64;
            self.replicas.extend(std::iter::repeat_n((load, e), c));
        }
        self.replicas
            .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let n = self.replicas.len();
        let pairs = (0..n / 2).map(|i| (self.replicas[i], self.replicas[n - 1 - i]));
        let value = pairs.clone().map(|(a, b)| a.0 + b.0).fold(0.0, f64::max);
        self.bound = self.bound.min(value);
        let is_plan = !self.one_per_gpu || pairs.clone().all(|(a, b)| a.1 != b.1);
        if is_plan && self.plan.as_ref().is_none_or(|(_, v)| value < *v) {
            let plan = pairs.flat_map(|(a, b)| [a.1, b.1]).collect();
            self.plan = Some((plan, value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_counts_the_compositions() {
        // 3 experts in [1, 3] with sum 5: the compositions of 2 extras into 3 parts, C(4, 2).
        assert_eq!(vectors(5, &[(1, 3); 3]), 6);
        assert_eq!(vectors(2, &[(1, 3); 3]), 0);
    }
}
