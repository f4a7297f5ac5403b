//! The property claims on set functions: Props. 1 and 2 on F over V, Prop. 4 on F~^mod_n and
//! F~^super_n along Alg. 3's run, judged from the worst slack of each property.
//!
//! A ground set of at most [`super::EXHAUSTIVE_SET_LIMIT`] elements is checked whole, over its
//! 2^|V| subsets. A larger one (the paper's sizes) is decided demand by demand ([`termwise`]):
//! f is the sum of its demands' terms, each depending on the few pairs of its own experts (N x
//! K at most), and the terms on the same pairs are summed into groups, each checked over
//! every subset of its pairs. Monotone, submodular and supermodular functions are closed under
//! sums, so when every group has the property f has it: a proof for the instance (each group's
//! inequalities within the tolerance of that group's values). A group's violation is one of f
//! only if the other groups do not make up for it: each is lifted to f (the same sets and
//! element on the whole ground set, where only the groups that contain the element count) and
//! the worst that survives is re-evaluated by f itself, the one evaluator, as the witness.
//! Groups whose every violation is made up for leave the property undecided (inconclusive).

use formulations::slimcaching::Instance;
use serde_json::{json, Value};
use verification::{
    check_submodular, check_supermodular, violations, worst_slack, Mode, Property, SetFunction,
    Slack, Witness,
};

use super::set_functions::{
    exhaustive_mode, full_function, prefix, server_ground, set_mode, top_k, Group,
    PlacementFunction,
};
use super::witnesses::{slack_json, witness_json};
use super::{
    alg3, compile_top_k, fmt_margin, normalised, slack_margin, EXHAUSTIVE_SET_LIMIT, TOLERANCE,
};
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

/// What deciding properties of a [`PlacementFunction`] group by group found (module doc).
pub(super) struct Termwise<'p> {
    /// Per property violated by f: its worst inequality of f (ground indices, gains by f
    /// itself) and f's slack there.
    pub(super) violated: Vec<(&'p str, Property, f64, Witness)>,
    /// Per property: the groups that violate it although f does not, as far as their lifted
    /// violations show.
    pub(super) unresolved: Vec<(&'p str, usize)>,
    /// The smallest group margin ([`slack_margin`]) over the groups without a violation.
    margin: Option<f64>,
    /// The groups' inequalities visited.
    checked: u64,
    /// How many groups.
    pub(super) groups: usize,
}

/// f(x | set) of `f` summed over the groups that contain x (the others do not depend on x).
fn group_gain(groups: &[Group], containing: &[Vec<usize>], set: &[bool], x: usize) -> f64 {
    containing[x]
        .iter()
        .map(|&g| {
            let group = &groups[g];
            let bit = group
                .elements
                .iter()
                .position(|&i| i == x)
                .expect("x is in it");
            let mask = group.mask(set);
            group.values[mask | 1 << bit] - group.values[mask & !(1 << bit)]
        })
        .sum()
}

/// Decides `properties` of `f` group by group (module doc).
pub(super) fn termwise<'p>(
    f: &PlacementFunction,
    properties: &[(&'p str, Property)],
) -> Termwise<'p> {
    let groups = f.groups();
    let mut containing: Vec<Vec<usize>> = vec![Vec::new(); f.ground_size()];
    for (g, group) in groups.iter().enumerate() {
        for &i in &group.elements {
            containing[i].push(g);
        }
    }
    let mut found = Termwise {
        violated: Vec::new(),
        unresolved: Vec::new(),
        margin: None,
        checked: 0,
        groups: groups.len(),
    };
    for &(name, p) in properties {
        let mut worst: Option<(f64, Witness)> = None;
        let mut unresolved = 0;
        for group in &groups {
            let Some(s) = worst_slack(group, p, Mode::Exhaustive, TOLERANCE) else {
                continue;
            };
            found.checked += s.checked;
            if s.slack >= 0.0 {
                if let Some(m) = slack_margin(&s) {
                    found.margin = Some(found.margin.map_or(m, |w: f64| w.min(m)));
                }
                continue;
            }
            let mut lifted = false;
            for w in violations(group, p, Mode::Exhaustive, TOLERANCE) {
                let ground = |local: &[usize]| {
                    let mut flags = vec![false; f.ground_size()];
                    for &b in local {
                        flags[group.elements[b]] = true;
                    }
                    flags
                };
                let (a, b) = (ground(&w.smaller), ground(&w.larger));
                let x = group.elements[w.element];
                let (ga, gb) = (
                    group_gain(&groups, &containing, &a, x),
                    group_gain(&groups, &containing, &b, x),
                );
                let slack = p.slack(TOLERANCE, ga, gb);
                if slack < 0.0 {
                    lifted = true;
                    if worst.as_ref().is_none_or(|(s, _)| slack < *s) {
                        let members = |flags: &[bool]| {
                            (0..flags.len()).filter(|&i| flags[i]).collect::<Vec<_>>()
                        };
                        let witness = Witness {
                            smaller: members(&a),
                            larger: members(&b),
                            element: x,
                            gain_smaller: ga,
                            gain_larger: gb,
                        };
                        worst = Some((slack, witness));
                    }
                }
            }
            unresolved += usize::from(!lifted);
        }
        // The witness re-evaluated by f itself (every term, not the groups' tables).
        if let Some((_, mut w)) = worst {
            let gain = |members: &[usize]| {
                let mut flags = f.flags(members);
                let before = f.value(&flags);
                flags[w.element] = true;
                f.value(&flags) - before
            };
            (w.gain_smaller, w.gain_larger) = (gain(&w.smaller), gain(&w.larger));
            let slack = p.slack(TOLERANCE, w.gain_smaller, w.gain_larger);
            if slack < 0.0 {
                found.violated.push((name, p, slack, w));
            } else {
                unresolved += 1;
            }
        }
        if unresolved > 0 {
            found.unresolved.push((name, unresolved));
        }
    }
    found
}

/// The margin of f's violation `w` (slack `slack`): over the largest |f| of its four sets.
fn lifted_margin(f: &PlacementFunction, slack: f64, w: &Witness) -> f64 {
    let scale = [&w.smaller, &w.larger]
        .into_iter()
        .flat_map(|set| {
            let mut flags = f.flags(set);
            let without = f.value(&flags);
            flags[w.element] = true;
            [without, f.value(&flags)]
        })
        .fold(0.0f64, |m, v| m.max(v.abs()));
    normalised(slack, scale)
}

/// A property claim on F over V (Props. 1 and 2): fail when some property's worst slack is
/// negative, pass when none is; above the exhaustive limit decided group by group
/// ([`termwise_claim`]).
fn property_claim(instance: &Instance, want_top1: bool, properties: &[(&str, Property)]) -> Check {
    let model = match compile_top_k(instance, want_top1) {
        Ok(m) => m,
        Err(check) => return *check,
    };
    let (f, described) = full_function(&model);
    if f.ground_size() > EXHAUSTIVE_SET_LIMIT {
        return termwise_claim(&f, &described, properties);
    }
    let (slacks, margin, checked) = measure(&f, properties, Mode::Exhaustive);
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
                "F is not {} on V = {described} (checked exhaustively; worst {}; margin {})",
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
        Outcome::Pass,
        None,
        format!(
            "F {} on V = {described}: {checked} inequalities checked exhaustively; margin {}",
            names.join(" and "),
            fmt_margin(margin)
        ),
        None,
        margin,
    )
}

/// A property claim on F over a ground set too large for its lattice, decided group by group
/// ([`termwise`]).
fn termwise_claim(
    f: &PlacementFunction,
    described: &str,
    properties: &[(&str, Property)],
) -> Check {
    let t = termwise(f, properties);
    let how = format!(
        "decided demand by demand: {} groups of demands on the same pairs, each over every \
         subset of its pairs, {} inequalities",
        t.groups, t.checked
    );
    if !t.violated.is_empty() {
        let margins: Vec<f64> = t
            .violated
            .iter()
            .map(|(_, _, slack, w)| lifted_margin(f, *slack, w))
            .collect();
        let margin = margins.iter().copied().reduce(f64::min);
        let names: Vec<&str> = t.violated.iter().map(|v| v.0).collect();
        let gains: Vec<String> = t
            .violated
            .iter()
            .map(|(p, _, _, w)| {
                format!(
                    "{p}: gains {:.3e} at A, {:.3e} at B",
                    w.gain_smaller, w.gain_larger
                )
            })
            .collect();
        let violations: Vec<Value> = t
            .violated
            .iter()
            .zip(&margins)
            .map(|((p, _, slack, w), m)| {
                let mut j = witness_json(f, p, w);
                j["slack"] = json!(slack);
                j["margin"] = json!(m);
                j
            })
            .collect();
        return Check::property(
            Outcome::Fail,
            None,
            format!(
                "F is not {} on V = {described} ({how}; the worst violation of F, re-evaluated \
                 by F: {}; margin {})",
                names.join(" and not "),
                gains.join(", "),
                fmt_margin(margin)
            ),
            Some(json!({ "ground_set": described, "violations": violations })),
            margin,
        );
    }
    let names: Vec<&str> = properties.iter().map(|(p, _)| *p).collect();
    if !t.unresolved.is_empty() {
        let open: Vec<String> = t
            .unresolved
            .iter()
            .map(|(p, n)| format!("{n} groups are not {p}"))
            .collect();
        return Check::inconclusive(format!(
            "F {} on V = {described} undecided ({how}): {}, but none of their violations is one \
             of F (the other demands make up for it)",
            names.join(" and "),
            open.join(", ")
        ));
    }
    Check::property(
        Outcome::Pass,
        None,
        format!(
            "F {} on V = {described}: every group is, so is their sum ({how}); margin {}",
            names.join(" and "),
            fmt_margin(t.margin)
        ),
        None,
        t.margin,
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
    )
}

/// Claim `prop2-monotone`.
pub(super) fn check_prop2_monotone(instance: &Instance, _options: &CheckOptions) -> Check {
    property_claim(
        instance,
        false,
        &[("monotone non-decreasing", Property::Monotone)],
    )
}

/// Claim `prop2-neither`.
pub(super) fn check_prop2_neither(instance: &Instance, _options: &CheckOptions) -> Check {
    let model = match compile_top_k(instance, false) {
        Ok(m) => m,
        Err(check) => return *check,
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
    // Parts decided group by group whose groups' violations all vanish in the sum.
    let mut undecided: Vec<String> = Vec::new();
    // Whether some part was decided group by group, and its groups' smallest margin.
    let (mut by_groups, mut least) = (false, f64::INFINITY);
    // The worst (server, part, property) so far: its margin, a description and its evidence.
    let mut worst: Option<(f64, String, Value)> = None;
    let mut failing: Vec<String> = Vec::new();
    for n in 0..model.servers() {
        let base = prefix(&run.placement, n);
        let ground = server_ground(&model, n);
        let modular =
            PlacementFunction::new(&model, &base, ground.clone(), |d| top_k(instance, d) == 1);
        let superm = PlacementFunction::new(&model, &base, ground, |d| top_k(instance, d) > 1);
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
            let mut consider = |m: f64, property: &str, gains: (f64, f64), mut w: Value| {
                if m < 0.0 {
                    failing.push(format!("server {n} {part} {property}"));
                }
                if worst.as_ref().is_none_or(|w| m < w.0) {
                    w["server"] = json!(n);
                    w["part"] = json!(part);
                    let what = format!(
                        "server {n}: {part} {} {property} (gains {:.3e} at A, {:.3e} at B)",
                        if m < 0.0 {
                            "is not"
                        } else {
                            "is closest to failing"
                        },
                        gains.0,
                        gains.1
                    );
                    worst = Some((m, what, w));
                }
            };
            if f.ground_size() > EXHAUSTIVE_SET_LIMIT {
                let t = termwise(f, properties);
                total += t.checked;
                for (property, _, slack, w) in &t.violated {
                    let m = lifted_margin(f, *slack, w);
                    let mut j = witness_json(f, property, w);
                    j["slack"] = json!(slack);
                    consider(m, property, (w.gain_smaller, w.gain_larger), j);
                }
                for (property, groups) in &t.unresolved {
                    undecided.push(format!(
                        "server {n} {part} {property} ({groups} groups are not, F~ undecided)"
                    ));
                }
                by_groups = true;
                least = least.min(t.margin.unwrap_or(f64::INFINITY));
                continue;
            }
            let (slacks, _, checked) = measure(f, properties, Mode::Exhaustive);
            total += checked;
            for (property, s) in &slacks {
                let Some(m) = slack_margin(s) else {
                    continue;
                };
                let at = s.strict.as_ref().map_or(&s.witness, |t| &t.witness);
                let gains = (at.gain_smaller, at.gain_larger);
                consider(m, property, gains, slack_json(f, property, s));
            }
        }
    }
    let margin = worst
        .as_ref()
        .map(|w| w.0.min(least))
        .or(least.is_finite().then_some(least));
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
    if !undecided.is_empty() {
        return Check::inconclusive(format!(
            "undecided: {}; {total} inequalities checked, no violation of F~^mod or F~^super \
             found",
            undecided.join(", ")
        ));
    }
    Check::property(
        Outcome::Pass,
        None,
        format!(
            "on all {} servers F~^mod is modular and non-decreasing and F~^super supermodular \
             and non-decreasing: {total} inequalities checked exhaustively{}; margin {}",
            model.servers(),
            if by_groups {
                " (demand by demand where a server has more than 20 experts)"
            } else {
                ""
            },
            fmt_margin(margin)
        ),
        None,
        margin,
    )
}
