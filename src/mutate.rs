//! Pieces shared by the problems' `mutate` modules: the perturbation's scale factor, and the
//! shrinker's steps, which turn a counterexample into the smallest one the worst-case search can
//! reach (round the real numbers, keep the candidates that are valid and strictly smaller).

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A scale factor 2^s with s uniform in [-1, 1]: halves to doubles a perturbed quantity.
pub fn factor(rng: &mut ChaCha8Rng) -> f64 {
    2f64.powf(rng.random_range(-1.0..=1.0))
}

/// `x` rounded to two significant digits: its exact decimal value rounded, then the nearest
/// double (0 and non-finite values unchanged; `x` itself where the result would overflow).
pub fn round_real(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    format!("{x:.1e}")
        .parse::<f64>()
        .ok()
        .filter(|y| y.is_finite())
        .unwrap_or(x)
}

/// Whether [`round_real`] leaves `x` unchanged.
pub fn is_round(x: f64) -> bool {
    round_real(x) == x
}

/// The rounding candidates: each of the `reals` real numbers of `instance` that is not round
/// (`real_mut` gives the i-th), rounded alone, in order; then all of them at once when two or
/// more were.
pub fn rounded<I: Clone>(
    instance: &I,
    reals: usize,
    real_mut: impl Fn(&mut I, usize) -> &mut f64,
) -> Vec<I> {
    let mut out = Vec::new();
    let mut all = instance.clone();
    for which in 0..reals {
        let x = *real_mut(&mut instance.clone(), which);
        if !is_round(x) {
            let mut c = instance.clone();
            *real_mut(&mut c, which) = round_real(x);
            *real_mut(&mut all, which) = round_real(x);
            out.push(c);
        }
    }
    if out.len() >= 2 {
        out.push(all);
    }
    out
}

/// The candidates that are valid and strictly smaller than `instance`, smallest first (ties in
/// the order given).
pub fn smaller_valid<I>(
    mut candidates: Vec<I>,
    instance: &I,
    size: impl Fn(&I) -> u64,
    valid: impl Fn(&I) -> bool,
) -> Vec<I> {
    let own = size(instance);
    candidates.retain(|c| valid(c) && size(c) < own);
    candidates.sort_by_key(|c| size(c));
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_significant_digits() {
        assert_eq!(round_real(0.123456), 0.12);
        assert_eq!(round_real(-1234.5), -1200.0);
        assert_eq!(round_real(0.0), 0.0);
        assert!(round_real(f64::NAN).is_nan());
        assert_eq!(round_real(0.0123), 0.012);
        assert_eq!(round_real(987.0), 990.0);
        assert!(is_round(3.5) && !is_round(3.55) && !is_round(0.333));
        // The exact decimal value is rounded: 61.474213e6 to 61e6, 1.2345e13 to 1.2e13.
        assert_eq!(round_real(61.474213e6), 61e6);
        assert_eq!(round_real(1.2345e13), 1.2e13);
        // Overflow keeps the value.
        assert_eq!(round_real(f64::MAX), f64::MAX);
        for x in [1.2345e13, 0.0123, 3.33333e8, 1.0 / 3.0, 7.123e-5] {
            let r = round_real(x);
            assert!(is_round(r) && !is_round(x), "{x} -> {r}");
        }
    }

    #[test]
    fn rounding_candidates_one_by_one_then_together() {
        fn real<const N: usize>(v: &mut [f64; N], i: usize) -> &mut f64 {
            &mut v[i]
        }
        let c = rounded(&[1.234, 2.0, 5.678], 3, real);
        assert_eq!(c, [[1.2, 2.0, 5.678], [1.234, 2.0, 5.7], [1.2, 2.0, 5.7]]);
        assert_eq!(rounded(&[1.234, 2.0], 2, real), [[1.2, 2.0]]);
    }

    #[test]
    fn keeps_valid_strictly_smaller_sorted() {
        let kept = smaller_valid(vec![5, 1, 3, 7, 2], &5, |x| *x as u64, |x| *x != 2);
        assert_eq!(kept, vec![1, 3]);
    }
}
