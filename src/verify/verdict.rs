//! A claim's verdict from its records (tiers, certificates, vacuous and not-applicable
//! instances counted apart), and the shrinking of its smallest counterexample.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::claims::{Certificate, ClaimInfo, Outcome, Verdict};
use crate::tier::Tier;

use super::*;

/// The verdict of a claim from its records; shrinks and saves its smallest counterexample.
pub(super) fn verdict(
    group: &dyn ClaimGroup,
    c: usize,
    info: &ClaimInfo,
    journal: &Journal,
    options: &VerifyOptions,
) -> Result<ClaimRow, formulations::Error> {
    let all: Vec<&Record> = journal
        .done
        .values()
        .filter(|r| r.claim == info.id)
        .collect();
    let inside = |t: Tier| all.iter().copied().filter(move |r| r.tier <= t);
    let per_tier = |t: Tier| Verdict::of(info, inside(t).map(|r| r.check.outcome));
    let count = |t: Tier| all.iter().filter(|r| r.tier == t).count();
    // The verdict and every count below: over the instances inside the run's tier.
    let records: Vec<&Record> = inside(options.tier).collect();
    // The evidence: passes, fails and measurements (not vacuous instances, boundary cases or
    // instances outside the claim's premise).
    let decided = |o: Outcome| matches!(o, Outcome::Pass | Outcome::Fail | Outcome::Measured);
    let checked = records.iter().filter(|r| decided(r.check.outcome)).count();
    let failed: Vec<&Record> = records
        .iter()
        .copied()
        .filter(|r| r.check.outcome == Outcome::Fail)
        .collect();
    let outcomes = |o: Outcome| records.iter().filter(|r| r.check.outcome == o).count();
    let inconclusive = outcomes(Outcome::Inconclusive) + outcomes(Outcome::Boundary);
    let worst_margin = records
        .iter()
        .filter_map(|r| r.check.margin)
        .reduce(f64::min);
    let judged = || records.iter().filter(|r| decided(r.check.outcome));
    let worst = judged()
        .filter_map(|r| Some((r.check.margin?, r.check.ratio?, r)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, ratio, r)| (ratio, r))
        .or_else(|| {
            judged()
                .filter_map(|r| r.check.ratio.map(|x| (x, r)))
                .min_by(|a, b| a.0.total_cmp(&b.0))
        })
        .map(|(ratio, r)| (ratio, r.check.bound, r.check.ratio_interval));
    // Each checked instance's ratio as an interval (a point where OPT is proved).
    let intervals = || {
        judged().filter_map(|r| {
            r.check
                .ratio_interval
                .or_else(|| r.check.ratio.map(|x| [x, x]))
        })
    };
    let ratio_min = judged().filter_map(|r| r.check.ratio).reduce(f64::min);
    let ratio_max = judged().filter_map(|r| r.check.ratio).reduce(f64::max);
    let mut ratios: Vec<f64> = judged().filter_map(|r| r.check.ratio).collect();
    let ratio_quantiles = verification::ratio::quantiles(&mut ratios);
    let measured: Vec<f64> = judged()
        .filter(|r| r.check.ratio.is_none())
        .filter_map(|r| r.check.value)
        .collect();
    let measured_min = measured.iter().copied().reduce(f64::min);
    let measured_max = measured.iter().copied().reduce(f64::max);
    let mut counterexample = None;
    let mut note = String::new();
    let mut counterexample_tier = None;
    let mut counterexample_broken = String::new();
    if let Some(saved) = group.counterexample(c, &failed, options)? {
        counterexample = Some(saved.path);
        note = saved.note;
        counterexample_tier = Some(saved.classified.tier);
        counterexample_broken = saved.classified.broken.join("; ");
    } else if checked == 0 {
        note = match group.family(c, options.scale) {
            Err(why) => format!("not checked at the papers' scale: {why}"),
            Ok(_) => most_common(records.iter().map(|r| r.check.note.as_str()))
                .unwrap_or("no instance checked")
                .to_string(),
        };
    }
    let verdict = Verdict::of(info, records.iter().map(|r| r.check.outcome));
    let certified = |c: Certificate| {
        records
            .iter()
            .filter(|r| r.check.certificate == Some(c))
            .count()
    };
    Ok(ClaimRow {
        id: info.id.into(),
        paper: info.paper.into(),
        place: info.place.into(),
        verdict,
        checked,
        failed: failed.len(),
        inconclusive,
        by_optimum: certified(Certificate::Optimum),
        by_bound: certified(Certificate::Bound),
        by_incumbent: certified(Certificate::Incumbent),
        worst_margin,
        worst_ratio: worst.map(|w| w.0),
        bound_at_worst: worst.and_then(|w| w.1),
        worst_ratio_low: worst.and_then(|w| w.2).map(|i| i[0]),
        worst_ratio_high: worst.and_then(|w| w.2).map(|i| i[1]),
        vacuous: outcomes(Outcome::Vacuous),
        not_applicable: outcomes(Outcome::NotApplicable),
        bracketed: judged()
            .filter(|r| r.check.ratio_interval.is_some())
            .count(),
        ratio_low: intervals().map(|i| i[0]).reduce(f64::min),
        ratio_high: intervals().map(|i| i[1]).reduce(f64::max),
        ratio_min,
        ratio_max,
        bound: info.bound.into(),
        measured_min,
        measured_max,
        ratio_p05: ratio_quantiles.map(|q| q[1]),
        ratio_median: ratio_quantiles.map(|q| q[3]),
        counterexample,
        note,
        kind: Some(info.kind),
        quantifier: Some(info.quantifier),
        boundary: outcomes(Outcome::Boundary),
        tier: Some(options.tier),
        verdict_regime: Some(per_tier(Tier::Regime)),
        verdict_model: Some(per_tier(Tier::Model)),
        verdict_extension: Some(per_tier(Tier::Extension)),
        instances_regime: count(Tier::Regime),
        instances_model: count(Tier::Model),
        instances_extension: count(Tier::Extension),
        counterexample_tier,
        counterexample_broken,
        repairs: info.repairs.map(str::to_string),
        repaired_by: None,
        repaired_verdict: None,
        scale: options.scale,
        family: group
            .family(c, options.scale)
            .unwrap_or_else(|why| why)
            .into(),
    })
}

/// Puts each repaired claim's id and verdict on the row of the claim it repairs, so that the
/// two verdicts stand side by side in claims.csv and the tables.
pub(super) fn link_repairs(rows: &mut [ClaimRow]) {
    let repairs: Vec<(String, String, Verdict)> = rows
        .iter()
        .filter_map(|r| Some((r.repairs.clone()?, r.id.clone(), r.verdict)))
        .collect();
    for (original, id, verdict) in repairs {
        if let Some(row) = rows.iter_mut().find(|r| r.id == original) {
            row.repaired_by = Some(id);
            row.repaired_verdict = Some(verdict);
        }
    }
}

/// The serde name of a unit enum (`pass`, `optimum`, ...).
pub(super) fn enum_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|j| j.as_str().map(str::to_string))
        .unwrap_or_default()
}

pub(super) fn most_common<'a>(notes: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for n in notes {
        *counts.entry(n).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|(n, c)| (*c, std::cmp::Reverse(*n)))
        .map(|(n, _)| n)
}
