//! Independent computations the claims compare the planner with. Nothing here calls eq. (24),
//! Alg. 2 or Alg. 4's hit-pattern formula:
//!
//! * distributions over the explicit list of k-subsets ([`k_subsets`]): the conditional
//!   Poisson distribution of given q, normalised by its own sum ([`conditional_poisson`]),
//!   marginals, entropy, total variation;
//! * the maximum-entropy distribution over k-subsets with given inclusion probabilities,
//!   computed by Newton's method on the convex dual of eq. (15) over the explicit subsets
//!   ([`max_entropy`]);
//! * the expected makespan of a split by enumerating k-subsets ([`expected_makespan_by_subsets`])
//!   or by a joint dynamic programme over the counts of all five pools at once
//!   ([`expected_makespan_by_joint_dp`]), instead of the product of per-pool Poisson binomials
//!   divided by Phi_N(k).
//!
//! ## The dual (Thm. D.1, eqs. (15)-(18))
//!
//! Maximising entropy over distributions on k-subsets with marginals f has the dual
//! min_lambda phi(lambda) = log sum_S exp(sum_{i in S} lambda_i) - sum_i lambda_i f_i. Its
//! gradient is m(lambda) - f (m the marginals of the Gibbs distribution) and its Hessian the
//! covariance of the indicators, which is singular along (1, ..., 1) because |S| = k; Newton's
//! step solves (H + 1 1^T) d = -g, which gives H d = -g and 1^T d = 0 since 1^T g = 0. Steps
//! are damped by backtracking on phi (Armijo, factor 1/2). Experts with f_i = 0 (f_i = 1) are in
//! no (every) subset of positive probability, so the dual runs over the subsets that respect
//! this.

use formulations::zipmoe::pool::{estimate_makespan_s, PoolSizes, ReconstructionCosts};
use nalgebra::{DMatrix, DVector};

/// Most k-subsets enumerated.
pub const MAX_SUBSETS: usize = 500_000;

/// All k-subsets of 0..n as bit masks, in increasing order of the mask (n <= 63). `None` when
/// there are more than [`MAX_SUBSETS`].
pub fn k_subsets(n: usize, k: usize) -> Option<Vec<u64>> {
    if n > 63 || k > n {
        return None;
    }
    let mut count: u128 = 1;
    for i in 0..k as u128 {
        count = count * (n as u128 - i) / (i + 1);
        if count > MAX_SUBSETS as u128 {
            return None;
        }
    }
    if k == 0 {
        return Some(vec![0]);
    }
    // Gosper's hack over n-bit masks.
    let mut out = Vec::with_capacity(count as usize);
    let mut s: u64 = (1u64 << k) - 1;
    let limit = 1u64 << n;
    while s < limit {
        out.push(s);
        let c = s & s.wrapping_neg();
        let r = s + c;
        s = (((r ^ s) >> 2) / c) | r;
    }
    Some(out)
}

fn members(s: u64) -> impl Iterator<Item = usize> {
    (0..64).filter(move |&i| s >> i & 1 == 1)
}

/// P(S) proportional to prod_{i in S} q_i prod_{i not in S} (1 - q_i) over `subsets`,
/// normalised by the sum over the list (eq. (19)-(22) without Phi_N(k)).
pub fn conditional_poisson(q: &[f64], subsets: &[u64]) -> Vec<f64> {
    let raw: Vec<f64> = subsets
        .iter()
        .map(|&s| {
            q.iter()
                .enumerate()
                .map(|(i, &qi)| if s >> i & 1 == 1 { qi } else { 1.0 - qi })
                .product()
        })
        .collect();
    let total: f64 = raw.iter().sum();
    raw.iter().map(|r| r / total).collect()
}

/// Inclusion probabilities of the conditional Poisson distribution of q over k-subsets
/// without enumerating them: m_i = q_i P(B_{-i} = k - 1) / P(B = k), with B the number of
/// successes of independent Bernoulli(q_j) trials and B_{-i} the same without trial i (the
/// factor prod_j (1 - q_j) of eq. (19) cancels). Each distribution comes from its own
/// Poisson-binomial DP on q, not from eq. (24)'s weights or their prefix and suffix tables.
/// `None` when P(B = k) = 0 (no k-subset of positive probability).
pub fn marginals_by_poisson_binomial(q: &[f64], k: usize) -> Option<Vec<f64>> {
    // P(B = j) for j = 0..=k over the trials `skip` leaves in.
    let counts = |skip: Option<usize>| {
        let mut p = vec![0.0; k + 1];
        p[0] = 1.0;
        for (j, &qj) in q.iter().enumerate() {
            if Some(j) == skip {
                continue;
            }
            for c in (0..=k).rev() {
                let from_below = if c > 0 { p[c - 1] * qj } else { 0.0 };
                p[c] = p[c] * (1.0 - qj) + from_below;
            }
        }
        p
    };
    let total = counts(None)[k];
    if total <= 0.0 || k == 0 {
        return (total > 0.0).then(|| vec![0.0; q.len()]);
    }
    Some(
        (0..q.len())
            .map(|i| q[i] * counts(Some(i))[k - 1] / total)
            .collect(),
    )
}

/// Inclusion probabilities of a distribution over `subsets` of 0..n.
pub fn marginals(subsets: &[u64], p: &[f64], n: usize) -> Vec<f64> {
    let mut m = vec![0.0; n];
    for (&s, &ps) in subsets.iter().zip(p) {
        for i in members(s) {
            m[i] += ps;
        }
    }
    m
}

/// Shannon entropy -sum p log p, nats (0 log 0 = 0).
pub fn entropy(p: &[f64]) -> f64 {
    -p.iter()
        .filter(|&&x| x > 0.0)
        .map(|&x| x * x.ln())
        .sum::<f64>()
}

/// Total variation distance (1/2) sum |p - r|.
pub fn total_variation(p: &[f64], r: &[f64]) -> f64 {
    0.5 * p.iter().zip(r).map(|(a, b)| (a - b).abs()).sum::<f64>()
}

/// The maximum-entropy distribution found by [`max_entropy`].
#[derive(Debug, Clone, PartialEq)]
pub struct MaxEntropy {
    /// P*(S) over the subsets given.
    pub probabilities: Vec<f64>,
    /// Newton steps taken.
    pub iterations: u32,
    /// max_i |m_i - f_i| at the end.
    pub residual: f64,
}

/// The maximum-entropy distribution over the k-subsets `subsets` of 0..f.len() with
/// inclusion probabilities f (module doc), to `tolerance` on the marginals. Errors: no
/// convergence in 500 Newton steps, or a singular system.
pub fn max_entropy(f: &[f64], subsets: &[u64], tolerance: f64) -> Result<MaxEntropy, String> {
    let n = f.len();
    let forced: u64 = (0..n).filter(|&i| f[i] == 1.0).map(|i| 1u64 << i).sum();
    let banned: u64 = (0..n).filter(|&i| f[i] == 0.0).map(|i| 1u64 << i).sum();
    let free: Vec<usize> = (0..n).filter(|&i| f[i] > 0.0 && f[i] < 1.0).collect();
    let support: Vec<usize> = (0..subsets.len())
        .filter(|&j| subsets[j] & forced == forced && subsets[j] & banned == 0)
        .collect();
    if support.is_empty() {
        return Err("no k-subset respects the experts with f = 0 or 1".into());
    }
    let finish = |weights: Vec<f64>, iterations| {
        let mut p = vec![0.0; subsets.len()];
        for (&j, &w) in support.iter().zip(&weights) {
            p[j] = w;
        }
        let m = marginals(subsets, &p, n);
        let residual = m
            .iter()
            .zip(f)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        MaxEntropy {
            probabilities: p,
            iterations,
            residual,
        }
    };
    let d = free.len();
    if d == 0 || support.len() == 1 {
        let w = vec![1.0 / support.len() as f64; support.len()];
        return Ok(finish(w, 0));
    }
    // x[j][a] = 1 when free expert a is in support subset j.
    let x: Vec<Vec<f64>> = support
        .iter()
        .map(|&j| {
            free.iter()
                .map(|&i| f64::from(u8::from(subsets[j] >> i & 1 == 1)))
                .collect()
        })
        .collect();
    let target: Vec<f64> = free.iter().map(|&i| f[i]).collect();
    // phi(lambda) and the Gibbs weights.
    let evaluate = |lambda: &[f64]| -> (f64, Vec<f64>) {
        let scores: Vec<f64> = x
            .iter()
            .map(|row| row.iter().zip(lambda).map(|(a, l)| a * l).sum())
            .collect();
        let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
        let z: f64 = e.iter().sum();
        let log_z = top + z.ln();
        let phi = log_z - lambda.iter().zip(&target).map(|(l, t)| l * t).sum::<f64>();
        (phi, e.iter().map(|w| w / z).collect())
    };
    let mut lambda: Vec<f64> = target.iter().map(|&t| (t / (1.0 - t)).ln()).collect();
    let (mut phi, mut p) = evaluate(&lambda);
    for iteration in 0..500u32 {
        let mut m = vec![0.0; d];
        for (row, &pj) in x.iter().zip(&p) {
            for a in 0..d {
                m[a] += row[a] * pj;
            }
        }
        let g: Vec<f64> = m.iter().zip(&target).map(|(a, b)| a - b).collect();
        if g.iter().all(|v| v.abs() <= tolerance) {
            return Ok(finish(p, iteration));
        }
        let mut h = DMatrix::from_element(d, d, 1.0);
        for (row, &pj) in x.iter().zip(&p) {
            for a in 0..d {
                if row[a] == 0.0 {
                    continue;
                }
                for b in 0..d {
                    h[(a, b)] += pj * row[b];
                }
            }
        }
        for a in 0..d {
            for b in 0..d {
                h[(a, b)] -= m[a] * m[b];
            }
        }
        let step = h
            .lu()
            .solve(&DVector::from_iterator(d, g.iter().map(|v| -v)))
            .ok_or("singular Newton system")?;
        let slope: f64 = g.iter().zip(&step).map(|(a, b)| a * b).sum();
        let mut t = 1.0;
        loop {
            let trial: Vec<f64> = lambda.iter().zip(&step).map(|(l, s)| l + t * s).collect();
            let (trial_phi, trial_p) = evaluate(&trial);
            if trial_phi <= phi + 1e-4 * t * slope || t < 1e-12 {
                lambda = trial;
                phi = trial_phi;
                p = trial_p;
                break;
            }
            t *= 0.5;
        }
    }
    Err(format!(
        "Newton's method did not reach {tolerance} in 500 steps"
    ))
}

/// Which pool (0..4 for F, C, S, E; 4 for the Miss Pool) each rank belongs to.
pub fn rank_pools(sizes: &PoolSizes) -> Vec<usize> {
    let mut out = Vec::new();
    for (p, &s) in sizes.experts.iter().chain([&sizes.miss]).enumerate() {
        out.extend(std::iter::repeat_n(p, s));
    }
    out
}

/// Expected Alg. 3 makespan under the conditional Poisson distribution of q by enumerating
/// every k-subset; `None` when there are too many.
pub fn expected_makespan_by_subsets(
    q: &[f64],
    k: usize,
    sizes: &PoolSizes,
    costs: &ReconstructionCosts,
) -> Option<f64> {
    let subsets = k_subsets(q.len(), k)?;
    let p = conditional_poisson(q, &subsets);
    let pools = rank_pools(sizes);
    Some(
        subsets
            .iter()
            .zip(&p)
            .map(|(&s, &ps)| {
                let mut hits = [0usize; 4];
                for i in members(s) {
                    if pools[i] < 4 {
                        hits[pools[i]] += 1;
                    }
                }
                ps * estimate_makespan_s(k, hits, costs)
            })
            .sum(),
    )
}

/// The same expectation by one dynamic programme over the ranks whose state is the count of
/// selected experts in each of the five pools (total at most k), conditioned on a total of k
/// at the end. Only the states reached so far are visited (at most C(k + 5, 5) of the
/// (k + 1)^5 slots), so a split of a 64-expert Top-6 layer costs about 64 x 462 x 2 steps.
pub fn expected_makespan_by_joint_dp(
    q: &[f64],
    k: usize,
    sizes: &PoolSizes,
    costs: &ReconstructionCosts,
) -> f64 {
    let pools = rank_pools(sizes);
    let b = k + 1;
    let index = |c: &[usize; 5]| c.iter().fold(0, |acc, &x| acc * b + x);
    let states = b.pow(5);
    let mut prob = vec![0.0; states];
    let mut next = vec![0.0; states];
    // stamp[s] = r + 1 when state s was reached at rank r (so `next` needs no clearing).
    let mut stamp = vec![0usize; states];
    let mut live: Vec<[usize; 5]> = vec![[0; 5]];
    prob[0] = 1.0;
    for (r, &qr) in q.iter().enumerate() {
        let mut reached = Vec::with_capacity(2 * live.len());
        let mut add = |c: [usize; 5], p: f64, next: &mut Vec<f64>| {
            let s = index(&c);
            if stamp[s] != r + 1 {
                stamp[s] = r + 1;
                next[s] = 0.0;
                reached.push(c);
            }
            next[s] += p;
        };
        for c in &live {
            let ps = prob[index(c)];
            add(*c, ps * (1.0 - qr), &mut next);
            if c.iter().sum::<usize>() < k {
                let mut up = *c;
                up[pools[r]] += 1;
                add(up, ps * qr, &mut next);
            }
        }
        std::mem::swap(&mut prob, &mut next);
        live = reached;
    }
    let mut total = 0.0;
    let mut weighted = 0.0;
    for c in &live {
        let ps = prob[index(c)];
        if c.iter().sum::<usize>() == k && ps > 0.0 {
            total += ps;
            weighted += ps * estimate_makespan_s(k, [c[0], c[1], c[2], c[3]], costs);
        }
    }
    weighted / total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_by_hand() {
        assert_eq!(k_subsets(4, 2).unwrap(), vec![3, 5, 6, 9, 10, 12]);
        assert_eq!(k_subsets(3, 0).unwrap(), vec![0]);
        assert_eq!(k_subsets(20, 10).unwrap().len(), 184_756);
        assert!(k_subsets(40, 20).is_none());
    }

    #[test]
    fn max_entropy_of_uniform_marginals_is_uniform() {
        // f = 1/2 on 4 experts, k = 2: the uniform distribution on the 6 pairs has these
        // marginals and entropy ln 6.
        let s = k_subsets(4, 2).unwrap();
        let m = max_entropy(&[0.5; 4], &s, 1e-13).unwrap();
        for p in &m.probabilities {
            assert!((p - 1.0 / 6.0).abs() < 1e-12);
        }
        assert!((entropy(&m.probabilities) - 6f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn max_entropy_by_hand_on_three_experts() {
        // k = 2 of 3: the distribution on the 3 pairs is determined by the marginals
        // (P({1,2}) = 1 - f_3 etc.), so with f = (0.9, 0.7, 0.4): P({1,2}) = 0.6,
        // P({1,3}) = 0.3, P({2,3}) = 0.1 (masks 3, 5, 6).
        let s = k_subsets(3, 2).unwrap();
        let m = max_entropy(&[0.9, 0.7, 0.4], &s, 1e-13).unwrap();
        for (p, want) in m.probabilities.iter().zip([0.6, 0.3, 0.1]) {
            assert!((p - want).abs() < 1e-10, "{m:?}");
        }
    }

    #[test]
    fn joint_dp_matches_enumeration() {
        let q = [0.7, 0.5, 0.4, 0.2, 0.1, 0.05];
        let sizes = PoolSizes {
            experts: [1, 1, 1, 1],
            miss: 2,
        };
        let costs = ReconstructionCosts {
            decompress_e_chunk_s: 3.0,
            read_e_chunk_s: 1.0,
            read_sm_chunk_s: 10.0,
            threads: 2,
            shards: 2,
            tensors_per_expert: 1,
        };
        let a = expected_makespan_by_subsets(&q, 3, &sizes, &costs).unwrap();
        let b = expected_makespan_by_joint_dp(&q, 3, &sizes, &costs);
        assert!((a - b).abs() < 1e-12 * a.abs(), "{a} vs {b}");
    }

    #[test]
    fn poisson_binomial_marginals_match_enumeration() {
        // Against the explicit 3-subsets of 7 experts; and by hand for k = 1 of 2 experts,
        // q = (0.5, 0.2): P({0}) = 0.5 x 0.8 = 0.4, P({1}) = 0.5 x 0.2 = 0.1, so m = (0.8, 0.2).
        let q = [0.9, 0.7, 0.5, 0.5, 0.3, 0.2, 0.05];
        let s = k_subsets(7, 3).unwrap();
        let m = marginals(&s, &conditional_poisson(&q, &s), 7);
        let d = marginals_by_poisson_binomial(&q, 3).unwrap();
        for (a, b) in m.iter().zip(&d) {
            assert!((a - b).abs() < 1e-14, "{m:?} vs {d:?}");
        }
        let d = marginals_by_poisson_binomial(&[0.5, 0.2], 1).unwrap();
        assert!(
            (d[0] - 0.8).abs() < 1e-15 && (d[1] - 0.2).abs() < 1e-15,
            "{d:?}"
        );
        // q = 1 is in every subset, q = 0 in none; no 2-subset of (1, 0).
        let d = marginals_by_poisson_binomial(&[1.0, 0.0, 0.5, 0.5], 2).unwrap();
        assert_eq!(d, vec![1.0, 0.0, 0.5, 0.5]);
        assert!(marginals_by_poisson_binomial(&[1.0, 0.0], 2).is_none());
    }
}
