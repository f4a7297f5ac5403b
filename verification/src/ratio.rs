//! Approximation-ratio statistics over many instances, and the verdict of a ratio claim.
//!
//! A claim "ALG >= c OPT" (maximisation, [`Direction::AtLeast`]) or "ALG <= c OPT"
//! (minimisation, [`Direction::AtMost`]) is checked on an instance only when OPT is proved:
//! exhaustive search, or a MILP solved to zero gap. An instance with only a bound, or with no
//! reference, counts as inconclusive, never as a pass. The inequality itself is checked (with a
//! tolerance), so OPT = 0 needs no special ratio convention; the ratio ALG / OPT is reported
//! where OPT != 0.

use serde::Serialize;

use crate::setfn::Tolerance;

/// Which side of c OPT the algorithm must be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// ALG >= c OPT (maximisation).
    AtLeast,
    /// ALG <= c OPT (minimisation).
    AtMost,
}

/// What the algorithm's value is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Reference {
    /// A proved optimum.
    Optimum(f64),
    /// Only a bound on the optimum (solver stopped early): inconclusive.
    Bound(f64),
    /// No reference at all: inconclusive.
    Unavailable,
}

/// One instance's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observation {
    /// The algorithm's objective value.
    pub value: f64,
    /// The reference.
    pub reference: Reference,
}

impl Observation {
    /// value / OPT when OPT is proved and non-zero.
    pub fn ratio(&self) -> Option<f64> {
        match self.reference {
            Reference::Optimum(opt) if opt != 0.0 => Some(self.value / opt),
            _ => None,
        }
    }

    /// Whether the claim's inequality holds (`None` when not proved).
    pub fn satisfies(&self, bound: f64, direction: Direction, tol: Tolerance) -> Option<bool> {
        let Reference::Optimum(opt) = self.reference else {
            return None;
        };
        let target = bound * opt;
        Some(match direction {
            Direction::AtLeast => tol.at_least(self.value, target),
            Direction::AtMost => tol.at_least(target, self.value),
        })
    }
}

/// Summary of the ratios of many instances against a claimed bound.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatioSummary {
    /// Instances with a proved optimum (the checked ones).
    pub checked: usize,
    /// Instances without one.
    pub inconclusive: usize,
    /// Checked instances on the wrong side of the bound.
    pub violations: usize,
    /// Index (into the observations) of the worst checked instance: lowest ratio for
    /// `AtLeast`, highest for `AtMost`.
    pub worst_index: Option<usize>,
    /// Its ratio.
    pub worst_ratio: Option<f64>,
    /// Ratio quantiles at 0, 5, 25, 50, 75, 95 and 100 % (nearest rank), over checked
    /// instances with OPT != 0.
    pub quantiles: Option<[f64; 7]>,
}

/// The quantile levels of [`RatioSummary::quantiles`].
pub const QUANTILE_LEVELS: [f64; 7] = [0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0];

/// Nearest-rank quantiles of `values` at [`QUANTILE_LEVELS`] (sorts `values`); `None` when
/// empty.
pub fn quantiles(values: &mut [f64]) -> Option<[f64; 7]> {
    values.sort_by(f64::total_cmp);
    (!values.is_empty()).then(|| {
        QUANTILE_LEVELS.map(|q| {
            let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
            values[rank - 1]
        })
    })
}

/// Summarises observations against the claim `ALG (>= | <=) bound * OPT`.
pub fn summarize(
    observations: &[Observation],
    bound: f64,
    direction: Direction,
    tol: Tolerance,
) -> RatioSummary {
    let mut checked = 0;
    let mut violations = 0;
    let mut ratios = Vec::new();
    let mut worst: Option<(usize, f64)> = None;
    for (i, o) in observations.iter().enumerate() {
        let Some(ok) = o.satisfies(bound, direction, tol) else {
            continue;
        };
        checked += 1;
        if !ok {
            violations += 1;
        }
        if let Some(r) = o.ratio() {
            ratios.push(r);
            let worse = match (worst, direction) {
                (None, _) => true,
                (Some((_, w)), Direction::AtLeast) => r < w,
                (Some((_, w)), Direction::AtMost) => r > w,
            };
            if worse {
                worst = Some((i, r));
            }
        }
    }
    let quantiles = quantiles(&mut ratios);
    RatioSummary {
        checked,
        inconclusive: observations.len() - checked,
        violations,
        worst_index: worst.map(|w| w.0),
        worst_ratio: worst.map(|w| w.1),
        quantiles,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(value: f64, reference: Reference) -> Observation {
        Observation { value, reference }
    }

    #[test]
    fn only_proved_optima_are_checked() {
        let o = [
            obs(0.9, Reference::Optimum(1.0)),
            obs(0.5, Reference::Bound(1.0)),
            obs(0.4, Reference::Unavailable),
            obs(0.7, Reference::Optimum(1.0)),
        ];
        let s = summarize(&o, 0.8, Direction::AtLeast, Tolerance::default());
        assert_eq!((s.checked, s.inconclusive, s.violations), (2, 2, 1));
        assert_eq!((s.worst_index, s.worst_ratio), (Some(3), Some(0.7)));
    }

    #[test]
    fn quantiles_use_nearest_rank() {
        // Ratios 0.1 .. 1.0 in steps of 0.1 (ten values): the 5 % rank is ceil(0.5) = 1
        // (0.1), 25 % rank ceil(2.5) = 3 (0.3), median rank 5 (0.5), 75 % rank ceil(7.5) = 8,
        // 95 % rank ceil(9.5) = 10.
        let o: Vec<_> = (1..=10)
            .map(|k| obs(k as f64 / 10.0, Reference::Optimum(1.0)))
            .collect();
        let s = summarize(&o, 0.0, Direction::AtLeast, Tolerance::default());
        let q = s.quantiles.unwrap();
        let expected = [0.1, 0.1, 0.3, 0.5, 0.8, 1.0, 1.0];
        for (a, b) in q.iter().zip(expected) {
            assert!((a - b).abs() < 1e-12, "{q:?}");
        }
    }

    #[test]
    fn minimisation_claims_look_at_the_largest_ratio() {
        // Makespan claim ALG <= 2.5 OPT: 30 / 10 = 3 violates, 20 / 10 = 2 does not.
        let o = [
            obs(20.0, Reference::Optimum(10.0)),
            obs(30.0, Reference::Optimum(10.0)),
        ];
        let s = summarize(&o, 2.5, Direction::AtMost, Tolerance::default());
        assert_eq!(
            (s.violations, s.worst_index, s.worst_ratio),
            (1, Some(1), Some(3.0))
        );
    }

    #[test]
    fn zero_optimum_checks_the_inequality_without_a_ratio() {
        // OPT = 0 and ALG = 0 satisfies ALG >= c OPT for any c; no ratio is defined.
        let o = [obs(0.0, Reference::Optimum(0.0))];
        let s = summarize(&o, 0.63, Direction::AtLeast, Tolerance::default());
        assert_eq!((s.checked, s.violations, s.worst_ratio), (1, 0, None));
    }
}
