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
//! [`worst_slack`] visits the same inequalities without stopping and returns the smallest
//! slack of a [`Property`] (f(x | S), f(x | A) - f(x | B) or f(x | B) - f(x | A), plus the
//! tolerance's allowance) with the inequality attaining it and the scale max |f|: how far the
//! function is from violating the property, or how badly it violates it; and the smallest
//! among the inequalities that do not hold with equality ([`Slack::strict`]).
//!
//! Values are compared with a tolerance: `a >= b` is accepted when
//! `a >= b - (abs + rel * max(|a|, |b|))` ([`Tolerance`]), decided as
//! `(a - b) + abs + rel * max(|a|, |b|) >= 0` ([`Tolerance::slack`]) so that a check's verdict
//! and the sign of the slack [`worst_slack`] reports always agree.

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
    /// The signed slack of `a >= b` within the tolerance:
    /// `(a - b) + abs + rel * max(|a|, |b|)`, >= 0 exactly when [`Tolerance::at_least`] holds.
    pub fn slack(&self, a: f64, b: f64) -> f64 {
        (a - b) + (self.abs + self.rel * a.abs().max(b.abs()))
    }

    /// `a >= b` within the tolerance: `a >= b - (abs + rel * max(|a|, |b|))`, decided as
    /// `slack(a, b) >= 0` so that a check and the slack reported for it never disagree.
    pub fn at_least(&self, a: f64, b: f64) -> bool {
        self.slack(a, b) >= 0.0
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

/// A property of set functions, stated as one inequality between marginal gains per chain
/// A subset B and element x outside B (for [`Property::Monotone`], per set S and x outside S,
/// with A = B = S).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Property {
    /// Monotone non-decreasing: f(x | S) >= 0.
    Monotone,
    /// Submodular (Definition 1): f(x | A) >= f(x | B).
    Submodular,
    /// Supermodular (Definition 2): f(x | A) <= f(x | B).
    Supermodular,
}

impl Property {
    /// The raw slack of the property's inequality (no tolerance): f(x | S), f(x | A) - f(x | B)
    /// or f(x | B) - f(x | A), and the tolerance's allowance for it,
    /// `abs + rel * max(|lhs|, |rhs|)`.
    pub fn raw_slack(self, tol: Tolerance, gain_smaller: f64, gain_larger: f64) -> (f64, f64) {
        let (lhs, rhs) = match self {
            Property::Monotone => (gain_larger, 0.0),
            Property::Submodular => (gain_smaller, gain_larger),
            Property::Supermodular => (gain_larger, gain_smaller),
        };
        (lhs - rhs, tol.abs + tol.rel * lhs.abs().max(rhs.abs()))
    }

    /// The signed slack of the property's inequality for the gains `gain_smaller` = f(x | A)
    /// and `gain_larger` = f(x | B) (for `Monotone` only `gain_larger` is used), within `tol`
    /// ([`Tolerance::slack`]): f(x | S) + allowance, f(x | A) - f(x | B) + allowance and
    /// f(x | B) - f(x | A) + allowance. Negative exactly when the inequality is violated.
    pub fn slack(self, tol: Tolerance, gain_smaller: f64, gain_larger: f64) -> f64 {
        match self {
            Property::Monotone => tol.slack(gain_larger, 0.0),
            Property::Submodular => tol.slack(gain_smaller, gain_larger),
            Property::Supermodular => tol.slack(gain_larger, gain_smaller),
        }
    }
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

/// The smallest slack of a property over all the inequalities a check would visit, and where
/// it is attained: how far the function is from violating the property (>= 0) or how badly it
/// violates it (< 0).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slack {
    /// The property.
    pub property: Property,
    /// The minimum over the inequalities of [`Property::slack`] (tolerance included): < 0
    /// exactly when the check of the property finds a violation.
    pub slack: f64,
    /// The inequality attaining it (the first in visiting order on ties); a violation when
    /// `slack < 0`.
    pub witness: Witness,
    /// The same minimum over the inequalities that do not hold with equality, i.e. whose raw
    /// slack r lies outside the tolerance band [-allowance, allowance]
    /// ([`Property::raw_slack`]), each counted as its distance from the band: r - allowance
    /// above it, r + allowance below it (there equal to [`Property::slack`]). `None` when every
    /// inequality holds with equality. Negative exactly when `slack` is (with the same
    /// witness then). Inequalities at equality are often so by structure (independent
    /// elements, a modular part) and pin `slack` at the allowance whatever the function's
    /// numbers; this minimum ignores them.
    pub strict: Option<Strict>,
    /// Inequalities that hold with equality within the tolerance.
    pub equalities: u64,
    /// max |f(S)| over the sets evaluated (the whole lattice in exhaustive mode), to make
    /// slacks comparable across functions.
    pub scale: f64,
    /// Inequalities visited.
    pub checked: u64,
    /// Inequalities violated (slack < 0).
    pub violated: u64,
    /// True when every inequality of the lattice was visited.
    pub exhaustive: bool,
}

/// The smallest slack of the inequalities outside the tolerance band ([`Slack::strict`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Strict {
    /// Distance of the inequality's raw slack from the band, signed.
    pub slack: f64,
    /// The inequality attaining it (the first in visiting order on ties).
    pub witness: Witness,
}

/// The worst (smallest) slack of `property` over the inequalities of `mode`, with `tol`'s
/// allowance included, unlike the `check_*` functions without stopping at the first
/// violation; also the worst among the inequalities that are not equalities
/// ([`Slack::strict`]). In exhaustive mode the inequalities are the local ones (S, x, y: A = S,
/// B = S + y; S and x for monotonicity), so the minimum is over the local chains; in random
/// mode over the sampled chains A subset B. `None` when there is no inequality (n = 0, or
/// n = 1 for sub- and supermodularity in exhaustive mode, or no samples).
pub fn worst_slack(
    f: &impl SetFunction,
    property: Property,
    mode: Mode,
    tol: Tolerance,
) -> Option<Slack> {
    let mut worst: Option<(f64, Witness)> = None;
    let mut strict: Option<Strict> = None;
    let (mut violated, mut equalities) = (0, 0);
    let walk = walk(f, mode, property, |q| {
        let s = property.slack(tol, q.gain_smaller, q.gain_larger);
        let (raw, allowance) = property.raw_slack(tol, q.gain_smaller, q.gain_larger);
        let outside = if s < 0.0 {
            violated += 1;
            Some(s)
        } else if raw > allowance {
            Some(raw - allowance)
        } else {
            equalities += 1;
            None
        };
        if let Some(o) = outside {
            if strict.as_ref().is_none_or(|w| o < w.slack) {
                strict = Some(Strict {
                    slack: o,
                    witness: q.witness(),
                });
            }
        }
        if worst.as_ref().is_none_or(|w| s < w.0) {
            worst = Some((s, q.witness()));
        }
        true
    });
    worst.map(|(slack, witness)| Slack {
        property,
        slack,
        witness,
        strict,
        equalities,
        scale: walk.scale,
        checked: walk.checked,
        violated,
        exhaustive: walk.exhaustive,
    })
}

/// Every violated inequality of `property` in `mode`, in visiting order (the ones
/// [`worst_slack`] counts in [`Slack::violated`]), each with its gains: for a caller that
/// must look past the worst one (e.g. to find which of a term's violations survive in a sum
/// of terms).
pub fn violations(
    f: &impl SetFunction,
    property: Property,
    mode: Mode,
    tol: Tolerance,
) -> Vec<Witness> {
    let mut found = Vec::new();
    walk(f, mode, property, |q| {
        if property.slack(tol, q.gain_smaller, q.gain_larger) < 0.0 {
            found.push(q.witness());
        }
        true
    });
    found
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

/// The sets of one visited inequality.
enum Sets<'a> {
    /// Bit masks of A and B.
    Masks(u64, u64),
    /// Membership flags of A and B.
    Flags(&'a [bool], &'a [bool]),
}

/// One visited inequality: the chain, the element and both gains.
struct Inequality<'a> {
    n: usize,
    sets: Sets<'a>,
    element: usize,
    gain_smaller: f64,
    gain_larger: f64,
}

impl Inequality<'_> {
    fn witness(&self) -> Witness {
        let list = |s: &[bool]| (0..self.n).filter(|&i| s[i]).collect();
        let (smaller, larger) = match self.sets {
            Sets::Masks(a, b) => (members(a, self.n), members(b, self.n)),
            Sets::Flags(a, b) => (list(a), list(b)),
        };
        Witness {
            smaller,
            larger,
            element: self.element,
            gain_smaller: self.gain_smaller,
            gain_larger: self.gain_larger,
        }
    }
}

/// What a walk over the inequalities saw.
struct Walk {
    checked: u64,
    exhaustive: bool,
    scale: f64,
}

/// Visits the inequalities of `p` in `mode` (exhaustive: S by increasing mask, then x, then
/// y ascending; random: the sampled chains in order) until `visit` returns false.
fn walk(
    f: &impl SetFunction,
    mode: Mode,
    p: Property,
    mut visit: impl FnMut(&Inequality) -> bool,
) -> Walk {
    let n = f.ground_size();
    let mut checked = 0u64;
    match mode {
        Mode::Exhaustive => {
            let v = tabulate(f);
            let scale = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let done = |checked| Walk {
                checked,
                exhaustive: true,
                scale,
            };
            for s in 0..1u64 << n {
                for x in (0..n).filter(|x| s & (1 << x) == 0) {
                    let gain_s = v[(s | 1 << x) as usize] - v[s as usize];
                    if p == Property::Monotone {
                        checked += 1;
                        let q = Inequality {
                            n,
                            sets: Sets::Masks(s, s),
                            element: x,
                            gain_smaller: gain_s,
                            gain_larger: gain_s,
                        };
                        if !visit(&q) {
                            return done(checked);
                        }
                        continue;
                    }
                    for y in (0..n).filter(|&y| y != x && s & (1 << y) == 0) {
                        let b = s | 1 << y;
                        let gain_b = v[(b | 1 << x) as usize] - v[b as usize];
                        checked += 1;
                        let q = Inequality {
                            n,
                            sets: Sets::Masks(s, b),
                            element: x,
                            gain_smaller: gain_s,
                            gain_larger: gain_b,
                        };
                        if !visit(&q) {
                            return done(checked);
                        }
                    }
                }
            }
            done(checked)
        }
        Mode::RandomChains { samples, seed } => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut scale = 0.0f64;
            if n == 0 {
                return Walk {
                    checked: 0,
                    exhaustive: true,
                    scale,
                };
            }
            let mut value = |s: &[bool]| {
                let v = f.value(s);
                scale = scale.max(v.abs());
                v
            };
            let mut gain = |s: &[bool], x: usize| {
                let mut with = s.to_vec();
                with[x] = true;
                value(&with) - value(s)
            };
            for _ in 0..samples {
                let (a, b, x) = random_chain(&mut rng, n);
                let gain_a = gain(&a, x);
                let monotone = p == Property::Monotone;
                let gain_b = if monotone { gain_a } else { gain(&b, x) };
                checked += 1;
                let q = Inequality {
                    n,
                    sets: Sets::Flags(&a, if monotone { &a } else { &b }),
                    element: x,
                    gain_smaller: gain_a,
                    gain_larger: gain_b,
                };
                if !visit(&q) {
                    break;
                }
            }
            Walk {
                checked,
                exhaustive: false,
                scale,
            }
        }
    }
}

fn check(f: &impl SetFunction, mode: Mode, tol: Tolerance, p: Property) -> Verdict {
    let mut witness = None;
    let walk = walk(f, mode, p, |q| {
        if p.slack(tol, q.gain_smaller, q.gain_larger) < 0.0 {
            witness = Some(q.witness());
            return false;
        }
        true
    });
    match witness {
        Some(witness) => Verdict::Violated {
            witness,
            checked: walk.checked,
        },
        None => Verdict::Holds {
            checked: walk.checked,
            exhaustive: walk.exhaustive,
        },
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

    /// No allowance: slacks are the raw differences of gains.
    const EXACT: Tolerance = Tolerance { abs: 0.0, rel: 0.0 };

    /// (sum_{i in S} w_i)^2 with w = (1, 2, 3, 4): f(x | S) = w_x (2 W_S + w_x), so the local
    /// submodular slack f(x | S) - f(x | S + y) = -2 w_x w_y depends on the pair only.
    fn weighted_square() -> (usize, impl Fn(&[bool]) -> f64) {
        let w = [1.0, 2.0, 3.0, 4.0];
        (4, move |s: &[bool]| {
            let t: f64 = (0..4).filter(|&i| s[i]).map(|i| w[i]).sum();
            t * t
        })
    }

    #[test]
    fn worst_slack_of_squared_cardinality() {
        let f = squared();
        // Local chains B = S + y: f(x | S) - f(x | S + y) = (2|S| + 1) - (2|S| + 3) = -2 on
        // every one of the n (n - 1) 2^(n - 2) = 480 inequalities; the first is S = {}, x = 0,
        // y = 1. Scale max |f| = |V|^2 = 36.
        let sub = worst_slack(&f, Property::Submodular, Mode::Exhaustive, EXACT).unwrap();
        assert_eq!(sub.slack, -2.0);
        assert_eq!((sub.checked, sub.violated, sub.scale), (480, 480, 36.0));
        assert_eq!(
            (
                sub.witness.smaller.clone(),
                sub.witness.larger.clone(),
                sub.witness.element
            ),
            (vec![], vec![1], 0)
        );
        assert!(sub.exhaustive);
        // No inequality is an equality: the strict minimum is the same.
        let strict = sub.strict.unwrap();
        assert_eq!((strict.slack, sub.equalities), (-2.0, 0));
        assert_eq!(strict.witness, sub.witness);
        // Over arbitrary chains A subset B the slack is 2 (|A| - |B|), smallest -2 (n - 1) =
        // -10 at A = {}, |B| = 5: a sampled chain has A = {} and B = V - x with probability
        // E[p_b^5] E[(1 - p_a)^5] = 1/36, so 2,000 samples contain one (and B + x = V gives
        // the scale 36).
        let mode = Mode::RandomChains {
            samples: 2000,
            seed: 11,
        };
        let r = worst_slack(&f, Property::Submodular, mode, EXACT).unwrap();
        assert_eq!((r.slack, r.scale), (-10.0, 36.0));
        assert!(r.witness.smaller.is_empty() && r.witness.larger.len() == 5);
        assert!(!r.witness.larger.contains(&r.witness.element) && !r.exhaustive);
        assert_eq!((r.witness.gain_smaller, r.witness.gain_larger), (1.0, 11.0));
        // Monotone: f(x | S) = 2|S| + 1 >= 1, smallest at S = {}; supermodular: +2 everywhere.
        let m = worst_slack(&f, Property::Monotone, Mode::Exhaustive, EXACT).unwrap();
        assert_eq!((m.slack, m.violated, m.witness.element), (1.0, 0, 0));
        assert!(m.witness.smaller.is_empty());
        let sup = worst_slack(&f, Property::Supermodular, Mode::Exhaustive, EXACT).unwrap();
        assert_eq!((sup.slack, sup.violated), (2.0, 0));
    }

    #[test]
    fn worst_slack_is_the_minimum_not_the_first_violation() {
        let f = weighted_square();
        // The first violation in lattice order is S = {}, x = 0, y = 1 with slack
        // -2 * 1 * 2 = -4 (gains 1 and 9 - 4 = 5) ...
        let first = check_submodular(&f, Mode::Exhaustive, EXACT);
        let w = first.witness().unwrap();
        assert_eq!((w.element, w.larger.clone()), (0, vec![1]));
        assert_eq!((w.gain_smaller, w.gain_larger), (1.0, 5.0));
        // ... the worst is the pair of largest weights, -2 * 3 * 4 = -24, first reached at
        // S = {}, x = 2, y = 3: f(2 | {}) = 9, f(2 | {3}) = 49 - 16 = 33. Every one of the
        // 4 * 3 * 2^2 = 48 local inequalities is violated; max |f| = 10^2.
        let s = worst_slack(&f, Property::Submodular, Mode::Exhaustive, EXACT).unwrap();
        assert_eq!(s.slack, -24.0);
        assert_eq!(
            (s.witness.smaller.clone(), s.witness.larger.clone()),
            (vec![], vec![3])
        );
        assert_eq!(
            (
                s.witness.element,
                s.witness.gain_smaller,
                s.witness.gain_larger
            ),
            (2, 9.0, 33.0)
        );
        assert_eq!((s.violated, s.checked, s.scale), (48, 48, 100.0));
        // With the default tolerance the allowance 1e-12 + 1e-9 max(9, 33) is added.
        let t = worst_slack(
            &f,
            Property::Submodular,
            Mode::Exhaustive,
            Tolerance::default(),
        );
        let t = t.unwrap();
        assert_eq!(t.witness, s.witness);
        assert!((t.slack - (-24.0 + 1e-12 + 33e-9)).abs() < 1e-14);
        // Supermodular slack +2 w_x w_y, smallest for the two smallest weights: 4.
        let sup = worst_slack(&f, Property::Supermodular, Mode::Exhaustive, EXACT).unwrap();
        assert_eq!(
            (sup.slack, sup.witness.element, sup.witness.larger),
            (4.0, 0, vec![1])
        );
        // Monotone: f(x | S) >= w_x^2 >= 1, at S = {}, x = 0.
        let m = worst_slack(&f, Property::Monotone, Mode::Exhaustive, EXACT).unwrap();
        assert_eq!((m.slack, m.witness.element), (1.0, 0));
    }

    #[test]
    fn worst_slack_of_coverage() {
        let f = coverage();
        // Monotone: the smallest gain is 0, first at S = {0, 2} (mask 5; {0, 1, 2} and
        // {3, 4, 5} cover every point) with x = 1; every smaller mask leaves each element a
        // new point.
        let m = worst_slack(&f, Property::Monotone, Mode::Exhaustive, EXACT).unwrap();
        assert_eq!(m.slack, 0.0);
        assert_eq!(
            (m.witness.smaller.clone(), m.witness.element),
            (vec![0, 2], 1)
        );
        assert_eq!(m.scale, 6.0);
        // Leaving out the zero gains: the smallest positive gain is 1, first at S = {0}
        // (points {0, 1, 2}) with x = 1 (points {2, 3}); at S = {} every gain is |c_x| >= 2.
        let strict = m.strict.unwrap();
        assert_eq!(strict.slack, 1.0);
        assert_eq!(
            (strict.witness.smaller, strict.witness.element),
            (vec![0], 1)
        );
        assert!(m.equalities > 0 && m.equalities < m.checked);
        // Submodular slack = |c_x and c_y, minus c_S| >= 0; first 0 at S = {}, x = 0, y = 2
        // (c_0 = {0, 1, 2} and c_2 = {3, 4, 5} are disjoint; y = 1 shares the point 2).
        let sub = worst_slack(&f, Property::Submodular, Mode::Exhaustive, EXACT).unwrap();
        assert_eq!((sub.slack, sub.violated), (0.0, 0));
        assert_eq!(
            (sub.witness.element, sub.witness.larger.clone()),
            (0, vec![2])
        );
        // Without the disjoint pairs: the smallest positive overlap, 1, first at S = {},
        // x = 0, y = 1 (the point 2).
        let strict = sub.strict.unwrap();
        assert_eq!(strict.slack, 1.0);
        assert_eq!(
            (strict.witness.element, strict.witness.larger),
            (0, vec![1])
        );
        // Supermodular slack = minus that overlap; every overlapping pair shares exactly one
        // point, so the minimum is -1, first at S = {}, x = 0, y = 1 (gains 3 and 2).
        let sup = worst_slack(&f, Property::Supermodular, Mode::Exhaustive, EXACT).unwrap();
        assert_eq!(sup.slack, -1.0);
        assert_eq!(
            (
                sup.witness.element,
                sup.witness.larger.clone(),
                sup.witness.gain_smaller
            ),
            (0, vec![1], 3.0)
        );
        assert_eq!(sup.witness.gain_larger, 2.0);
        // A violation is never an equality: the strict minimum is the same inequality.
        assert_eq!(sup.strict.unwrap().witness, sup.witness);
    }

    #[test]
    fn worst_slack_sign_agrees_with_the_checks() {
        let t = Tolerance::default();
        let modes = [
            Mode::Exhaustive,
            Mode::RandomChains {
                samples: 300,
                seed: 5,
            },
        ];
        let props = [
            Property::Monotone,
            Property::Submodular,
            Property::Supermodular,
        ];
        let mut violations = 0;
        let mut run = |f: &dyn Fn(Mode, Property) -> (Option<Slack>, Verdict)| {
            for mode in modes {
                for p in props {
                    let (s, v) = f(mode, p);
                    let s = s.unwrap();
                    assert_eq!(s.slack < 0.0, !v.holds(), "{p:?} {mode:?}");
                    assert_eq!(s.violated > 0, !v.holds(), "{p:?} {mode:?}");
                    violations += usize::from(!v.holds());
                }
            }
        };
        fn both(
            f: &impl SetFunction,
            mode: Mode,
            p: Property,
            t: Tolerance,
        ) -> (Option<Slack>, Verdict) {
            let v = match p {
                Property::Monotone => check_monotone(f, mode, t),
                Property::Submodular => check_submodular(f, mode, t),
                Property::Supermodular => check_supermodular(f, mode, t),
            };
            (worst_slack(f, p, mode, t), v)
        }
        run(&|m, p| both(&coverage(), m, p, t));
        run(&|m, p| both(&squared(), m, p, t));
        run(&|m, p| both(&modular(), m, p, t));
        run(&|m, p| both(&neither(), m, p, t));
        run(&|m, p| both(&weighted_square(), m, p, t));
        // Coverage (super), squared (sub), modular (monotone), neither (sub, super), weighted
        // square (sub), each in both modes.
        assert_eq!(violations, 12);
        // A modular function's slacks are 0 up to rounding: the allowance keeps them >= 0, and
        // all 4 * 3 * 2^2 = 48 local inequalities are equalities, so there is no strict one.
        let s = worst_slack(&modular(), Property::Submodular, Mode::Exhaustive, t).unwrap();
        assert!(s.slack > 0.0 && s.slack < 1e-8);
        assert_eq!((s.strict, s.equalities, s.checked), (None, 48, 48));
    }

    #[test]
    fn violations_lists_every_violated_inequality() {
        // |S|^2 violates every one of its 480 local submodular inequalities (see
        // worst_slack_of_squared_cardinality), the first at S = {}, x = 0, y = 1; coverage
        // none.
        let v = violations(&squared(), Property::Submodular, Mode::Exhaustive, EXACT);
        assert_eq!(v.len(), 480);
        assert_eq!(
            (v[0].smaller.clone(), v[0].larger.clone(), v[0].element),
            (vec![], vec![1], 0)
        );
        let t = Tolerance::default();
        assert!(violations(&coverage(), Property::Submodular, Mode::Exhaustive, t).is_empty());
        // The modular function with weight -1 on element 1: S + 1 loses 1 for each of the
        // 2^3 sets S without 1.
        let m = violations(&modular(), Property::Monotone, Mode::Exhaustive, t);
        assert_eq!(m.len(), 8);
        assert!(m.iter().all(|w| w.element == 1 && w.gain_smaller == -1.0));
    }

    #[test]
    fn worst_slack_without_inequalities_is_none() {
        let one = (1usize, |s: &[bool]| s[0] as u8 as f64);
        let t = Tolerance::default();
        assert!(worst_slack(&one, Property::Submodular, Mode::Exhaustive, t).is_none());
        let m = worst_slack(&one, Property::Monotone, Mode::Exhaustive, t).unwrap();
        assert_eq!((m.checked, m.witness.gain_smaller), (1, 1.0));
        let none = Mode::RandomChains {
            samples: 0,
            seed: 0,
        };
        assert!(worst_slack(&one, Property::Monotone, none, t).is_none());
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
