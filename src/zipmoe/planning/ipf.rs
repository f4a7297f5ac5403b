//! The modified iterative proportional fitting of eq. (24) (App. D, after Chen, Dempster and
//! Liu, Biometrika 81(3), 1994): weights w such that the conditional Poisson distribution
//! P(S) proportional to prod_{i in S} w_i over k-subsets has inclusion probabilities f, and the
//! selection probabilities q_i = w_i / (1 + w_i) that Alg. 2 and Alg. 4 use.
//!
//! ## Reading of eq. (24)
//!
//! The paper prints the update as w_i^(t+1) <- w_i^(t) f_i / R(k, N), then defines f_i^(t) =
//! w_i^(t) R(k-1, N \ {i}) / R(k, N), which the update never uses. Read literally, every
//! weight is multiplied by f_i / R(k, N), so after t steps w_i is proportional to f_i^(t+1):
//! the weights only sharpen and the marginals do not converge to f (with f = (0.9, 0.6, 0.3,
//! 0.2), k = 2 they run to (1, 1, 0, 0)). moe-opt reads the update as the proportional fitting
//! step of Chen et al. that the definition of f_i^(t) is there for:
//!
//! w_i^(t+1) = w_i^(t) f_i / f_i^(t),   w_i^(0) = f_i,
//!
//! iterated until the residual max_i |f_i^(t) - f_i| is at most `tolerance` (the iterations
//! reported are the updates made; 0 when w^(0) already fits). More than `max_iterations`
//! updates is an error naming `ipf.max_iterations` with the residual reached.
//!
//! ## Numerics and boundary cases
//!
//! R(j, C) are elementary symmetric polynomials. R(k-1, N \ {i}) is computed from prefix and
//! suffix tables (R(k-1, N \ {i}) = sum_a R(a, {1..i-1}) R(k-1-a, {i+1..N})), a sum of
//! non-negative terms, so no cancellation; the weights are divided by their maximum inside that
//! computation only (f^(t) is homogeneous of degree 0 in w), which keeps every table entry
//! finite. The iterate itself is not rescaled: the weights are unique only up to a factor (App.
//! D), q depends on that factor, and the conditional distribution that Alg. 4 uses does not.
//!
//! Experts with f_i = 0 get w_i = 0 (q_i = 0) and experts with f_i = 1 get w_i = infinity
//! (q_i = 1): every k-subset of positive probability must omit the first and contain the
//! second, and the fitting runs on the others with k' = k - #{f_i = 1}. With 0 < f_i < 1 for
//! those and sum f = k', a solution exists (Chen et al., Thm. 1; the point is interior to the
//! k'-subset polytope).

use formulations::zipmoe::pool::{validate_marginals, IpfOptions};
use formulations::ValidationError;

/// The result of eq. (24) for one list of inclusion probabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct Ipf {
    /// w_i: 0 for f_i = 0, infinity for f_i = 1, the fitted weight otherwise.
    pub weights: Vec<f64>,
    /// q_i = w_i / (1 + w_i) (1 for an infinite weight): Alg. 2's selection probabilities.
    pub selection_probabilities: Vec<f64>,
    /// Updates of eq. (24) made.
    pub iterations: u32,
    /// max_i |f_i^(t) - f_i| at the final weights.
    pub residual: f64,
}

/// R(j, C) for j = 0..=k of the weights `w` (elementary symmetric polynomials, eq. (23)).
pub fn elementary_symmetric(w: &[f64], k: usize) -> Vec<f64> {
    let mut e = vec![0.0; k + 1];
    e[0] = 1.0;
    for &x in w {
        for j in (1..=k).rev() {
            e[j] += x * e[j - 1];
        }
    }
    e
}

/// Inclusion probabilities f_i = w_i R(k-1, N \ {i}) / R(k, N) of the conditional Poisson
/// distribution with finite non-negative weights `w` (eq. (24)'s f_i^(t)); k >= 1 and at least
/// k positive weights.
pub fn inclusion_probabilities(w: &[f64], k: usize) -> Vec<f64> {
    let n = w.len();
    let top = w.iter().copied().fold(0.0, f64::max);
    let w: Vec<f64> = w.iter().map(|&x| x / top).collect();
    let width = k + 1;
    // prefix[i * width + j] = R(j, {0..i-1}); suffix[i * width + j] = R(j, {i..n-1}).
    let mut prefix = vec![0.0; (n + 1) * width];
    prefix[0] = 1.0;
    for i in 0..n {
        for j in 0..=k {
            let keep = prefix[i * width + j];
            let take = if j > 0 {
                w[i] * prefix[i * width + j - 1]
            } else {
                0.0
            };
            prefix[(i + 1) * width + j] = keep + take;
        }
    }
    let mut suffix = vec![0.0; (n + 1) * width];
    suffix[n * width] = 1.0;
    for i in (0..n).rev() {
        for j in 0..=k {
            let keep = suffix[(i + 1) * width + j];
            let take = if j > 0 {
                w[i] * suffix[(i + 1) * width + j - 1]
            } else {
                0.0
            };
            suffix[i * width + j] = keep + take;
        }
    }
    let total = prefix[n * width + k];
    (0..n)
        .map(|i| {
            let without: f64 = (0..k)
                .map(|a| prefix[i * width + a] * suffix[(i + 1) * width + (k - 1 - a)])
                .sum();
            w[i] * without / total
        })
        .collect()
}

/// Eq. (24) on the inclusion probabilities `f` of k-subsets (see the module doc). Errors: `f`
/// infeasible (a value outside [0, 1], or a sum other than k), named as `field[i]` / `field`;
/// no convergence within `options.max_iterations`, named `ipf.max_iterations`.
pub fn fit(f: &[f64], k: u32, options: &IpfOptions, field: &str) -> Result<Ipf, ValidationError> {
    validate_marginals(field, f, k)?;
    let free: Vec<usize> = (0..f.len()).filter(|&i| f[i] > 0.0 && f[i] < 1.0).collect();
    let ones = f.iter().filter(|&&x| x == 1.0).count();
    let k_free = k as usize - ones;
    let mut weights: Vec<f64> = f
        .iter()
        .map(|&x| if x == 1.0 { f64::INFINITY } else { 0.0 })
        .collect();
    let target: Vec<f64> = free.iter().map(|&i| f[i]).collect();
    let mut w = target.clone(); // w^(0) = f
    let mut iterations = 0u32;
    let mut residual = 0.0;
    if k_free > 0 {
        loop {
            let fitted = inclusion_probabilities(&w, k_free);
            residual = fitted
                .iter()
                .zip(&target)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            if residual <= options.tolerance {
                break;
            }
            if iterations >= options.max_iterations || !residual.is_finite() {
                return Err(ValidationError::new(
                    "ipf.max_iterations",
                    format!(
                        "eq. (24) on {field} did not reach tolerance {} in {} iterations \
                         (residual {residual})",
                        options.tolerance, options.max_iterations
                    ),
                ));
            }
            for ((wi, fi), gi) in w.iter_mut().zip(&target).zip(&fitted) {
                *wi *= fi / gi;
            }
            iterations += 1;
        }
    }
    for (&i, &wi) in free.iter().zip(&w) {
        weights[i] = wi;
    }
    let selection_probabilities = weights
        .iter()
        .map(|&x| if x.is_infinite() { 1.0 } else { x / (1.0 + x) })
        .collect();
    Ok(Ipf {
        weights,
        selection_probabilities,
        iterations,
        residual,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(tolerance: f64) -> IpfOptions {
        IpfOptions {
            tolerance,
            max_iterations: 100_000,
        }
    }

    #[test]
    fn elementary_symmetric_by_hand() {
        // w = (1, 2, 3): R(0) = 1, R(1) = 6, R(2) = 2 + 3 + 6 = 11, R(3) = 6.
        assert_eq!(
            elementary_symmetric(&[1.0, 2.0, 3.0], 3),
            vec![1.0, 6.0, 11.0, 6.0]
        );
    }

    #[test]
    fn inclusion_from_weights_by_hand() {
        // k = 2, w = (1, 2, 3): P({1,2}) = 2/11, P({1,3}) = 3/11, P({2,3}) = 6/11, so
        // f = (5/11, 8/11, 9/11).
        let f = inclusion_probabilities(&[1.0, 2.0, 3.0], 2);
        for (a, b) in f.iter().zip([5.0 / 11.0, 8.0 / 11.0, 9.0 / 11.0]) {
            assert!((a - b).abs() < 1e-15, "{f:?}");
        }
    }

    #[test]
    fn fits_a_hand_checkable_case() {
        // k = 2 of 3 experts with f = (5/11, 8/11, 9/11): the weights are (1, 2, 3) up to a
        // factor (previous test), so the fitted ratios w_2 / w_1 = 2 and w_3 / w_1 = 3.
        let f = [5.0 / 11.0, 8.0 / 11.0, 9.0 / 11.0];
        let r = fit(&f, 2, &options(1e-13), "f").unwrap();
        assert!(r.residual <= 1e-13 && r.iterations > 0, "{r:?}");
        assert!((r.weights[1] / r.weights[0] - 2.0).abs() < 1e-9, "{r:?}");
        assert!((r.weights[2] / r.weights[0] - 3.0).abs() < 1e-9, "{r:?}");
        for (q, w) in r.selection_probabilities.iter().zip(&r.weights) {
            assert!((q - w / (1.0 + w)).abs() < 1e-15);
        }
    }

    #[test]
    fn uniform_marginals_need_no_update() {
        // f = k / N for all: any equal weights fit, and w^(0) = f is equal.
        let r = fit(&[0.5; 4], 2, &options(1e-12), "f").unwrap();
        assert_eq!(r.iterations, 0);
        assert!(r.residual < 1e-15);
    }

    #[test]
    fn boundary_marginals_are_exact() {
        // f = (1, 0.5, 0.5, 0): expert 0 always, expert 3 never, the other two split k' = 1.
        let r = fit(&[1.0, 0.5, 0.5, 0.0], 2, &options(1e-12), "f").unwrap();
        assert_eq!(r.selection_probabilities[0], 1.0);
        assert_eq!(r.selection_probabilities[3], 0.0);
        assert!((r.weights[1] - r.weights[2]).abs() < 1e-15);
    }

    #[test]
    fn infeasible_marginals_name_the_field() {
        let e = fit(&[1.2, 0.5, 0.3], 2, &options(1e-9), "layers[0].f").unwrap_err();
        assert_eq!(e.field, "layers[0].f[0]");
        let e = fit(&[0.5, 0.5, 0.3], 2, &options(1e-9), "layers[0].f").unwrap_err();
        assert_eq!(e.field, "layers[0].f");
        assert!(e.reason.contains("sum to 1.3"), "{e}");
        let e = fit(
            &[0.9, 0.6, 0.3, 0.2],
            2,
            &IpfOptions {
                tolerance: 1e-12,
                max_iterations: 1,
            },
            "f",
        )
        .unwrap_err();
        assert_eq!(e.field, "ipf.max_iterations");
    }
}
