//! Set functions over an indexed ground set V = {0, ..., n-1}, and checks of their structure:
//! monotonicity, submodularity, supermodularity (Definitions 1-2 of paper 000), the supermodular
//! curvature of Definition 4 and the inequality of Lemma 1.
//!
//! Each check returns a [`Verdict`]: `Holds` with the number of inequalities checked, or
//! `Violated` with a witness (the sets, the element and both marginal gains) that anyone can
//! re-evaluate. Two modes:
//! * [`Mode::Exhaustive`]: every inequality over the whole lattice 2^V, for n <= [`EXHAUSTIVE_LIMIT`].
//!   All 2^n values are computed once. Submodularity is checked in its local form
//!   f(x | S) >= f(x | S + y) for all S and x != y outside S, which is equivalent to
//!   diminishing returns for all A subset B (Definition 1); a violation is reported as the
//!   chain A = S, B = S + y.
//! * [`Mode::RandomChains`]: sampled chains A subset B and x outside B (seeded), for any n. A
//!   `Holds` verdict then only means no violation was found among the samples.
//!
//! Values are compared with a tolerance: `a >= b` is accepted when
//! `a >= b - (abs + rel * max(|a|, |b|))` ([`Tolerance`]).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Largest ground set checked exhaustively (2^20 values are tabulated).
pub const EXHAUSTIVE_LIMIT: usize = 20;

/// A real-valued function of subsets of {0, ..., n-1}.
pub trait SetFunction {
    /// n = |V|.
    fn ground_size(&self) -> usize;
    /// f(S), with S given by membership flags of length n.
    fn value(&self, set: &[bool]) -> f64;
}

impl<F: Fn(&[bool]) -> f64> SetFunction for (usize, F) {
    fn ground_size(&self) -> usize {
        self.0
    }
    fn value(&self, set: &[bool]) -> f64 {
        (self.1)(set)
    }
}

/// How inequalities are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Every inequality over the lattice (n <= [`EXHAUSTIVE_LIMIT`]).
    Exhaustive,
    /// This many random chains A subset B, x outside B, from this seed.
    RandomChains {
        /// Number of chains.
        samples: u64,
        /// Seed of the sampler.
        seed: u64,
    },
}

impl Mode {
    /// Exhaustive when n is small enough, otherwise `samples` random chains.
    pub fn auto(n: usize, samples: u64, seed: u64) -> Self {
        if n <= EXHAUSTIVE_LIMIT {
            Mode::Exhaustive
        } else {
            Mode::RandomChains { samples, seed }
        }
    }
}

/// Slack allowed in `a >= b`: `abs + rel * max(|a|, |b|)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerance {
    /// Absolute part.
    pub abs: f64,
    /// Relative part.
    pub rel: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            abs: 1e-12,
            rel: 1e-9,
        }
    }
}

impl Tolerance {
    /// `a >= b` within the tolerance.
    pub fn at_least(&self, a: f64, b: f64) -> bool {
        a >= b - (self.abs + self.rel * a.abs().max(b.abs()))
    }
}

/// A violated inequality about adding `element` to `smaller` and to `larger`
/// (for monotonicity, `smaller == larger`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Witness {
    /// A (sorted members).
    pub smaller: Vec<usize>,
    /// B, a superset of A (sorted members).
    pub larger: Vec<usize>,
    /// x, outside B.
    pub element: usize,
    /// f(x | A).
    pub gain_smaller: f64,
    /// f(x | B).
    pub gain_larger: f64,
}

/// The outcome of a check.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Verdict {
    /// No violation among `checked` inequalities.
    Holds {
        /// Inequalities checked.
        checked: u64,
        /// True when the check covered the whole lattice (a proof for this function).
        exhaustive: bool,
    },
    /// A violation, with its witness.
    Violated {
        /// The violated inequality.
        witness: Witness,
        /// Inequalities checked up to and including the violation.
        checked: u64,
    },
}

impl Verdict {
    /// True for `Holds`.
    pub fn holds(&self) -> bool {
        matches!(self, Verdict::Holds { .. })
    }

    /// The witness of a violation.
    pub fn witness(&self) -> Option<&Witness> {
        match self {
            Verdict::Violated { witness, .. } => Some(witness),
            Verdict::Holds { .. } => None,
        }
    }
}

/// Which inequality between marginal gains is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Property {
    /// f(x | S) >= 0.
    Monotone,
    /// f(x | A) >= f(x | B).
    Submodular,
    /// f(x | A) <= f(x | B).
    Supermodular,
}

/// Monotone non-decreasing: f(S + x) >= f(S) for every S and x outside S.
pub fn check_monotone(f: &impl SetFunction, mode: Mode, tol: Tolerance) -> Verdict {
    check(f, mode, tol, Property::Monotone)
}

/// Submodular (Definition 1): f(x | A) >= f(x | B) for A subset B, x outside B.
pub fn check_submodular(f: &impl SetFunction, mode: Mode, tol: Tolerance) -> Verdict {
    check(f, mode, tol, Property::Submodular)
}

/// Supermodular (Definition 2): f(x | A) <= f(x | B) for A subset B, x outside B.
pub fn check_supermodular(f: &impl SetFunction, mode: Mode, tol: Tolerance) -> Verdict {
    check(f, mode, tol, Property::Supermodular)
}

fn members(mask: u64, n: usize) -> Vec<usize> {
    (0..n).filter(|i| mask & (1 << i) != 0).collect()
}

fn flags(mask: u64, n: usize) -> Vec<bool> {
    (0..n).map(|i| mask & (1 << i) != 0).collect()
}

/// All 2^n values, indexed by the bit mask of the set.
fn tabulate(f: &impl SetFunction) -> Vec<f64> {
    let n = f.ground_size();
    assert!(
        n <= EXHAUSTIVE_LIMIT,
        "exhaustive checks need n <= {EXHAUSTIVE_LIMIT}, got {n}"
    );
    (0..1u64 << n).map(|m| f.value(&flags(m, n))).collect()
}

fn violates(p: Property, tol: Tolerance, small: f64, large: f64) -> bool {
    match p {
        Property::Monotone => !tol.at_least(large, 0.0),
        Property::Submodular => !tol.at_least(small, large),
        Property::Supermodular => !tol.at_least(large, small),
    }
}

fn check(f: &impl SetFunction, mode: Mode, tol: Tolerance, p: Property) -> Verdict {
    let n = f.ground_size();
    let mut checked = 0u64;
    match mode {
        Mode::Exhaustive => {
            let v = tabulate(f);
            for s in 0..1u64 << n {
                for x in (0..n).filter(|x| s & (1 << x) == 0) {
                    let gain_s = v[(s | 1 << x) as usize] - v[s as usize];
                    if p == Property::Monotone {
                        checked += 1;
                        if violates(p, tol, gain_s, gain_s) {
                            return Verdict::Violated {
                                witness: Witness {
                                    smaller: members(s, n),
                                    larger: members(s, n),
                                    element: x,
                                    gain_smaller: gain_s,
                                    gain_larger: gain_s,
                                },
                                checked,
                            };
                        }
                        continue;
                    }
                    for y in (0..n).filter(|&y| y != x && s & (1 << y) == 0) {
                        let b = s | 1 << y;
                        let gain_b = v[(b | 1 << x) as usize] - v[b as usize];
                        checked += 1;
                        if violates(p, tol, gain_s, gain_b) {
                            return Verdict::Violated {
                                witness: Witness {
                                    smaller: members(s, n),
                                    larger: members(b, n),
                                    element: x,
                                    gain_smaller: gain_s,
                                    gain_larger: gain_b,
                                },
                                checked,
                            };
                        }
                    }
                }
            }
            Verdict::Holds {
                checked,
                exhaustive: true,
            }
        }
        Mode::RandomChains { samples, seed } => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            if n == 0 {
                return Verdict::Holds {
                    checked: 0,
                    exhaustive: true,
                };
            }
            for _ in 0..samples {
                let (a, b, x) = random_chain(&mut rng, n);
                let gain_a = marginal(f, &a, x);
                let gain_b = if p == Property::Monotone {
                    gain_a
                } else {
                    marginal(f, &b, x)
                };
                checked += 1;
                if violates(p, tol, gain_a, gain_b) {
                    let list = |s: &[bool]| (0..n).filter(|&i| s[i]).collect();
                    return Verdict::Violated {
                        witness: Witness {
                            smaller: list(&a),
                            larger: if p == Property::Monotone {
                                list(&a)
                            } else {
                                list(&b)
                            },
                            element: x,
                            gain_smaller: gain_a,
                            gain_larger: gain_b,
                        },
                        checked,
                    };
                }
            }
            Verdict::Holds {
                checked,
                exhaustive: false,
            }
        }
    }
}

/// f(x | S) = f(S + x) - f(S).
pub fn marginal(f: &impl SetFunction, set: &[bool], x: usize) -> f64 {
    let mut with = set.to_vec();
    with[x] = true;
    f.value(&with) - f.value(set)
}

/// A random chain A subset B and x outside B: each element goes to A, B \ A or outside with
/// probabilities drawn per chain, so small and large sets both appear.
fn random_chain(rng: &mut ChaCha8Rng, n: usize) -> (Vec<bool>, Vec<bool>, usize) {
    let x = rng.random_range(0..n);
    let p_a: f64 = rng.random();
    let p_b: f64 = rng.random();
    let mut a = vec![false; n];
    let mut b = vec![false; n];
    for i in (0..n).filter(|&i| i != x) {
        let r: f64 = rng.random();
        if r < p_a * p_b {
            a[i] = true;
            b[i] = true;
        } else if r < p_b {
            b[i] = true;
        }
    }
    (a, b, x)
}

/// The supermodular curvature of Definition 4, kappa_g = 1 - min_z g(z | empty) / g(z | V - z),
/// over the elements with g(z | V - z) > 0.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curvature {
    /// kappa_g; `None` when no element has a positive gain at V - z (g constant).
    pub kappa: Option<f64>,
    /// The minimising element.
    pub element: Option<usize>,
    /// Its g(z | empty).
    pub gain_at_empty: Option<f64>,
    /// Its g(z | V - z).
    pub gain_at_rest: Option<f64>,
    /// Elements skipped because g(z | V - z) <= 0 (the ratio is undefined).
    pub skipped: Vec<usize>,
}

/// Computes kappa_g of Definition 4 with 2n + 2 evaluations.
pub fn supermodular_curvature(g: &impl SetFunction) -> Curvature {
    let n = g.ground_size();
    let empty = vec![false; n];
    let full = vec![true; n];
    let (g_empty, g_full) = (g.value(&empty), g.value(&full));
    let mut best: Option<(f64, usize, f64, f64)> = None;
    let mut skipped = Vec::new();
    for z in 0..n {
        let mut single = empty.clone();
        single[z] = true;
        let at_empty = g.value(&single) - g_empty;
        let mut rest = full.clone();
        rest[z] = false;
        let at_rest = g_full - g.value(&rest);
        if at_rest <= 0.0 {
            skipped.push(z);
            continue;
        }
        let ratio = at_empty / at_rest;
        if best.is_none_or(|b| ratio < b.0) {
            best = Some((ratio, z, at_empty, at_rest));
        }
    }
    Curvature {
        kappa: best.map(|b| 1.0 - b.0),
        element: best.map(|b| b.1),
        gain_at_empty: best.map(|b| b.2),
        gain_at_rest: best.map(|b| b.3),
        skipped,
    }
}

/// A set A where Lemma 1, (1 - kappa) g(A | empty) <= sum_{z in A} g(z | empty) <= g(A | empty),
/// fails.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LemmaOneWitness {
    /// A (sorted members).
    pub set: Vec<usize>,
    /// (1 - kappa) g(A | empty).
    pub lower: f64,
    /// sum_{z in A} g(z | empty).
    pub sum_of_singletons: f64,
    /// g(A | empty).
    pub upper: f64,
}

/// Checks Lemma 1's two inequalities with curvature `kappa` on every set (n <=
/// [`EXHAUSTIVE_LIMIT`]); returns the number of sets checked or the first failing set.
pub fn check_lemma_one(
    g: &impl SetFunction,
    kappa: f64,
    tol: Tolerance,
) -> Result<u64, LemmaOneWitness> {
    let n = g.ground_size();
    let v = tabulate(g);
    let singles: Vec<f64> = (0..n).map(|z| v[1 << z] - v[0]).collect();
    for s in 0..1u64 << n {
        let upper = v[s as usize] - v[0];
        let sum: f64 = members(s, n).iter().map(|&z| singles[z]).sum();
        let lower = (1.0 - kappa) * upper;
        if !(tol.at_least(sum, lower) && tol.at_least(upper, sum)) {
            return Err(LemmaOneWitness {
                set: members(s, n),
                lower,
                sum_of_singletons: sum,
                upper,
            });
        }
    }
    Ok(1u64 << n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Coverage: element i covers a set of points; f(S) = |union|. Submodular and monotone
    /// (a textbook fact: each point's indicator max_i is submodular, and sums preserve it).
    fn coverage() -> (usize, impl Fn(&[bool]) -> f64) {
        let covers: [&[u32]; 5] = [&[0, 1, 2], &[2, 3], &[3, 4, 5], &[0, 5], &[1, 4]];
        (5, move |s: &[bool]| {
            let mut points = std::collections::BTreeSet::<u32>::new();
            for (i, c) in covers.iter().enumerate() {
                if s[i] {
                    points.extend(c.iter());
                }
            }
            points.len() as f64
        })
    }

    /// |S|^2: supermodular (f(x | S) = 2|S| + 1 grows with S), monotone, not submodular.
    fn squared() -> (usize, impl Fn(&[bool]) -> f64) {
        (6, |s: &[bool]| {
            let k = s.iter().filter(|&&b| b).count() as f64;
            k * k
        })
    }

    /// sum_i w_i [i in S]: modular, so both submodular and supermodular.
    fn modular() -> (usize, impl Fn(&[bool]) -> f64) {
        let w = [3.0, -1.0, 0.5, 2.0];
        (4, move |s: &[bool]| {
            (0..4).filter(|&i| s[i]).map(|i| w[i]).sum()
        })
    }

    /// f = [0 in S and 1 in S] + [2 in S or 3 in S]: the product term is supermodular in {0, 1},
    /// the "or" term submodular in {2, 3}, so f is neither.
    fn neither() -> (usize, impl Fn(&[bool]) -> f64) {
        (4, |s: &[bool]| {
            let and = (s[0] && s[1]) as u8 as f64;
            let or = (s[2] || s[3]) as u8 as f64;
            and + or
        })
    }

    #[test]
    fn coverage_is_monotone_and_submodular_but_not_supermodular() {
        let f = coverage();
        let t = Tolerance::default();
        assert!(check_monotone(&f, Mode::Exhaustive, t).holds());
        assert!(check_submodular(&f, Mode::Exhaustive, t).holds());
        let v = check_supermodular(&f, Mode::Exhaustive, t);
        let w = v.witness().expect("coverage is not supermodular");
        // The witness is a real violation: gain at the smaller set exceeds gain at the larger.
        assert!(w.gain_smaller > w.gain_larger);
        let set = |m: &[usize]| (0..5).map(|i| m.contains(&i)).collect::<Vec<_>>();
        assert_eq!(marginal(&f, &set(&w.smaller), w.element), w.gain_smaller);
        assert_eq!(marginal(&f, &set(&w.larger), w.element), w.gain_larger);
    }

    #[test]
    fn squared_cardinality_is_supermodular_not_submodular() {
        let f = squared();
        let t = Tolerance::default();
        assert!(check_supermodular(&f, Mode::Exhaustive, t).holds());
        let w = check_submodular(&f, Mode::Exhaustive, t);
        // First violation in lattice order (S, then x, then y ascending): S = {}, x = 0,
        // y = 1: f(0|{}) = 1 < f(0|{1}) = 4 - 1 = 3.
        let w = w.witness().unwrap();
        assert_eq!(
            (w.smaller.clone(), w.larger.clone(), w.element),
            (vec![], vec![1], 0)
        );
        assert_eq!((w.gain_smaller, w.gain_larger), (1.0, 3.0));
        // Random chains find violations too.
        let r = check_submodular(
            &f,
            Mode::RandomChains {
                samples: 200,
                seed: 1,
            },
            t,
        );
        assert!(!r.holds());
    }

    #[test]
    fn modular_function_is_both_and_negative_weight_breaks_monotonicity() {
        let f = modular();
        let t = Tolerance::default();
        assert!(check_submodular(&f, Mode::Exhaustive, t).holds());
        assert!(check_supermodular(&f, Mode::Exhaustive, t).holds());
        let m = check_monotone(&f, Mode::Exhaustive, t);
        // Element 1 has weight -1: adding it to the empty set loses 1.
        let w = m.witness().unwrap();
        assert_eq!((w.element, w.gain_smaller), (1, -1.0));
        assert!(check_submodular(
            &f,
            Mode::RandomChains {
                samples: 500,
                seed: 7
            },
            t
        )
        .holds());
    }

    #[test]
    fn neither_function_has_both_witnesses() {
        let f = neither();
        let t = Tolerance::default();
        let sub = check_submodular(&f, Mode::Exhaustive, t);
        let sup = check_supermodular(&f, Mode::Exhaustive, t);
        // Not submodular: f(0 | {}) = 0 < f(0 | {1}) = 1 (the product term).
        let w = sub.witness().unwrap();
        assert_eq!(
            (w.element, w.smaller.clone(), w.larger.clone()),
            (0, vec![], vec![1])
        );
        assert_eq!((w.gain_smaller, w.gain_larger), (0.0, 1.0));
        // Not supermodular: f(2 | {}) = 1 > f(2 | {3}) = 0 (the "or" term).
        let w = sup.witness().unwrap();
        assert_eq!(
            (w.element, w.smaller.clone(), w.larger.clone()),
            (2, vec![], vec![3])
        );
        assert_eq!((w.gain_smaller, w.gain_larger), (1.0, 0.0));
        assert!(check_monotone(&f, Mode::Exhaustive, t).holds());
    }

    #[test]
    fn curvature_of_squared_cardinality_and_lemma_one() {
        // g = |S|^2 on n = 6: g(z | {}) = 1, g(z | V - z) = 36 - 25 = 11, kappa = 1 - 1/11.
        let g = squared();
        let c = supermodular_curvature(&g);
        assert!((c.kappa.unwrap() - (1.0 - 1.0 / 11.0)).abs() < 1e-15);
        assert_eq!((c.gain_at_empty, c.gain_at_rest), (Some(1.0), Some(11.0)));
        // Lemma 1 holds with the true curvature: for |A| = k, (1/11) k^2 <= k <= k^2, true for
        // k <= 6 <= 11.
        assert_eq!(
            check_lemma_one(&g, c.kappa.unwrap(), Tolerance::default()),
            Ok(64)
        );
        // With kappa = 0 the lower inequality claims k^2 <= k, false for A = {0, 1}.
        let w = check_lemma_one(&g, 0.0, Tolerance::default()).unwrap_err();
        assert_eq!(w.set, vec![0, 1]);
        assert_eq!((w.lower, w.sum_of_singletons, w.upper), (4.0, 2.0, 4.0));
    }

    #[test]
    fn curvature_skips_elements_without_gain() {
        // Element 2 never matters: its gain at V - z is 0, so it is skipped.
        let g = (3usize, |s: &[bool]| ((s[0] && s[1]) as u8) as f64);
        let c = supermodular_curvature(&g);
        assert_eq!(c.skipped, vec![2]);
        // g(0 | {}) = 0, g(0 | {1, 2}) = 1: kappa = 1.
        assert_eq!(c.kappa, Some(1.0));
    }
}
