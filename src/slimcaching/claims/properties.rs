//! The property claims on set functions: Props. 1 and 2 on F over V, Prop. 4 on F~^mod_n and
//! F~^super_n along Alg. 3's run, judged from the worst slack of each property.

use formulations::slimcaching::Instance;
use serde_json::{json, Value};
use verification::{
    check_submodular, check_supermodular, worst_slack, Mode, Property, SetFunction, Slack,
};

use super::set_functions::{
    exhaustive_mode, full_function, prefix, server_ground, set_mode, top_k, PlacementFunction,
};
use super::witnesses::{slack_json, witness_json};
use super::{alg3, compile_top_k, fmt_margin, slack_margin, TOLERANCE};
use crate::claims::{Check, CheckOptions, Outcome};

/// The worst slacks of `properties` of `f` in `mode`, the property claim's margin (their
/// smallest [`slack_margin`]) and the inequalities visited.
fn measure<'p>(
    f: &PlacementFunction,
    properties: &[(&'p str, Property)],
    mode: Mode,
) -> (Vec<(&'p str, Slack)>, Option<f64>, u64) {
    let slacks: Vec<(&str, Slack)> = properties
        .iter()
        .filter_map(|&(name, p)| worst_slack(f, p, mode, TOLERANCE).map(|s| (name, s)))
        .collect();
    let margin = slacks
        .iter()
        .filter_map(|(_, s)| slack_margin(s))
        .reduce(f64::min);
    let checked = slacks.iter().map(|(_, s)| s.checked).sum();
    (slacks, margin, checked)
}

/// A property claim on F over V (Props. 1 and 2): fail when some property's worst slack is
/// negative, pass when none is and the lattice was covered, inconclusive otherwise.
fn property_claim(
    instance: &Instance,
    want_top1: bool,
    properties: &[(&str, Property)],
    seed: u64,
) -> Check {
    let model = match compile_top_k(instance, want_top1) {
        Ok(m) => m,
        Err(note) => return Check::inconclusive(note),
    };
    let (f, described) = full_function(&model);
    let mode = set_mode(f.ground_size(), seed);
    let (slacks, margin, checked) = measure(&f, properties, mode);
    let exhaustive = exhaustive_mode(mode);
    let how = if exhaustive {
        "exhaustively"
    } else {
        "on sampled chains"
    };
    let failing: Vec<&(&str, Slack)> = slacks.iter().filter(|(_, s)| s.slack < 0.0).collect();
    if margin.is_some_and(|m| m < 0.0) {
        let names: Vec<&str> = failing.iter().map(|(p, _)| *p).collect();
        let gains: Vec<String> = failing
            .iter()
            .map(|(p, s)| {
                format!(
                    "{p}: gains {:.3e} at A, {:.3e} at B",
                    s.witness.gain_smaller, s.witness.gain_larger
                )
            })
            .collect();
        return Check::property(
            Outcome::Fail,
            None,
            format!(
                "F is not {} on V = {described} (checked {how}; worst {}; margin {})",
                names.join(" and not "),
                gains.join(", "),
                fmt_margin(margin)
            ),
            Some(json!({
                "ground_set": described,
                "violations": failing.iter().map(|(p, s)| slack_json(&f, p, s))
                    .collect::<Vec<_>>(),
            })),
            margin,
        );
    }
    let names: Vec<&str> = properties.iter().map(|(p, _)| *p).collect();
    Check::property(
        if exhaustive {
            Outcome::Pass
        } else {
            Outcome::Inconclusive
        },
        None,
        format!(
            "F {} on V = {described}: {checked} inequalities checked {how}; margin {}",
            names.join(" and "),
            fmt_margin(margin)
        ),
        None,
        margin.filter(|_| exhaustive),
    )
}

/// Claim `prop1-submodular`.
pub(super) fn check_prop1(instance: &Instance, _options: &CheckOptions) -> Check {
    property_claim(
        instance,
        true,
        &[
            ("monotone non-decreasing", Property::Monotone),
            ("submodular", Property::Submodular),
        ],
        1,
    )
}

/// Claim `prop2-monotone`.
pub(super) fn check_prop2_monotone(instance: &Instance, _options: &CheckOptions) -> Check {
    property_claim(
        instance,
        false,
        &[("monotone non-decreasing", Property::Monotone)],
        2,
    )
}

/// Claim `prop2-neither`.
pub(super) fn check_prop2_neither(instance: &Instance, _options: &CheckOptions) -> Check {
    let model = match compile_top_k(instance, false) {
        Ok(m) => m,
        Err(note) => return Check::inconclusive(note),
    };
    let (f, described) = full_function(&model);
    let mode = set_mode(f.ground_size(), 3);
    let sub = check_submodular(&f, mode, TOLERANCE);
    let sup = check_supermodular(&f, mode, TOLERANCE);
    let not_sub = sub.witness().map(|w| witness_json(&f, "submodular", w));
    let not_sup = sup.witness().map(|w| witness_json(&f, "supermodular", w));
    let how = if exhaustive_mode(mode) {
        "exhaustive search"
    } else {
        "sampled chains"
    };
    let (outcome, note) = match (&not_sub, &not_sup) {
        (Some(_), Some(_)) => (
            Outcome::Pass,
            format!("F is neither submodular nor supermodular on V = {described} (both witnesses)"),
        ),
        (Some(_), None) => (
            Outcome::Inconclusive,
            format!(
                "only a submodularity violation on V = {described}: F is supermodular here \
                 ({how})"
            ),
        ),
        (None, Some(_)) => (
            Outcome::Inconclusive,
            format!(
                "only a supermodularity violation on V = {described}: F is submodular here \
                 ({how})"
            ),
        ),
        (None, None) => (
            Outcome::Inconclusive,
            format!("F is both submodular and supermodular (modular) on V = {described} ({how})"),
        ),
    };
    let witness = (not_sub.is_some() || not_sup.is_some()).then(|| {
        json!({ "ground_set": described, "not_submodular": not_sub,
                "not_supermodular": not_sup })
    });
    // An existence claim has no margin: no single instance can fail it.
    Check::property(outcome, None, note, witness, None)
}

/// A part of Prop. 4 on one server: its name, the set function and its claimed properties.
type Part<'f, 'a> = (
    &'static str,
    &'f PlacementFunction<'a>,
    &'static [(&'static str, Property)],
);

/// Claim `prop4-structure`.
pub(super) fn check_prop4(instance: &Instance, _options: &CheckOptions) -> Check {
    let (model, run) = match alg3(instance) {
        Ok(x) => x,
        Err(note) => return Check::inconclusive(note),
    };
    let mut total = 0u64;
    let mut sampled = false;
    // The worst (server, part, property) so far: its margin, a description and its evidence.
    let mut worst: Option<(f64, String, Value)> = None;
    let mut failing: Vec<String> = Vec::new();
    for n in 0..model.servers() {
        let base = prefix(&run.placement, n);
        let ground = server_ground(&model, n);
        let modular =
            PlacementFunction::new(&model, &base, ground.clone(), |d| top_k(instance, d) == 1);
        let superm = PlacementFunction::new(&model, &base, ground, |d| top_k(instance, d) > 1);
        let mode = set_mode(modular.ground_size(), 4 + n as u64);
        sampled |= !exhaustive_mode(mode);
        let parts: [Part; 2] = [
            (
                "F~^mod",
                &modular,
                &[
                    ("monotone non-decreasing", Property::Monotone),
                    ("submodular", Property::Submodular),
                    ("supermodular", Property::Supermodular),
                ],
            ),
            (
                "F~^super",
                &superm,
                &[
                    ("monotone non-decreasing", Property::Monotone),
                    ("supermodular", Property::Supermodular),
                ],
            ),
        ];
        for (part, f, properties) in parts {
            let (slacks, _, checked) = measure(f, properties, mode);
            total += checked;
            for (property, s) in &slacks {
                let Some(m) = slack_margin(s) else {
                    continue;
                };
                if m < 0.0 {
                    failing.push(format!("server {n} {part} {property}"));
                }
                if worst.as_ref().is_none_or(|w| m < w.0) {
                    let mut w = slack_json(f, property, s);
                    w["server"] = json!(n);
                    w["part"] = json!(part);
                    let at = s.strict.as_ref().map_or(&s.witness, |t| &t.witness);
                    let what = format!(
                        "server {n}: {part} {} {property} (gains {:.3e} at A, {:.3e} at B)",
                        if m < 0.0 {
                            "is not"
                        } else {
                            "is closest to failing"
                        },
                        at.gain_smaller,
                        at.gain_larger
                    );
                    worst = Some((m, what, w));
                }
            }
        }
    }
    let margin = worst.as_ref().map(|w| w.0);
    if let Some((m, what, w)) = worst.filter(|w| w.0 < 0.0) {
        return Check::property(
            Outcome::Fail,
            None,
            format!(
                "{what}; margin {}; {} violated: {}",
                fmt_margin(Some(m)),
                failing.len(),
                failing.join(", ")
            ),
            Some(w),
            margin,
        );
    }
    Check::property(
        if sampled {
            Outcome::Inconclusive
        } else {
            Outcome::Pass
        },
        None,
        format!(
            "on all {} servers F~^mod is modular and non-decreasing and F~^super supermodular \
             and non-decreasing: {total} inequalities checked {}; margin {}",
            model.servers(),
            if sampled {
                "(some on sampled chains only)"
            } else {
                "exhaustively"
            },
            fmt_margin(margin)
        ),
        None,
        margin.filter(|_| !sampled),
    )
}
