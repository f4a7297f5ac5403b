//! claims.csv, the verdicts of a `verify` run: its one schema, [`ClaimRow`], which `verify`
//! writes and the report page and the verdict page read back, and the cells the tables print
//! of a row.

use serde::{Deserialize, Serialize};

use crate::claims::{ClaimKind, Quantifier, Scale, Verdict};
use crate::tier::Tier;

/// The verdict of one claim over a run: a line of claims.csv, which `verify` writes and the
/// report page and the verdict page read back (this struct is the file's one schema).
///
/// The columns up to `note` are in every claims.csv; those after it were added over time, so
/// a folder written before one lacks it and each has a serde default. Counts read 0 and text
/// empty, as before the column nothing was counted or said; the enums read `None`, since none
/// of their values means "not recorded"; `scale` reads `small`, the one scale before
/// `--scale`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimRow {
    /// Claim id.
    pub id: String,
    /// Paper file.
    pub paper: String,
    /// Place in the paper.
    pub place: String,
    /// In the vocabulary of the claim's quantifier and kind ([`Verdict::of`]).
    pub verdict: Verdict,
    /// Instances with a pass, fail or measured outcome.
    pub checked: usize,
    /// Instances that failed.
    pub failed: usize,
    /// Instances without a conclusion (boundary cases among them); with `checked`, `vacuous`
    /// and `not_applicable`, every instance.
    pub inconclusive: usize,
    /// Checked instances whose outcome a proved optimum decided
    /// ([`crate::claims::Certificate::Optimum`]).
    pub by_optimum: usize,
    /// Passes decided by a proved bound on OPT alone
    /// ([`crate::claims::Certificate::Bound`]).
    pub by_bound: usize,
    /// Fails decided by a feasible solution alone
    /// ([`crate::claims::Certificate::Incumbent`]).
    pub by_incumbent: usize,
    /// Lowest margin ([`crate::claims::Check::margin`]) over the claim's instances, generated
    /// and searched: < 0 when violated (how badly), otherwise how close the claim came to
    /// failing.
    #[serde(deserialize_with = "required")]
    pub worst_margin: Option<f64>,
    /// The ratio of the checked instance closest to failing (lowest margin), whichever way
    /// the claim's inequality points (Prism's and ZipMoE's ratios are costs over the optimum,
    /// SlimCaching's gains over it); the lowest ratio for claims without margins.
    #[serde(deserialize_with = "required")]
    pub worst_ratio: Option<f64>,
    /// The bound on that instance.
    #[serde(deserialize_with = "required")]
    pub bound_at_worst: Option<f64>,
    /// Lowest ratio among checked instances.
    #[serde(deserialize_with = "required")]
    pub ratio_min: Option<f64>,
    /// Highest ratio among checked instances.
    #[serde(deserialize_with = "required")]
    pub ratio_max: Option<f64>,
    /// 5 % quantile (nearest rank) of the checked instances' ratios.
    #[serde(deserialize_with = "required")]
    pub ratio_p05: Option<f64>,
    /// Median of the checked instances' ratios.
    #[serde(deserialize_with = "required")]
    pub ratio_median: Option<f64>,
    /// The claimed bound in words.
    pub bound: String,
    /// Smallest and largest measured value of the checked instances (e.g. a curvature), for
    /// claims about a quantity rather than a ratio.
    #[serde(deserialize_with = "required")]
    pub measured_min: Option<f64>,
    /// See `measured_min`.
    #[serde(deserialize_with = "required")]
    pub measured_max: Option<f64>,
    /// Saved smallest counterexample, relative to the output folder.
    #[serde(deserialize_with = "required")]
    pub counterexample: Option<String>,
    /// Why inconclusive, or the counterexample's note.
    pub note: String,
    /// Stated, inferred, sanity or measurement (the claims.csv columns after `note`: added
    /// last, so readers of the older columns read on).
    #[serde(default)]
    pub kind: Option<ClaimKind>,
    /// Universal or existential.
    #[serde(default)]
    pub quantifier: Option<Quantifier>,
    /// Instances that miss the claim by less than its numeric tolerance
    /// ([`crate::claims::Outcome::Boundary`]): neither passes nor fails, counted among
    /// `inconclusive`.
    #[serde(default)]
    pub boundary: usize,
    /// The tier the run judged in (`--tier`): `verdict` and the counts above are over the
    /// instances inside it.
    #[serde(default)]
    pub tier: Option<Tier>,
    /// The verdict over the instances inside the evaluation's ranges.
    #[serde(default)]
    pub verdict_regime: Option<Verdict>,
    /// The verdict over the instances inside the paper's model (the headline's by default).
    #[serde(default)]
    pub verdict_model: Option<Verdict>,
    /// The verdict over every instance, extensions of the model included.
    #[serde(default)]
    pub verdict_extension: Option<Verdict>,
    /// Instances in the tier `regime`.
    #[serde(default)]
    pub instances_regime: usize,
    /// Instances in the tier `model` (inside the model, outside the ranges).
    #[serde(default)]
    pub instances_model: usize,
    /// Instances in the tier `extension`.
    #[serde(default)]
    pub instances_extension: usize,
    /// The saved counterexample's tier.
    #[serde(default)]
    pub counterexample_tier: Option<Tier>,
    /// The premises the saved counterexample breaks, `; `-separated.
    #[serde(default)]
    pub counterexample_broken: String,
    /// A repaired claim: the id of the stated claim it corrects.
    #[serde(default)]
    pub repairs: Option<String>,
    /// A stated claim: the repaired claim registered beside it, when the run checked it.
    #[serde(default)]
    pub repaired_by: Option<String>,
    /// That repaired claim's verdict in this run.
    #[serde(default)]
    pub repaired_verdict: Option<Verdict>,
    /// The instances' scale (`--scale`).
    #[serde(default)]
    pub scale: Scale,
    /// The family checked at that scale, in words (at `paper`: why none, when the claim has
    /// none there).
    #[serde(default)]
    pub family: String,
    /// Instances that hold only because the claimed bound is trivial there
    /// ([`crate::claims::Outcome::Vacuous`]): counted apart from `checked`, they are no
    /// evidence.
    #[serde(default)]
    pub vacuous: usize,
    /// Instances outside the claim's own premise ([`crate::claims::Outcome::NotApplicable`]).
    #[serde(default)]
    pub not_applicable: usize,
    /// Checked instances whose ratio to OPT is only an interval
    /// ([`crate::claims::Check::ratio_interval`]: OPT bracketed, not proved).
    #[serde(default)]
    pub bracketed: usize,
    /// The least ratio to OPT a checked instance allows: a proved ratio, or the low end of a
    /// bracketed one's interval.
    #[serde(default)]
    pub ratio_low: Option<f64>,
    /// The greatest: a proved ratio, or the high end of an interval.
    #[serde(default)]
    pub ratio_high: Option<f64>,
    /// The worst instance's ratio interval when its OPT is only bracketed (`worst_ratio` is
    /// then one end of it).
    #[serde(default)]
    pub worst_ratio_low: Option<f64>,
    /// See `worst_ratio_low`.
    #[serde(default)]
    pub worst_ratio_high: Option<f64>,
}

/// An `Option` column every claims.csv has (an empty cell is `None`): serde reads an absent
/// `Option` field as `None` unless a function reads it, and a file without the column is not a
/// `verify` output of any version.
fn required<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::deserialize(d)
}

impl ClaimRow {
    /// `kind, quantifier` as the tables print them (`stated, universal`), of what the row
    /// records.
    pub fn kind_text(&self) -> String {
        let kind = self.kind.map(ClaimKind::as_str);
        let quantifier = self.quantifier.map(Quantifier::as_str);
        [kind, quantifier]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The verdicts in the tiers regime / model / extension (`holds / holds / violated`);
    /// empty when the row lacks them.
    pub fn tiers_text(&self) -> String {
        match (
            self.verdict_regime,
            self.verdict_model,
            self.verdict_extension,
        ) {
            (Some(r), Some(m), Some(e)) => {
                format!("{} / {} / {}", r.as_str(), m.as_str(), e.as_str())
            }
            _ => String::new(),
        }
    }

    /// The verdict with the counts behind it, as the tables print it: `holds on 6 (14
    /// vacuous)`, `violated on 15 of 20`, `not applicable: premise fails on every instance`.
    pub fn verdict_text(&self) -> String {
        let apart: Vec<String> = [
            (self.vacuous, "vacuous", self.verdict != Verdict::Vacuous),
            (self.boundary, "boundary", self.verdict != Verdict::Boundary),
        ]
        .into_iter()
        .filter(|&(n, _, shown)| n > 0 && shown)
        .map(|(n, what, _)| format!("{n} {what}"))
        .collect();
        let text = match self.verdict {
            Verdict::Holds | Verdict::Witnessed | Verdict::Measured => {
                format!("{} on {}", self.verdict.as_str(), self.checked)
            }
            Verdict::Violated => format!("violated on {} of {}", self.failed, self.checked),
            Verdict::Boundary => format!("boundary on {}", self.boundary),
            Verdict::Vacuous => format!("vacuous on {}", self.vacuous),
            Verdict::NotApplicable => format!(
                "not applicable: premise fails on every instance ({})",
                self.not_applicable
            ),
            v => v.as_str().to_string(),
        };
        if apart.is_empty() {
            text
        } else {
            format!("{text} ({})", apart.join(", "))
        }
    }

    /// The verdict cell of the tables: [`Self::verdict_text`]; at the papers' scale, what
    /// certified the decided instances (`[optimum a, bound b, incumbent c]`); and the repair
    /// beside it (on a stated claim: its repaired claim and that claim's verdict; on a repair:
    /// the claim it repairs).
    pub fn verdict_cell(&self) -> String {
        let mut cell = self.verdict_text();
        if self.scale == Scale::Paper && self.checked > 0 {
            cell += &format!(
                " [optimum {}, bound {}, incumbent {}]",
                self.by_optimum, self.by_bound, self.by_incumbent
            );
        }
        match (&self.repairs, &self.repaired_by, self.repaired_verdict) {
            (Some(of), _, _) => format!("{cell} (repairs {of})"),
            (_, Some(by), Some(v)) => format!("{cell}; {by}: {}", v.as_str()),
            _ => cell,
        }
    }

    /// The worst ratio against its bound and the range of the ratios (an interval where OPT
    /// is only bracketed), or the range of the measured quantity; `-` when there is none.
    pub fn worst_text(&self) -> String {
        let range = |lo: Option<f64>, hi: Option<f64>| match (lo, hi) {
            (Some(lo), Some(hi)) => format!("{lo:.4}..{hi:.4}"),
            _ => "-".into(),
        };
        let ratios = || {
            let hull = range(self.ratio_low, self.ratio_high);
            match self.bracketed {
                0 => hull,
                n => format!("{hull} ({n} of {} only bracketed)", self.checked),
            }
        };
        let worst = match (
            self.worst_ratio,
            self.worst_ratio_low,
            self.worst_ratio_high,
        ) {
            (_, Some(lo), Some(hi)) => Some(format!("ratio in [{lo:.4}, {hi:.4}]")),
            (Some(x), _, _) => Some(format!("ratio {x:.4}")),
            _ => None,
        };
        match (
            worst,
            self.bound_at_worst,
            self.measured_min,
            self.measured_max,
        ) {
            (Some(w), Some(b), _, _) => format!("{w} (bound {b:.4}), range {}", ratios()),
            (Some(_), None, _, _) => format!("ratio range {}", ratios()),
            (None, _, Some(lo), Some(hi)) => format!("measured {lo:.4}..{hi:.4}"),
            _ => "-".into(),
        }
    }
}
