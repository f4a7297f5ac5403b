//! Selecting alpha (paper 004, Sec. V-C, eq. (5)): min_alpha A(alpha) s.t. T(alpha) <= R.
//!
//! The paper fits "a low-degree polynomial to the empirical relation between alpha and
//! T(alpha)" and takes "the smallest value whose predicted T(alpha) satisfies the constraint".
//! Here T(alpha) is measured by the pipeline model ([`super::pipeline::simulate`]) at a grid of
//! alphas, fitted by least squares (the QR factorisation of the Vandermonde matrix; degree at
//! most [`MAX_DEGREE`]), and the fit is searched on an even grid over the sampled range.
//!
//! ## Readings
//! * A(alpha), the accuracy loss, is not modelled (no language model runs here); like the
//!   paper we take it to increase with alpha, so the smallest feasible alpha minimises it.
//!   The router mass kept at each sample is reported as a proxy.
//! * The search is restricted to the sampled range (no extrapolation of the fit).
//! * When no alpha of the range meets R, there is no selection (`chosen_alpha` null).

use nalgebra::{DMatrix, DVector};
use serde::Serialize;

/// Highest polynomial degree accepted.
pub const MAX_DEGREE: usize = 4;

/// One measured point of T(alpha).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AlphaSample {
    /// alpha.
    pub alpha: f64,
    /// T(alpha): the pipeline's TPOT proxy, seconds.
    pub tpot_s: f64,
    /// GPU expert cache ratio at this alpha.
    pub gpu_hit_rate: f64,
    /// Router mass kept at this alpha (accuracy proxy).
    pub mass_kept: f64,
}

/// The fit and the selection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AlphaSelection {
    /// Degree of the fitted polynomial.
    pub degree: usize,
    /// Coefficients c_0..c_d of T(alpha) = sum_i c_i alpha^i, seconds.
    pub coefficients: Vec<f64>,
    /// Root mean square residual of the fit over the samples, seconds.
    pub fit_rmse_s: f64,
    /// R, the TPOT budget, seconds.
    pub budget_s: f64,
    /// The smallest alpha of the search grid whose fitted T meets R (null: none).
    pub chosen_alpha: Option<f64>,
    /// The fitted T at the chosen alpha, seconds.
    pub predicted_tpot_s: Option<f64>,
}

/// Value of sum_i c_i x^i.
pub fn polyval(coefficients: &[f64], x: f64) -> f64 {
    coefficients.iter().rev().fold(0.0, |acc, &c| acc * x + c)
}

/// Least-squares polynomial of `degree` through (x, y). Errors when the degree is above
/// [`MAX_DEGREE`], there are fewer distinct x than degree + 1, or a value is not finite.
pub fn fit_polynomial(x: &[f64], y: &[f64], degree: usize) -> Result<Vec<f64>, String> {
    if degree > MAX_DEGREE {
        return Err(format!("degree {degree} is above {MAX_DEGREE}"));
    }
    if x.len() != y.len() || x.iter().chain(y).any(|v| !v.is_finite()) {
        return Err("samples must be finite pairs".into());
    }
    let mut distinct = x.to_vec();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if distinct.len() <= degree {
        return Err(format!(
            "{} distinct alphas cannot fit a degree-{degree} polynomial",
            distinct.len()
        ));
    }
    // min ||V c - y|| with V the Vandermonde matrix V_ij = x_i^j, by V's Householder QR
    // (R c = Q^T y): no normal equations, whose condition number is V's squared.
    let vandermonde = DMatrix::from_fn(x.len(), degree + 1, |i, j| x[i].powi(j as i32));
    let qr = vandermonde.qr();
    qr.r()
        .solve_upper_triangular(&qr.q().tr_mul(&DVector::from_column_slice(y)))
        .filter(|c| c.iter().all(|v| v.is_finite()))
        .map(|c| c.as_slice().to_vec())
        .ok_or_else(|| "singular least-squares system".into())
}

/// Eq. (5): fits T(alpha) to the samples and takes the smallest alpha of `search_points`
/// evenly spaced points over the sampled range whose fitted T is at most `budget_s`.
///
/// # Complexity
/// S samples, degree d <= [`MAX_DEGREE`], P search points. Time: O(S d^2) for the QR fit, O(S d)
/// for the residual and O(P d) for the search. Memory: O(S d).
///
/// # Examples
/// ```
/// use moe_opt::smoe::alpha::{select, AlphaSample};
///
/// // T(alpha) = 2 - 3 alpha + alpha^2 exactly at 5 points. T = 1 at alpha = (3 - sqrt 5) / 2
/// // = 0.38197, so the first of the grid 0, 0.001, ..., 1 that meets R = 1 is 0.382.
/// let samples: Vec<AlphaSample> = [0.0, 0.25, 0.5, 0.75, 1.0]
///     .iter()
///     .map(|&alpha| AlphaSample {
///         alpha,
///         tpot_s: 2.0 - 3.0 * alpha + alpha * alpha,
///         gpu_hit_rate: 0.0,
///         mass_kept: 1.0,
///     })
///     .collect();
/// let selection = select(&samples, 2, 1.0, 1001)?;
/// assert!((selection.chosen_alpha.unwrap() - 0.382).abs() < 1e-12);
/// # Ok::<(), String>(())
/// ```
pub fn select(
    samples: &[AlphaSample],
    degree: usize,
    budget_s: f64,
    search_points: usize,
) -> Result<AlphaSelection, String> {
    let x: Vec<f64> = samples.iter().map(|s| s.alpha).collect();
    let y: Vec<f64> = samples.iter().map(|s| s.tpot_s).collect();
    let coefficients = fit_polynomial(&x, &y, degree)?;
    let rmse = (x
        .iter()
        .zip(&y)
        .map(|(&a, &t)| (polyval(&coefficients, a) - t).powi(2))
        .sum::<f64>()
        / x.len() as f64)
        .sqrt();
    let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let points = search_points.max(2);
    let chosen = (0..points)
        .map(|i| lo + (hi - lo) * i as f64 / (points - 1) as f64)
        .find(|&a| polyval(&coefficients, a) <= budget_s);
    Ok(AlphaSelection {
        degree,
        fit_rmse_s: rmse,
        budget_s,
        chosen_alpha: chosen,
        predicted_tpot_s: chosen.map(|a| polyval(&coefficients, a)),
        coefficients,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(alpha: f64, tpot_s: f64) -> AlphaSample {
        AlphaSample {
            alpha,
            tpot_s,
            gpu_hit_rate: 0.0,
            mass_kept: 1.0,
        }
    }

    #[test]
    fn a_quadratic_is_recovered_and_the_smallest_feasible_alpha_chosen() {
        // T(a) = 2 - 3 a + a^2 exactly at 5 points; budget 1.0: 2 - 3a + a^2 = 1 at
        // a = (3 - sqrt 5) / 2 = 0.381966...; on the grid 0, 0.001, ..., 1 the first point
        // below is 0.382.
        let s: Vec<AlphaSample> = [0.0, 0.25, 0.5, 0.75, 1.0]
            .iter()
            .map(|&a| sample(a, 2.0 - 3.0 * a + a * a))
            .collect();
        let sel = select(&s, 2, 1.0, 1001).unwrap();
        for (got, want) in sel.coefficients.iter().zip([2.0, -3.0, 1.0]) {
            assert!((got - want).abs() < 1e-9, "{:?}", sel.coefficients);
        }
        assert!(sel.fit_rmse_s < 1e-9);
        assert!((sel.chosen_alpha.unwrap() - 0.382).abs() < 1e-12);
        // Budget 0.5: a = (3 - sqrt 3) / 2 = 0.63397...; first grid point 0.634. T's minimum
        // on [0, 1] is T(1) = 0, so a negative budget has no alpha.
        assert!((select(&s, 2, 0.5, 1001).unwrap().chosen_alpha.unwrap() - 0.634).abs() < 1e-12);
        assert!(select(&s, 2, -0.1, 1001).unwrap().chosen_alpha.is_none());
    }

    #[test]
    fn a_line_through_noisy_points_by_hand() {
        // (0, 1), (1, 2), (2, 2): least squares y = a + b x with x mean 1, y mean 5/3,
        // b = sum (x - 1)(y - 5/3) / sum (x - 1)^2 = (2/3 + 1/3) / 2 = 0.5, a = 5/3 - 0.5.
        let c = fit_polynomial(&[0.0, 1.0, 2.0], &[1.0, 2.0, 2.0], 1).unwrap();
        assert!((c[0] - (5.0 / 3.0 - 0.5)).abs() < 1e-12 && (c[1] - 0.5).abs() < 1e-12);
        assert!(fit_polynomial(&[0.0, 0.0, 0.0], &[1.0, 2.0, 3.0], 1).is_err());
    }
}
