//! The commands' text renderings: presets, families, problems, claims, premises, checks and
//! the verify summary.

use std::path::Path;

use crate::claims::{ClaimInfo, ClaimKind, Scale, Verdict};
use crate::registry::{Entry, Registry};
use crate::render::table;
use crate::verify::claims_csv::ClaimRow;

/// `generate PROBLEM --list-presets`.
pub(super) fn presets_text(entry: &dyn Entry) -> String {
    let presets = entry.presets();
    if presets.is_empty() {
        return format!(
            "{} has no presets: give --config (--print-config shows the default)\n",
            entry.tag()
        );
    }
    let rows: Vec<Vec<String>> = presets
        .into_iter()
        .map(|(n, d)| vec![n, d.to_string()])
        .collect();
    table(&["preset", "what"], &rows, 2)
}

/// `generate PROBLEM --family help`.
pub(super) fn families_text(entry: &dyn Entry) -> String {
    let families = entry.families();
    if families.is_empty() {
        return format!("{} has no parametric families\n", entry.tag());
    }
    let rows: Vec<Vec<String>> = families
        .iter()
        .map(|f| {
            vec![
                f.name.to_string(),
                f.claim.to_string(),
                f.param.to_string(),
                format!("{} = {}", f.measure, f.closed_form),
            ]
        })
        .collect();
    table(&["family", "claim", "X", "measure"], &rows, 4)
}

/// `moe-opt problems`.
pub(super) fn problems_text(registry: &Registry) -> String {
    let mut text = String::new();
    for e in registry.entries() {
        text.push_str(&format!("{}: {}\n", e.tag(), e.about()));
        let methods = e.methods();
        if !methods.is_empty() {
            let rows: Vec<Vec<String>> = methods
                .into_iter()
                .map(|(n, d)| vec![n, d.to_string()])
                .collect();
            text.push_str(&table(&["method", "what"], &rows, 2));
        }
        let presets: Vec<String> = e.presets().into_iter().map(|(n, _)| n).collect();
        if !presets.is_empty() {
            text.push_str(&format!("  presets: {}\n", presets.join(", ")));
        }
        let families: Vec<&str> = e.families().iter().map(|f| f.name).collect();
        if !families.is_empty() {
            text.push_str(&format!("  families: {}\n", families.join(", ")));
        }
        text.push('\n');
    }
    text
}

/// `verify --instance FILE --claim ID`: the check in words.
pub(super) fn check_text(claim: &ClaimInfo, check: &crate::claims::Check) -> String {
    let num = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.6}"));
    let outcome = serde_json::to_value(check.outcome).expect("outcomes serialise");
    // Ratio claims: the bounds on OPT and what decided the outcome.
    let certified = if check.lower.is_some() || check.upper.is_some() {
        let by = check.certificate.map_or(serde_json::Value::Null, |c| {
            serde_json::to_value(c).expect("certificates serialise")
        });
        format!(
            "  OPT in [{}, {}], certified by {}\n",
            num(check.lower),
            num(check.upper),
            by.as_str().unwrap_or(match check.outcome {
                // A measurement has no bound to certify: the interval is what it measured.
                crate::claims::Outcome::Measured => "nothing (a measurement)",
                crate::claims::Outcome::Vacuous => "nothing (the bound is trivial: vacuous)",
                _ => "nothing (inconclusive)",
            })
        )
    } else {
        String::new()
    };
    format!(
        "{} ({}): {}\n  {}\n  value {}, reference {} ({}), ratio {}, bound {}, margin {}\n{}",
        claim.id,
        claim.place,
        outcome.as_str().unwrap_or_default(),
        check.note,
        num(check.value),
        num(check.reference),
        serde_json::to_value(check.reference_kind)
            .expect("kinds serialise")
            .as_str()
            .unwrap_or_default(),
        match check.ratio_interval {
            // OPT only bracketed: the ratio is the interval, not a measured number.
            Some([low, high]) => format!("in [{low:.6}, {high:.6}]"),
            None => num(check.ratio),
        },
        num(check.bound),
        num(check.margin),
        certified,
    )
}

/// `, premises not met: NAME: reason; ...` for a non-empty list of broken premises (a tier
/// below `regime` is inside the paper's model or its extension, not a broken model).
pub(super) fn broken_text(broken: &[String]) -> String {
    if broken.is_empty() {
        String::new()
    } else {
        format!(", premises not met: {}", broken.join("; "))
    }
}

/// `moe-opt claims --premises`: a block per premise (its sentence is too long for a table).
pub(super) fn premises_text(infos: &[crate::tier::PremiseInfo]) -> String {
    let mut text = String::new();
    for p in infos {
        // A premise of every claim of its group: the group's paper says which.
        let group = infos
            .iter()
            .filter(|q| q.paper == p.paper)
            .map(|q| q.claims.matches(", ").count())
            .max();
        let claims = if Some(p.claims.matches(", ").count()) == group && p.claims.contains(", ") {
            format!("every claim of {} on such instances", p.paper)
        } else {
            p.claims.clone()
        };
        let level = match p.level {
            crate::tier::Level::Model => "model: breaking it makes an instance `extension`",
            crate::tier::Level::Regime => "regime: breaking it makes an instance `model`",
        };
        text.push_str(&format!(
            "{} ({level})\n  claims: {}\n  place: {}\n  quote: \"{}\"\n",
            p.name, claims, p.place, p.quote
        ));
    }
    text
}

/// `moe-opt claims`: per claim its id, kind and quantifier, place, the paper's sentence, the
/// statement as moe-opt reads it and the bound. A block per claim: the quotes are too long for
/// a table's cells.
pub(super) fn claims_text(infos: &[ClaimInfo]) -> String {
    let mut text = String::new();
    for i in infos {
        let repairs = i
            .repairs
            .map_or(String::new(), |of| format!(", repairs {of}"));
        text.push_str(&format!(
            "{} ({}, {}{repairs})
  place: {}
  paper: \"{}\"
  claim: {}
  bound: {}
\n",
            i.id,
            i.kind.as_str(),
            i.quantifier.as_str(),
            i.place,
            i.quote,
            i.statement,
            i.bound
        ));
    }
    text
}

/// The `verify` and demo summary: a section per kind of claim, a line per claim.
pub(super) fn verify_text(rows: &[ClaimRow], out: &Path) -> String {
    let mut text = String::new();
    // A section per kind, the paper's own claims first: only those can be the paper's errors.
    for (kinds, heading) in [
        (&[ClaimKind::Stated][..], "stated by the papers"),
        (
            &[ClaimKind::Repaired][..],
            "repaired by moe-opt (corrections of violated stated claims, each proved in its \
             module doc or read from the paper's own weaker sentence)",
        ),
        (
            &[ClaimKind::Inferred][..],
            "inferred by moe-opt (the papers do not state them: not the papers' errors)",
        ),
        (
            &[ClaimKind::Sanity, ClaimKind::Measurement][..],
            "sanity checks (true by construction) and measurements (no bound, no verdict)",
        ),
    ] {
        let table_rows: Vec<Vec<String>> = rows
            .iter()
            .filter(|r| r.kind.is_some_and(|k| kinds.contains(&k)))
            .map(|r| {
                vec![
                    r.id.clone(),
                    r.kind_text(),
                    r.verdict_cell(),
                    r.inconclusive.to_string(),
                    r.worst_text(),
                    r.tiers_text(),
                ]
            })
            .collect();
        if table_rows.is_empty() {
            continue;
        }
        text.push_str(&format!("== {heading}\n"));
        text.push_str(&table(
            &[
                "claim",
                "kind",
                "verdict",
                "inconclusive",
                "worst ratio / measured",
                "regime / model / extension",
            ],
            &table_rows,
            3,
        ));
    }
    if let Some(r) = rows.first() {
        if let Some(tier) = r.tier {
            text.push_str(&format!(
                "verdicts and counts over the instances inside the tier {tier}; the last column \
                 is each tier's verdict (claims.csv: instances per tier)\n"
            ));
        }
        if r.scale == Scale::Paper {
            text.push_str(
                "at the papers' scale: [what certified the decided instances: a proved optimum, \
                 a bound on OPT, a feasible solution's value]\n",
            );
        }
    }
    for r in rows {
        if let Some(path) = &r.counterexample {
            let tier = r.counterexample_tier.map_or(String::new(), |t| {
                let broken = if r.counterexample_broken.is_empty() {
                    String::new()
                } else {
                    format!(", premises not met: {}", r.counterexample_broken)
                };
                format!(", tier {t}{broken}")
            });
            text.push_str(&format!(
                "{}: counterexample {} ({}{tier})\n  re-check: {}\n",
                r.id,
                out.join(path).display(),
                r.note,
                crate::verify::recheck_command(&r.id, &out.join(path))
            ));
        } else if matches!(
            r.verdict,
            Verdict::Inconclusive
                | Verdict::NotWitnessed
                | Verdict::Vacuous
                | Verdict::NotApplicable
        ) {
            text.push_str(&format!("{}: {}: {}\n", r.id, r.verdict.as_str(), r.note));
        }
    }
    text.push_str(&format!(
        "claims: {}  instances: {}\n",
        out.join("claims.csv").display(),
        out.join("instances.csv").display()
    ));
    text
}
