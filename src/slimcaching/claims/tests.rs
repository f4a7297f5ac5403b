//! Tests of the SlimCaching claims: the registry, the families, each layer's pieces and every
//! check on hand-built instances.

use super::curvature::{
    check_prop5, check_prop6_multi, check_prop6_single, check_thm1, kappas, prop5_with,
    prop6_premises,
};
use super::properties::{
    check_prop1, check_prop2_monotone, check_prop2_neither, check_prop4, termwise,
};
use super::references::{
    check_prop3, check_remark2, judge, p2_reference, ratio_check, Judged, Reference,
};
use super::set_functions::{
    eid, full_ground, prefix, server_ground, sid, top_k, PlacementFunction,
};
use super::*;
use crate::claims::{Certificate, Check, Outcome, ReferenceKind};
use crate::slimcaching::algorithms;
use crate::slimcaching::premises::premises;
use crate::tier::{classify, Classified, Tier};
use formulations::slimcaching::validate::validate;
use formulations::slimcaching::{ExpertCatalogue, ExpertId, ServerId};
use serde_json::{json, Value};
use verification::{worst_slack, Mode, Property, SetFunction};

fn options() -> CheckOptions {
    CheckOptions::default()
}

fn instance(v: Value) -> Instance {
    let i: Instance = serde_json::from_value(v).expect("test instance parses");
    validate(&i).expect("test instance is valid");
    i
}

fn claim(id: &str) -> SlimClaim {
    table()
        .into_iter()
        .find(|c| c.info.id == id)
        .unwrap_or_else(|| panic!("claim {id} registered"))
}

#[test]
fn ids_are_unique_and_well_formed() {
    let reg = table();
    let ids: std::collections::BTreeSet<&str> = reg.iter().map(|c| c.info.id).collect();
    assert_eq!(ids.len(), reg.len());
    assert_eq!(reg.len(), 14);
    for c in &reg {
        let rest = c.info.id.strip_prefix("slimcaching/").expect("prefix");
        let words: Vec<&str> = rest.split('-').collect();
        assert!(words.len() >= 2, "{}", c.info.id);
        assert!(words.iter().all(|w| !w.is_empty()
            && w.chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit())));
        assert_eq!(c.info.paper, PAPER);
        assert!(!c.info.place.is_empty() && !c.info.family.is_empty());
    }
}

#[test]
fn families_validate_and_are_deterministic() {
    for c in table() {
        for seed in [0, 1, 5, 17] {
            let i = (c.family)(seed);
            assert_eq!(validate(&i), Ok(()), "{} seed {seed}", c.info.id);
            assert_eq!(i, (c.family)(seed), "{} seed {seed}", c.info.id);
        }
    }
    // The families' stated shapes.
    for seed in 0..10 {
        let top1 = family_tiny_top1(seed);
        assert!(top1.models.iter().all(|m| m.top_k == 1));
        let top2 = family_tiny_top2(seed);
        assert!(top2.models.iter().all(|m| m.top_k == 2));
        for i in [&top1, &top2, &family_tiny_mixed(seed)] {
            let e = ExpertCatalogue::new(&i.models).len();
            assert!(i.servers.len() * e <= 16 && (1..=3).contains(&i.servers.len()));
        }
        let single = family_prop6_single(seed);
        assert_eq!(single.servers.len(), 1);
        assert_eq!(prop6_premises(&single), Ok(()));
        let multi = family_prop6_multi(seed);
        assert!((2..=3).contains(&multi.servers.len()));
        assert_eq!(prop6_premises(&multi), Ok(()));
    }
}

/// The fields of a check are consistent with each other (also for `paper_tests`).
pub(super) fn assert_consistent(id: &str, c: &Check) {
    if let (Some(v), Some(r)) = (c.value, c.reference) {
        if r.abs() > TOLERANCE.abs {
            let ratio = c.ratio.expect("ratio when value and reference exist");
            assert!(
                (ratio - v / r).abs() <= 1e-12 * ratio.abs().max(1.0),
                "{id}"
            );
        }
    } else if c.reference.is_none() {
        assert_eq!(c.ratio, None, "{id}");
    }
    if c.reference_kind == ReferenceKind::Optimum {
        let s = c.solver_status.as_deref();
        assert!(
            s == Some("optimal") || s == Some("exhaustive"),
            "{id}: {s:?}"
        );
    }
    // Independent restatement of `v >= b x` with the same tolerance.
    let holds = |v: f64, x: f64, b: f64| v >= b * x - (1e-12 + 1e-9 * v.abs().max((b * x).abs()));
    if let (Some(l), Some(u)) = (c.lower, c.upper) {
        assert!(
            l <= u + 1e-9 * u.abs().max(1.0),
            "{id}: lower above upper: {c:?}"
        );
    }
    let ratio_claim = c.reference_kind != ReferenceKind::None;
    if let Some([low, high]) = c.ratio_interval {
        // OPT in [lower, upper]: the ratio to it between value / upper and value / lower.
        let (v, l, u) = (c.value.unwrap(), c.lower.unwrap(), c.upper.unwrap());
        let ends = [v / u, v / l];
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(1.0);
        assert!(
            close(low, ends[0].min(ends[1])) && close(high, ends[0].max(ends[1])),
            "{id}"
        );
    }
    if ratio_claim && c.outcome == Outcome::Vacuous {
        // A target of 0: the bound is 0 or nothing is to gain; no certificate is needed.
        let target = c.bound.unwrap() * c.upper.unwrap_or(0.0);
        assert!(target <= TOLERANCE.abs, "{id}: {c:?}");
        assert_eq!((c.certificate, c.margin), (None, None), "{id}");
    }
    let decided = matches!(c.outcome, Outcome::Pass | Outcome::Fail);
    if ratio_claim && decided {
        let (v, b) = (c.value.unwrap(), c.bound.unwrap());
        match c.certificate {
            Some(Certificate::Optimum) => {
                assert_eq!(c.reference_kind, ReferenceKind::Optimum, "{id}");
                assert_eq!((c.lower, c.upper), (c.reference, c.reference), "{id}");
                let r = c.reference.unwrap();
                assert_eq!(c.outcome == Outcome::Pass, holds(v, r, b), "{id}: {c:?}");
            }
            Some(Certificate::Bound) => {
                assert_eq!(c.outcome, Outcome::Pass, "{id}");
                assert!(holds(v, c.upper.unwrap(), b), "{id}: {c:?}");
            }
            Some(Certificate::Incumbent) => {
                assert_eq!(c.outcome, Outcome::Fail, "{id}");
                assert!(!holds(v, c.lower.unwrap(), b), "{id}: {c:?}");
            }
            None => panic!("{id}: a decided ratio check without a certificate: {c:?}"),
        }
    }
    if c.outcome == Outcome::Fail {
        assert!(c.witness.is_some(), "{id}: a failure carries its witness");
    }
    assert!(!c.note.is_empty() && !c.note.contains('\n'), "{id}");
    assert_eq!(c.inconsistencies(), Vec::<String>::new(), "{id}");
    assert_margin_agrees(id, c);
}

/// The margin agrees with the outcome (< 0 exactly on a fail, none when inconclusive) and
/// restates the claim's own numbers. Returns whether the check had a margin.
fn assert_margin_agrees(id: &str, c: &Check) -> bool {
    match (c.outcome, c.margin) {
        (
            Outcome::Inconclusive | Outcome::Measured | Outcome::Vacuous | Outcome::NotApplicable,
            m,
        ) => assert_eq!(m, None, "{id}: {c:?}"),
        (Outcome::Fail, m) => assert!(m.is_some_and(|m| m < 0.0), "{id}: {c:?}"),
        (Outcome::Pass | Outcome::Boundary, m) => {
            assert!(m.is_none_or(|m| m >= 0.0), "{id}: {c:?}")
        }
    }
    let Some(m) = c.margin else {
        return false;
    };
    assert!(m.is_finite(), "{id}");
    let short = id.strip_prefix("slimcaching/").unwrap();
    match short {
        "prop2-neither" => panic!("an existence claim has no margin: {c:?}"),
        "prop3-greedy-ratio" | "prop5-subproblem-ratio" | "thm1-ratio" | "remark2-half" => {
            // ratio - bound plus the allowance (1e-12 + 1e-9 max(|v|, |b r|)) / r.
            let (v, r, b) = (c.value.unwrap(), c.reference.unwrap(), c.bound.unwrap());
            let Some(ratio) = c.ratio else {
                // Only a fail against an optimum of 0 has a margin without a ratio.
                assert_eq!(c.outcome, Outcome::Fail, "{id}");
                return true;
            };
            // ratio - bound moved towards 0 by the allowance over r.
            let allowance = (1e-12 + 1e-9 * v.abs().max((b * r).abs())) / r;
            assert!(
                ratio - b > allowance || ratio - b < -allowance,
                "{id}: in the band"
            );
            let expected = if m < 0.0 {
                ratio - b + allowance
            } else {
                ratio - b - allowance
            };
            assert!(
                (m - expected).abs() <= 1e-12 * (1.0 + ratio.abs() + b.abs()),
                "{id}: margin {m} vs {expected}"
            );
        }
        "prop6-single-server" => {
            let k = c.value.unwrap();
            assert_eq!(m, PROP6_SINGLE_TOLERANCE - (k - 0.5).abs(), "{id}");
        }
        "prop6-multi-server" => {
            let k = c.value.unwrap();
            assert_eq!(m, (k - 0.5).min(1.0 - k) + PROP6_END_POINT, "{id}");
        }
        "alg3-equals-alg2" => {
            // About 1e-9 minus the largest relative difference.
            // (t - |dp - mc|) / t with t = 1e-12 + 1e-9 s, s the larger optimum: 1 -
            // diff s / t, between 1 - diff / 1e-9 and 1 (s far above 1e-12 here).
            let diff = c.value.unwrap();
            assert!(
                m <= 1.0 && m >= 1.0 - diff / 1e-9 - 1e-9,
                "{id}: {m} vs {diff}"
            );
        }
        _ => {
            // Property claims: a slack over max |f| can fall no lower than -2 (|gain| <=
            // 2 max |f|, and a difference of two gains <= 4 max |f|).
            assert!(m >= -4.0 - 1e-9, "{id}: {m}");
        }
    }
    true
}

#[test]
fn margins_agree_with_outcomes_on_every_claim() {
    let opts = options();
    let mut with_margin = std::collections::BTreeMap::<&str, usize>::new();
    let mut fails = 0;
    for c in table() {
        for seed in 0..6 {
            let i = (c.family)(seed);
            let check = (c.check)(&i, &opts);
            assert_consistent(c.info.id, &check);
            if assert_margin_agrees(c.info.id, &check) {
                *with_margin.entry(c.info.id).or_default() += 1;
            }
            fails += usize::from(check.outcome == Outcome::Fail);
        }
    }
    // Every claim but the existence claim has a margin on its family, and some fail.
    assert_eq!(with_margin.len(), 13, "{with_margin:?}");
    assert!(!with_margin.contains_key("slimcaching/prop2-neither"));
    assert!(fails >= 1);
}

#[test]
fn every_check_is_consistent_on_three_seeds() {
    let opts = options();
    for c in table() {
        for seed in [0, 1, 2] {
            let i = (c.family)(seed);
            let check = (c.check)(&i, &opts);
            assert_consistent(c.info.id, &check);
        }
    }
}

#[test]
fn structural_equalities_are_left_out_of_margins() {
    // F~^mod (K_m = 1 demands, one expert each) is modular on every server: all its local
    // sub- and supermodular inequalities are equalities, and the margin ignores them; its
    // monotonicity has strict inequalities (positive gains) on some server.
    let mut strict_monotone = 0;
    for seed in 0..6 {
        let i = family_tiny_mixed(seed);
        let model = LatencyModel::new(&i);
        let run = algorithms::successive_maxconv(&model).expect("tiny");
        for n in 0..model.servers() {
            let base = prefix(&run.placement, n);
            let f = PlacementFunction::new(&model, &base, server_ground(&model, n), |d| {
                top_k(&i, d) == 1
            });
            for p in [Property::Submodular, Property::Supermodular] {
                let Some(s) = worst_slack(&f, p, Mode::Exhaustive, TOLERANCE) else {
                    continue;
                };
                assert_eq!(s.strict, None, "seed {seed} server {n} {p:?}");
                assert_eq!(s.equalities, s.checked);
                assert_eq!(slack_margin(&s), None);
            }
            let m = worst_slack(&f, Property::Monotone, Mode::Exhaustive, TOLERANCE).unwrap();
            if let Some(t) = &m.strict {
                assert!(t.slack > 0.0 && t.witness.gain_larger > 0.0);
                strict_monotone += 1;
            }
        }
        // Prop. 4 still has a margin (from the parts that are not all equalities).
        let c = check_prop4(&i, &options());
        assert_eq!(c.outcome, Outcome::Pass);
        assert!(c.margin.is_some_and(|m| m > 0.0), "seed {seed}: {c:?}");
    }
    assert!(strict_monotone > 0);
}

#[test]
fn placement_function_is_the_evaluator() {
    // f over all pairs with an empty base is F itself; with base X_{<n}, f is
    // F(X_{<n} + S) - F(X_{<n}); and the K = 1 and K > 1 parts add up to the whole.
    for seed in 0..6 {
        let i = family_tiny_mixed(seed);
        let model = LatencyModel::new(&i);
        let (ground, _) = full_ground(&model);
        let f = PlacementFunction::new(&model, &model.empty_placement(), ground, |_| true);
        for mask in [0usize, 1, 5, 0b1011, 0xffff] {
            let flags: Vec<bool> = (0..f.ground_size()).map(|b| mask >> b & 1 == 1).collect();
            let mut x = model.empty_placement();
            for (b, &(n, e)) in f.ground.iter().enumerate() {
                if flags[b] {
                    x.insert(n, e);
                }
            }
            let direct = model.objective(&x);
            assert!((f.value(&flags) - direct).abs() <= 1e-12, "seed {seed}");
        }
        let mut base = model.empty_placement();
        base.insert(sid(0), eid(0));
        let n = model.servers() - 1;
        let ground = server_ground(&model, n);
        let whole = PlacementFunction::new(&model, &base, ground.clone(), |_| true);
        let one = PlacementFunction::new(&model, &base, ground.clone(), |d| top_k(&i, d) == 1);
        let many = PlacementFunction::new(&model, &base, ground, |d| top_k(&i, d) > 1);
        let flags: Vec<bool> = (0..whole.ground_size()).map(|b| b % 2 == 0).collect();
        let mut x = base.clone();
        for (b, &(s, e)) in whole.ground.iter().enumerate() {
            if flags[b] {
                x.insert(s, e);
            }
        }
        let direct = model.objective(&x) - model.objective(&base);
        assert!((whole.value(&flags) - direct).abs() <= 1e-12);
        assert!((one.value(&flags) + many.value(&flags) - direct).abs() <= 1e-12);
    }
}

/// One server of `q` bytes; cloud links `cloud_s` each way; compute `flops` everywhere.
fn one_server(q: u64, models: Value, users: Value, flops: f64) -> Instance {
    instance(json!({
        "servers": [ { "storage_bytes": q, "compute_flops": flops } ],
        "cloud": { "compute_flops": flops },
        "backhaul": { "symmetric": true, "edge_to_edge": [[null]],
                      "edge_to_cloud": [ { "latency_s": 0.01 } ],
                      "cloud_to_edge": [ { "latency_s": 0.01 } ] },
        "models": models,
        "users": users,
    }))
}

/// A user on server 0 with negligible compute (1e30 FLOP/s) and 10 Mbit/s radio links,
/// with these `requests` and `activations`.
fn user_json(requests: Value, activations: Value) -> Value {
    json!({ "compute_flops": 1e30, "associated_server": 0,
            "uplink": [ { "rate_bps": 1e7 } ], "downlink": [ { "rate_bps": 1e7 } ],
            "requests": requests, "activations": activations })
}

fn model_json(name: &str, top_k: u32, experts: u32, bytes: u64, flops: f64) -> Value {
    json!({ "name": name, "top_k": top_k, "layers": 1, "experts_per_layer": experts,
            "expert_bytes": bytes, "hidden_bytes": 1536, "expert_flops": flops })
}

#[test]
fn density_greedy_is_blocked_by_a_small_expert() {
    // One server of 10 bytes, one user, compute 1e30 FLOP/s (negligible), cloud links
    // 0.01 s each way. Model A: one expert of 1 byte, requested with p = 0.1; model B: one
    // expert of 10 bytes, p = 0.9. Caching an expert saves its demand the cloud round trip
    // 0.02 s: gains 0.1 x 0.02 = 0.002 and 0.9 x 0.02 = 0.018, densities 0.002 / 1 = 0.002
    // and 0.018 / 10 = 0.0018. Alg. 1 takes A first; B (10 bytes) then no longer fits in
    // the 9 left. OPT caches B alone (A + B = 11 bytes > 10): ratio 0.002 / 0.018 = 1/9.
    let i = blocked_pair(10);
    let c = check_prop3(&i, &options());
    assert_eq!(c.outcome, Outcome::Fail, "{c:?}");
    assert!((c.value.unwrap() - 0.002).abs() < 1e-12);
    assert!((c.reference.unwrap() - 0.018).abs() < 1e-12);
    assert!((c.ratio.unwrap() - 1.0 / 9.0).abs() < 1e-9);
    assert!(c.ratio.unwrap() < 1.0 - (-1.0f64).exp());
    assert_eq!(c.solver_status.as_deref(), Some("exhaustive"));
    // Margin: ratio - bound = 1/9 - (1 - 1/e) = -0.5210, up to the allowance.
    let expected = 1.0 / 9.0 - (1.0 - (-1.0f64).exp());
    assert!((c.margin.unwrap() - expected).abs() < 1e-8);
    let w = c.witness.expect("witness");
    assert_eq!(
        w["placement"],
        json!([{ "server": 0, "model": 0, "layer": 0,
                                        "expert": 0, "id": 0 }])
    );
    assert_eq!(w["optimum_placement"][0]["model"], json!(1));
    // Alg. 2 / 3 solve this one-server Top-1 knapsack exactly (Remark 2): both cache B,
    // value = OPT = 0.018, ratio 1 vs 1/2, margin 1 - 1/2 - (1e-12 + 1e-9 x 0.018) / 0.018.
    let r = check_remark2(&i, &options());
    assert_eq!(r.outcome, Outcome::Pass);
    assert_near(r.value, 0.018, 1e-12);
    assert_near(r.reference, 0.018, 1e-12);
    assert_eq!(r.bound, Some(0.5));
    assert!((r.ratio.unwrap() - 1.0).abs() < 1e-12);
    assert_near(r.margin, 0.5 - allowance_over(0.018, 0.018, 0.5), 1e-12);
    // Inside the paper's model (one server, negligible compute): the fail is not an artefact
    // of an extension.
    assert_ne!(
        tier("slimcaching/prop3-greedy-ratio", &i).tier,
        Tier::Extension
    );
}

/// Two servers of `storage` bytes joined by `edge_s` latency each way, the cloud 10 ms
/// each way, negligible compute, one model, one user on server 0 who always activates
/// `experts` of layer 0.
fn two_servers(storage: u64, edge_s: f64, model: serde_json::Value, experts: &[u32]) -> Instance {
    two_servers_with(storage, json!({ "latency_s": edge_s }), model, experts, 0)
}

/// [`two_servers`] with the edge-edge link `edge` (either way) and the user on server `user`.
/// The user's radio links to both servers are equal (1e7 bit/s), so either server satisfies
/// the association rule under eq. (4) (a tie).
fn two_servers_with(
    storage: u64,
    edge: Value,
    model: Value,
    experts: &[u32],
    user: u32,
) -> Instance {
    instance(json!({
        "servers": [ { "storage_bytes": storage, "compute_flops": 1e30 },
                     { "storage_bytes": storage, "compute_flops": 1e30 } ],
        "cloud": { "compute_flops": 1e30 },
        "backhaul": { "symmetric": true,
                      "edge_to_edge": [[null, edge], [edge, null]],
                      "edge_to_cloud": [ { "latency_s": 0.01 }, { "latency_s": 0.01 } ],
                      "cloud_to_edge": [ { "latency_s": 0.01 }, { "latency_s": 0.01 } ] },
        "models": [ model ],
        "users": [ { "compute_flops": 1e30, "associated_server": user,
                     "uplink": [ { "rate_bps": 1e7 }, { "rate_bps": 1e7 } ],
                     "downlink": [ { "rate_bps": 1e7 }, { "rate_bps": 1e7 } ],
                     "requests": [ { "model": 0, "p": 1.0 } ],
                     "activations": [ { "model": 0, "layer": 0,
                                        "sets": [ { "experts": experts, "p": 1.0 } ] } ] } ]
    }))
}

/// A rate-only edge-edge link (eq. (5), the model's link form) that moves
/// [`model_json`]'s 1536-byte hidden state in 1 ms: 8 x 1536 bits / 12,288,000 bit/s.
fn one_ms_rated_link() -> Value {
    json!({ "rate_bps": 12_288_000.0 })
}

/// The tier (`crate::tier`) of `i` for claim `id`: whether a hand instance is inside the
/// paper's model (`Regime` or `Model`) or outside it (`Extension`, with the broken premise).
fn tier(id: &str, i: &Instance) -> Classified {
    classify(&premises(), id, i)
}

/// `id`'s registered check on `i`, with its fields checked for consistency.
fn run(id: &str, i: &Instance) -> Check {
    let c = (claim(id).check)(i, &options());
    assert_consistent(id, &c);
    c
}

/// `x` is `Some(v)` with |v - expected| <= tol.
#[track_caller]
fn assert_near(x: Option<f64>, expected: f64, tol: f64) {
    let v = x.unwrap_or_else(|| panic!("expected {expected}, got None"));
    assert!((v - expected).abs() <= tol, "{v} vs {expected} (tol {tol})");
}

/// The allowance over the reference, t / r with t = 1e-12 + 1e-9 max(|v|, |b r|): how far a
/// ratio claim's margin sits from ratio - bound (towards 0).
fn allowance_over(v: f64, r: f64, b: f64) -> f64 {
    (1e-12 + 1e-9 * v.abs().max((b * r).abs())) / r
}

#[test]
fn a_slow_remote_server_breaks_monotonicity_in_prop1() {
    // Two servers; the user is on server 0; edge links 0 <-> 1 take 0.03 s each way, the
    // cloud 0.01 s each way; compute negligible. Top-1, one expert (id 0). Ground set
    // index n E + e: 0 = (server 0, e0), 1 = (server 1, e0). Caching e0 on server 1 alone
    // forces the token there: G goes from 0.02 (cloud) to 0.06, a gain of -0.04.
    let i = two_servers(1, 0.03, model_json("A", 1, 1, 1, 1e6), &[0]);
    let c = check_prop1(&i, &options());
    assert_eq!(c.outcome, Outcome::Fail);
    let w = &c.witness.expect("witness")["violations"][0];
    assert_eq!(w["property"], json!("monotone non-decreasing"));
    assert_eq!(w["element"]["server"], json!(1));
    assert_eq!(w["smaller"], json!([]));
    assert!((w["gain_smaller"].as_f64().unwrap() + 0.04).abs() < 1e-12);
    // F({}) = 0, F({0}) = F({0, 1}) = 0.02, F({1}) = -0.04: the worst gain -0.04 over
    // max |F| = 0.04 gives the margin -1 (plus an allowance of about 1e-9).
    assert!((c.margin.unwrap() + 1.0).abs() < 1e-8, "{:?}", c.margin);
    assert_eq!(
        w["scale"].as_f64().map(|x| (x - 0.04).abs() < 1e-15),
        Some(true)
    );
    // A property claim has no value or reference.
    assert_eq!((c.value, c.reference, c.ratio), (None, None, None));
    // Prop. 3's premise holds but Prop. 2's does not.
    assert_eq!(
        check_prop2_monotone(&i, &options()).outcome,
        Outcome::NotApplicable
    );
    // Outside the paper's model: the 60 ms edge round trip is slower than the cloud's
    // 10 ms return leg (premise cloud-much-slower), which is what makes the routing rule
    // (a remotely cached expert is served remotely) cost latency. Inside the model F is
    // monotone for Top-1 (local <= remote <= cloud), so no in-model fail is expected.
    let t = tier("slimcaching/prop1-submodular", &i);
    assert_eq!(t.tier, Tier::Extension);
    assert!(
        t.broken.iter().any(|b| b.starts_with("cloud-much-slower")),
        "{t:?}"
    );
}

/// One server, one Top-2 model of 2 experts in one layer, one user who holds none and
/// always activates {0, 1}: Appendix E's single-server setting.
fn pair_instance(edge_flops: f64, cloud_flops: f64, expert_flops: f64) -> Instance {
    let mut i = one_server(
        4,
        json!([model_json("P", 2, 2, 1, expert_flops)]),
        json!([user_json(
            json!([ { "model": 0, "p": 1.0 } ]),
            json!([ { "model": 0, "layer": 0, "sets": [ { "experts": [0, 1], "p": 1.0 } ] } ]),
        )]),
        edge_flops,
    );
    i.cloud.compute_flops = cloud_flops;
    i
}

#[test]
fn prop6_single_server_curvature_matches_appendix_e() {
    // App. E (1): g(z | empty) = T_{C,n} - T^CP_E (one output fewer from the cloud, the
    // edge computes), g(z | V - z) = T_{C,n} + T_{n,C} + T^CP_C (the cloud is no longer
    // visited at all). With T_{C,n} = T_{n,C} = 0.01 s:
    // * negligible compute: kappa = 1 - 0.01 / 0.02 = 1/2;
    let c = check_prop6_single(&pair_instance(1e30, 1e30, 1e6), &options());
    assert_eq!(c.outcome, Outcome::Pass, "{c:?}");
    assert!((c.value.unwrap() - 0.5).abs() < 1e-12);
    // Margin 0.05 - |kappa_1 - 1/2| = 0.05.
    assert!((c.margin.unwrap() - 0.05).abs() < 1e-12);
    // * T^CP_E = 1e9 x 2 / 2e12 = 1 ms and T^CP_C = 1e9 x 2 / 1e12 = 2 ms: kappa =
    //   1 - (0.01 - 0.001) / (0.01 + 0.01 + 0.002) = 1 - 9/22 = 13/22; the premise
    //   "computation negligible" fails, so the check is not applicable but reports kappa.
    let c = check_prop6_single(&pair_instance(2e12, 1e12, 1e9), &options());
    assert_eq!(c.outcome, Outcome::NotApplicable);
    assert!(c.note.contains("not negligible"), "{}", c.note);
    assert_eq!(c.margin, None);
    assert!((c.value.unwrap() - 13.0 / 22.0).abs() < 1e-12);
}

#[test]
fn subproblem_optimum_by_enumeration_equals_the_milp() {
    // Two independent ways to solve P2_n: enumeration of server n's subsets and the MILP
    // with the earlier servers fixed.
    let opts = options();
    let mut compared = 0;
    for seed in 0..8 {
        let i = family_tiny_mixed(seed);
        let model = LatencyModel::new(&i);
        let run = algorithms::successive_maxconv(&model).expect("tiny");
        for n in 0..model.servers() {
            let base = prefix(&run.placement, n);
            let a = p2_reference(&model, &base, n, &opts, None, false, (0.0, None));
            let b = p2_reference(&model, &base, n, &opts, None, true, (0.0, None));
            assert_eq!(a.status.as_deref(), Some("exhaustive"));
            assert_eq!(
                b.status.as_deref(),
                Some("optimal"),
                "seed {seed} server {n}"
            );
            let (a, b) = (a.value.unwrap(), b.value.unwrap());
            assert!(
                (a - b).abs() <= 1e-9 * a.abs().max(1e-6),
                "seed {seed}: {a} {b}"
            );
            compared += 1;
        }
        // And the whole Prop. 5 check agrees on its outcome either way.
        let x = prop5_with(&i, &opts, false);
        let y = prop5_with(&i, &opts, true);
        assert_eq!(x.outcome, y.outcome, "seed {seed}");
    }
    assert!(compared >= 8);
}

#[test]
fn prop2_neither_finds_both_witnesses_on_its_family() {
    // Over 20 seeds of tiny-top2 some instance shows both behaviours. One-server
    // instances cannot (F is supermodular there, see the module doc), so they are
    // inconclusive, never failures.
    let mut passes = 0;
    for seed in 0..20 {
        let i = family_tiny_top2(seed);
        let c = check_prop2_neither(&i, &options());
        assert_ne!(c.outcome, Outcome::Fail);
        if i.servers.len() == 1 {
            assert_eq!(c.outcome, Outcome::Inconclusive, "seed {seed}: {}", c.note);
        }
        if c.outcome == Outcome::Pass {
            passes += 1;
            let w = c.witness.as_ref().expect("both witnesses recorded");
            let sub = &w["not_submodular"];
            // A submodularity violation has the larger set gaining more.
            assert!(sub["gain_larger"].as_f64() > sub["gain_smaller"].as_f64());
            let sup = &w["not_supermodular"];
            assert!(sup["gain_larger"].as_f64() < sup["gain_smaller"].as_f64());
        }
    }
    assert!(passes >= 1, "no instance with both witnesses in 20 seeds");
}

#[test]
fn witnesses_re_evaluate_with_the_evaluator() {
    // Rebuild the sets of a prop2-neither witness and recompute the gains with
    // LatencyModel::objective.
    let i = (0..20)
        .map(family_tiny_top2)
        .find(|i| check_prop2_neither(i, &options()).outcome == Outcome::Pass)
        .expect("a passing instance (see the test above)");
    let model = LatencyModel::new(&i);
    let c = check_prop2_neither(&i, &options());
    let w = c.witness.unwrap();
    for key in ["not_submodular", "not_supermodular"] {
        let v = &w[key];
        let to_x = |list: &Value, extra: Option<&Value>| {
            let mut x = model.empty_placement();
            for p in list.as_array().unwrap().iter().chain(extra) {
                x.insert(
                    ServerId(p["server"].as_u64().unwrap() as u32),
                    ExpertId(p["id"].as_u64().unwrap() as u32),
                );
            }
            model.objective(&x)
        };
        let gain = |set: &str| to_x(&v[set], Some(&v["element"])) - to_x(&v[set], None);
        assert!((gain("smaller") - v["gain_smaller"].as_f64().unwrap()).abs() < 1e-12);
        assert!((gain("larger") - v["gain_larger"].as_f64().unwrap()).abs() < 1e-12);
    }
}

#[test]
fn premises_make_checks_not_applicable() {
    // A Top-2 instance for a Top-1 claim and the other way round.
    let top2 = family_tiny_top2(0);
    let top1 = family_tiny_top1(0);
    for (id, i) in [
        ("slimcaching/prop1-submodular", &top2),
        ("slimcaching/prop3-greedy-ratio", &top2),
        ("slimcaching/remark2-half", &top2),
        ("slimcaching/prop2-monotone", &top1),
        ("slimcaching/prop2-neither", &top1),
        ("slimcaching/prop6-single-server", &family_prop6_multi(0)),
        ("slimcaching/prop6-multi-server", &family_prop6_single(0)),
    ] {
        let c = (claim(id).check)(i, &options());
        assert_eq!(c.outcome, Outcome::NotApplicable, "{id}");
        assert!(c.note.starts_with("premise fails"), "{id}: {}", c.note);
    }
}

#[test]
fn a_server_left_with_nothing_to_gain_has_kappa_zero() {
    // Two servers of 2 bytes, links 1 ms between them, the cloud 10 ms each way, compute
    // negligible. One Top-2 model with experts {0, 1} of 1 byte; the only user sits on
    // server 0 and always activates {0, 1}. Alg. 3 caches both on server 0 (each is worth
    // 0.01 s alone), so on server 1 F~^super_1 has a term (the demand needs experts 0
    // and 1) but every value is 0 (the user's server already serves both): it vanishes,
    // kappa_1 is taken as 0, and the definition's own curvature is undefined. On server 0
    // kappa_0 = 1 - 0.01 / 0.02 = 1/2 (App. E), so Thm. 1's bound is (1 - 1/2) / 2.
    let i = two_servers(2, 0.001, model_json("P", 2, 2, 1, 1e6), &[0, 1]);
    let model = LatencyModel::new(&i);
    let run = algorithms::successive_maxconv(&model).expect("tiny");
    assert_eq!(run.placement.experts_on(sid(0)).count(), 2);
    let ks = kappas(&i, &model, &run.placement, false);
    assert!(!ks[0].vanishes && (ks[0].kappa.unwrap() - 0.5).abs() < 1e-12);
    assert!(ks[1].vanishes);
    assert_eq!((ks[1].kappa, ks[1].curvature.kappa), (Some(0.0), None));
    // Alg. 3's placement is optimal (F = 0.01 + 0.02 = 0.03 s, every cloud visit gone):
    // Prop. 5 on server 0 has ratio 1 vs 1 - 1/2, margin 1/2; server 1 has nothing to gain
    // (optimum 0, ratio undefined, no margin). Thm. 1: ratio 1 vs 1/4, margin 3/4.
    // The worst server is server 0 (server 1 has no margin): value = P2_0's optimum = 0.03
    // (both experts on the user's server), bound 1 - kappa_0 = 1/2, margin
    // 1 - 1/2 - (1e-12 + 1e-9 x 0.03) / 0.03.
    let p = check_prop5(&i, &options());
    assert_eq!(p.outcome, Outcome::Pass);
    assert!((p.margin.unwrap() - 0.5).abs() < 1e-8, "{:?}", p.margin);
    assert_near(p.value, 0.03, 1e-12);
    assert_near(p.reference, 0.03, 1e-12);
    assert_near(p.ratio, 1.0, 1e-12);
    assert_near(p.bound, 0.5, 1e-12);
    assert_near(p.margin, 0.5 - allowance_over(0.03, 0.03, 0.5), 1e-12);
    assert_eq!(p.certificate, Some(Certificate::Optimum));
    let t = check_thm1(&i, &options());
    assert_eq!(t.outcome, Outcome::Pass);
    assert!((t.bound.unwrap() - 0.25).abs() < 1e-12);
    assert!((t.reference.unwrap() - 0.03).abs() < 1e-12);
    assert!((t.margin.unwrap() - 0.75).abs() < 1e-8, "{:?}", t.margin);
    assert_near(t.value, 0.03, 1e-12);
    assert_near(t.ratio, 1.0, 1e-12);
    assert_near(t.margin, 0.75 - allowance_over(0.03, 0.03, 0.25), 1e-12);
    // Prop. 6 (multi-server) takes the maximum over server 0 only: exactly 1/2, an end
    // point of the open interval (1/2, 1), met within the tolerance: a boundary case, not a
    // violation (floating point cannot place the exact curvature on either side).
    let c = check_prop6_multi(&i, &options());
    assert_eq!(c.outcome, Outcome::Boundary);
    assert!((c.value.unwrap() - 0.5).abs() < 1e-12 && c.note.contains("end point 1/2"));
    // Margin min(kappa - 1/2, 1 - kappa) + 1e-9 = 1e-9: >= 0, not a fail.
    assert!((c.margin.unwrap() - 1e-9).abs() < 1e-12, "{:?}", c.margin);
    assert!(
        c.witness.is_some(),
        "the evidence of a boundary case is kept"
    );
}

/// `value >= b OPT` judged from bounds on OPT, numbers by hand (b = 0.5): OPT in
/// [lower, upper] = [incumbent, solver bound].
#[test]
fn judge_certifies_from_bounds_on_both_sides() {
    let reference = |kind, value, incumbent| Reference {
        value,
        kind,
        status: None,
        placement: None,
        incumbent,
    };
    let bound = |upper, incumbent| reference(ReferenceKind::Bound, Some(upper), incumbent);
    let decided = |value, r: &Reference| {
        let Judged {
            outcome,
            certificate,
            ..
        } = judge(value, r, Some(0.5));
        (outcome, certificate)
    };
    // 0.6 >= 0.5 x 1.1 = 0.55 whatever OPT <= 1.1 is: a pass the bound certifies.
    assert_eq!(
        decided(0.6, &bound(1.1, Some(0.9))),
        (Outcome::Pass, Some(Certificate::Bound))
    );
    // 0.4 < 0.5 x 0.9 = 0.45 <= 0.5 OPT: a fail the incumbent certifies.
    assert_eq!(
        decided(0.4, &bound(1.1, Some(0.9))),
        (Outcome::Fail, Some(Certificate::Incumbent))
    );
    // 0.5: above 0.45, below 0.55: nothing proved either way.
    assert_eq!(
        decided(0.5, &bound(1.1, Some(0.9))),
        (Outcome::Inconclusive, None)
    );
    // Without a bound only a fail can be certified; without an incumbent only a pass.
    assert_eq!(
        decided(0.4, &reference(ReferenceKind::None, None, Some(0.9))),
        (Outcome::Fail, Some(Certificate::Incumbent))
    );
    assert_eq!(
        decided(0.4, &bound(1.1, None)),
        (Outcome::Inconclusive, None)
    );
    // A proved optimum certifies both ways; equality within the tolerance is a pass.
    let optimum = reference(ReferenceKind::Optimum, Some(1.0), Some(1.0));
    assert_eq!(
        decided(0.5, &optimum),
        (Outcome::Pass, Some(Certificate::Optimum))
    );
    assert_eq!(
        decided(0.49, &optimum),
        (Outcome::Fail, Some(Certificate::Optimum))
    );
    // The margin of a fail is taken against the value that decided it: (0.4 - 0.45) / 0.9.
    let m = judge(0.4, &bound(1.1, Some(0.9)), Some(0.5))
        .margin
        .unwrap();
    assert!(
        (m - (0.4 - 0.45 + 1e-12 + 1e-9 * 0.45) / 0.9).abs() < 1e-12,
        "{m}"
    );
}

// ---------------------------------------------------------------------------------------------
// Hand-derived pass and fail cases per claim. Shared numbers: the cloud is 10 ms each way
// (c = 0.01 s), compute 1e30 FLOP/s (T^CP about 1e-24 s, below the last bit of every sum
// here), so a demand missing r experts costs G(empty) = c + r c at the cloud, 0 when all of R
// is on the user's server, and 2 tau per expert-trip to another edge server tau away (one
// visit tau, one return tau per expert). F = sum_d W_d (G_d(empty) - G_d(X)).
// ---------------------------------------------------------------------------------------------

/// The 1/9 instance of [`density_greedy_is_blocked_by_a_small_expert`] with `q` bytes of
/// storage: model A (1 byte, p = 0.1) and model B (10 bytes, p = 0.9), gains 0.002 and
/// 0.018.
fn blocked_pair(q: u64) -> Instance {
    let users = json!([user_json(
        json!([ { "model": 0, "p": 0.1 }, { "model": 1, "p": 0.9 } ]),
        json!([
            { "model": 0, "layer": 0, "sets": [ { "experts": [0], "p": 1.0 } ] },
            { "model": 1, "layer": 0, "sets": [ { "experts": [0], "p": 1.0 } ] } ]),
    )]);
    one_server(
        q,
        json!([
            model_json("A", 1, 1, 1, 1e6),
            model_json("B", 1, 1, 10, 1e6)
        ]),
        users,
        1e30,
    )
}

#[test]
fn prop1_pass_two_servers_with_a_fast_remote_link() {
    // Two servers of 1 byte, rate-only edge links of 1 ms, one Top-1 expert, the user on
    // server 0. V = {0: (server 0, e0), 1: (server 1, e0)}. F({}) = 0, F({0}) = 0.02 (served
    // locally), F({1}) = 0.02 - 2 x 0.001 = 0.018 (served remotely), F({0, 1}) = 0.02 (the
    // local copy wins). Monotone gains: 0.02, 0.018, F(0 | {1}) = 0.002 and F(1 | {0}) = 0
    // (an equality, left out of the margin). Submodular: F(0 | {}) - F(0 | {1}) = 0.018 and
    // F(1 | {}) - F(1 | {0}) = 0.018. Worst strict slack 0.002 over max |F| = 0.02: margin
    // 0.1 (less an allowance of about 1.5e-10).
    let i = two_servers_with(
        1,
        one_ms_rated_link(),
        model_json("A", 1, 1, 1, 1e6),
        &[0],
        0,
    );
    let id = "slimcaching/prop1-submodular";
    assert_ne!(tier(id, &i).tier, Tier::Extension, "{:?}", tier(id, &i));
    let c = run(id, &i);
    assert_eq!(c.outcome, Outcome::Pass, "{}", c.note);
    assert_eq!((c.value, c.reference, c.ratio), (None, None, None));
    assert_near(c.margin, 0.1, 1e-8);
    assert!(c.margin.unwrap() < 0.1);
}

#[test]
fn prop2_monotone_pass_and_prop2_neither_unwitnessed_on_one_server() {
    // One server, one Top-2 model of 2 experts, the user holds neither and always
    // activates {0, 1} (R = {0, 1}): G({}) = 0.01 + 2 x 0.01 = 0.03, G({z}) = 0.01 + 0.01
    // = 0.02, G({0, 1}) = 0. F: {} 0, {0} 0.01, {1} 0.01, {0, 1} 0.03. Gains 0.01 at {} and
    // 0.02 at the other: monotone, worst slack 0.01 over max |F| = 0.03, margin 1/3 (less
    // about 3.7e-10).
    let i = pair_instance(1e30, 1e30, 1e6);
    assert_ne!(tier("slimcaching/prop2-monotone", &i).tier, Tier::Extension);
    let c = run("slimcaching/prop2-monotone", &i);
    assert_eq!(c.outcome, Outcome::Pass, "{}", c.note);
    assert_eq!((c.value, c.reference, c.ratio), (None, None, None));
    assert_near(c.margin, 1.0 / 3.0, 1e-8);
    // The same F is supermodular (0.02 >= 0.01) and not submodular: Prop. 2's second part is
    // not witnessed here, only half of it: inconclusive, no margin, the one witness kept
    // (element 0: gain 0.01 at {}, 0.02 at {1}).
    let n = run("slimcaching/prop2-neither", &i);
    assert_eq!(n.outcome, Outcome::Inconclusive, "{}", n.note);
    assert!(
        n.note.contains("only a submodularity violation"),
        "{}",
        n.note
    );
    assert_eq!(n.margin, None);
    let w = n.witness.expect("the one witness");
    assert!(w["not_supermodular"].is_null());
    let sub = &w["not_submodular"];
    assert_eq!(sub["element"]["expert"], json!(0));
    assert_eq!(sub["smaller"], json!([]));
    assert_eq!(sub["larger"][0]["expert"], json!(1));
    assert_near(sub["gain_smaller"].as_f64(), 0.01, 1e-12);
    assert_near(sub["gain_larger"].as_f64(), 0.02, 1e-12);
}

#[test]
fn prop2_monotone_fails_when_the_edge_computes_slower_than_the_cloud_link() {
    // pair_instance with a slow edge CPU: T^CP_E = 1e9 FLOP x 2 experts / 1e11 FLOP/s =
    // 0.02 s, cloud compute negligible. G({}) = 0.01 + 2 x 0.01 = 0.03; caching one expert
    // adds the edge compute and still visits the cloud for the other: G({z}) = 0.02 + 0.01
    // + 0.01 = 0.04; G({0, 1}) = 0.02. F: {} 0, {0} -0.01, {1} -0.01, {0, 1} 0.01. The worst
    // gain is F(0 | {}) = -0.01 (the first in visiting order) over max |F| = 0.01: margin -1
    // (plus an allowance of about 1.1e-9).
    let i = pair_instance(1e11, 1e30, 1e9);
    // Outside the model tier: the edge's 20 ms of compute exceed the 10 ms cloud transfer it
    // replaces (premise communication-bottleneck, Sec. III-C). The check still runs on it;
    // inside the model the monotonicity is expected to hold (see the premise's doc).
    let t = tier("slimcaching/prop2-monotone", &i);
    assert_eq!(t.tier, Tier::Extension);
    assert!(
        t.broken
            .iter()
            .any(|b| b.starts_with("communication-bottleneck")),
        "{t:?}"
    );
    let c = run("slimcaching/prop2-monotone", &i);
    assert_eq!(c.outcome, Outcome::Fail, "{}", c.note);
    assert_eq!((c.value, c.reference, c.ratio), (None, None, None));
    assert_near(c.margin, -1.0, 1e-8);
    assert!(c.margin.unwrap() > -1.0);
    let w = &c.witness.expect("witness")["violations"][0];
    assert_eq!(w["property"], json!("monotone non-decreasing"));
    assert_eq!(w["element"]["expert"], json!(0));
    assert_eq!(w["smaller"], json!([]));
    assert_near(w["gain_smaller"].as_f64(), -0.01, 1e-12);
    assert_near(w["scale"].as_f64(), 0.01, 1e-12);
}

/// The hand table of F on [`prop2_neither_is_witnessed_on_two_servers`]'s instance: e0 is
/// served locally (L) when (0, e0) is cached, else remotely (R) when (1, e0) is, else by the
/// cloud (C); the same for e1. G = 0.01 + 0.01 k for k > 0 cloud experts, plus 0.001 +
/// 0.001 r for r > 0 remote ones; F = 0.03 - G.
fn two_server_pair_f(set: &[bool]) -> f64 {
    let place = |local: bool, remote: bool| {
        if local {
            0
        } else if remote {
            1
        } else {
            2
        }
    };
    let at = [place(set[0], set[2]), place(set[1], set[3])];
    let remote = at.iter().filter(|&&p| p == 1).count() as f64;
    let cloud = at.iter().filter(|&&p| p == 2).count() as f64;
    let g = if cloud > 0.0 {
        0.01 + 0.01 * cloud
    } else {
        0.0
    } + if remote > 0.0 {
        0.001 + 0.001 * remote
    } else {
        0.0
    };
    0.03 - g
}

#[test]
fn prop2_neither_is_witnessed_on_two_servers() {
    // Two servers of 2 bytes, rate-only 1 ms edge links, one Top-2 model with experts {0,
    // 1}; the user on server 0 always activates both. V (index n E + e): a = (0, e0), b = (0,
    // e1), c = (1, e0), d = (1, e1). F (table in two_server_pair_f): a 0.01, c 0.008, {a, b}
    // 0.03, {a, c} 0.01, {b, c} 0.028, {c, d} 0.027. Not submodular: a gains 0.01 at {} and
    // 0.03 - 0.01 = 0.02 at {b} (the second expert completes the local pair). Not
    // supermodular: a gains 0.01 at {} but 0.01 - 0.008 = 0.002 at {c} (e0 was already served
    // from server 1). Both are the first violations in visiting order (S = {}, x = a, then y
    // = b, c).
    let i = two_servers_with(
        2,
        one_ms_rated_link(),
        model_json("P", 2, 2, 1, 1e6),
        &[0, 1],
        0,
    );
    let id = "slimcaching/prop2-neither";
    assert_ne!(tier(id, &i).tier, Tier::Extension, "{:?}", tier(id, &i));
    let c = run(id, &i);
    assert_eq!(c.outcome, Outcome::Pass, "{}", c.note);
    assert_eq!((c.value, c.margin), (None, None));
    let w = c.witness.expect("both witnesses");
    let pair = |p: &Value| {
        (
            p["server"].as_u64().unwrap() as usize,
            p["expert"].as_u64().unwrap() as usize,
        )
    };
    let index = |p: &Value| {
        let (n, e) = pair(p);
        2 * n + e
    };
    for (key, larger, gain_larger) in [("not_submodular", 1, 0.02), ("not_supermodular", 2, 0.002)]
    {
        let v = &w[key];
        assert_eq!(pair(&v["element"]), (0, 0), "{key}");
        assert_eq!(v["smaller"], json!([]), "{key}");
        let b: Vec<usize> = v["larger"].as_array().unwrap().iter().map(index).collect();
        assert_eq!(b, vec![larger], "{key}");
        assert_near(v["gain_smaller"].as_f64(), 0.01, 1e-12);
        assert_near(v["gain_larger"].as_f64(), gain_larger, 1e-12);
        // The four values against the hand table.
        let mut flags = [false; 4];
        assert_near(v["f_smaller"].as_f64(), two_server_pair_f(&flags), 1e-12);
        flags[0] = true;
        assert_near(
            v["f_smaller_plus_element"].as_f64(),
            two_server_pair_f(&flags),
            1e-12,
        );
        flags[larger] = true;
        assert_near(
            v["f_larger_plus_element"].as_f64(),
            two_server_pair_f(&flags),
            1e-12,
        );
        flags[0] = false;
        assert_near(v["f_larger"].as_f64(), two_server_pair_f(&flags), 1e-12);
    }
}

#[test]
fn prop3_greedy_pass_when_both_experts_fit() {
    // The 1/9 instance with 11 bytes: Alg. 1 takes A (density 0.002 / 1) and then B (10 bytes
    // still fit): F = 0.002 + 0.018 = 0.02 = OPT. Ratio 1 vs 1 - 1/e, margin 1/e less
    // (1e-12 + 1e-9 x 0.02) / 0.02 = 1.05e-9.
    let i = blocked_pair(11);
    let c = run("slimcaching/prop3-greedy-ratio", &i);
    assert_eq!(c.outcome, Outcome::Pass, "{}", c.note);
    assert_near(c.value, 0.02, 1e-12);
    assert_near(c.reference, 0.02, 1e-12);
    assert_eq!(c.reference_kind, ReferenceKind::Optimum);
    assert_eq!(c.solver_status.as_deref(), Some("exhaustive"));
    assert_near(c.ratio, 1.0, 1e-12);
    let b = 1.0 - (-1.0f64).exp();
    assert_near(c.bound, b, 1e-15);
    assert_near(c.margin, 1.0 - b - allowance_over(0.02, 0.02, b), 1e-12);
    assert_eq!(c.witness, None);
}

#[test]
fn prop3_repaired_keeps_the_best_single_expert() {
    // The 1/9 instance (10 bytes), where Alg. 1 fails: the modified greedy's density greedy
    // takes A (0.002) and B no longer fits; the best single expert is B (0.018 > 0.002), which
    // is kept. Value = OPT = 0.018, ratio 1 vs alpha = (1 - 1/e)/2 (N = 1), margin 1 - alpha
    // less (1e-12 + 1e-9 x 0.018) / 0.018. No fail case: the repair is proved (claim 12);
    // its judge's fail branch is covered by
    // `ratio_claims_fail_branch_through_judge_with_perturbed_references`.
    let i = blocked_pair(10);
    let c = run("slimcaching/prop3-repaired", &i);
    assert_eq!(c.outcome, Outcome::Pass, "{}", c.note);
    assert_near(c.value, 0.018, 1e-12);
    assert_near(c.reference, 0.018, 1e-12);
    assert_eq!(c.solver_status.as_deref(), Some("exhaustive"));
    assert_eq!(c.certificate, Some(Certificate::Optimum));
    assert_near(c.ratio, 1.0, 1e-12);
    let alpha = (1.0 - (-1.0f64).exp()) / 2.0;
    assert_near(c.bound, alpha, 1e-15);
    assert_near(
        c.margin,
        1.0 - alpha - allowance_over(0.018, 0.018, alpha),
        1e-12,
    );
}

/// One server of 3 bytes; model A (Top-1, one expert, id 0) and model P (Top-2, experts
/// {0, 1}, ids 1 and 2), all of 1 byte; one user requesting each with p = 1/2 and always
/// activating A's expert and P's pair.
fn mixed_one_server() -> Instance {
    one_server(
        3,
        json!([model_json("A", 1, 1, 1, 1e6), model_json("P", 2, 2, 1, 1e6)]),
        json!([user_json(
            json!([ { "model": 0, "p": 0.5 }, { "model": 1, "p": 0.5 } ]),
            json!([
                { "model": 0, "layer": 0, "sets": [ { "experts": [0], "p": 1.0 } ] },
                { "model": 1, "layer": 0, "sets": [ { "experts": [0, 1], "p": 1.0 } ] } ]),
        )]),
        1e30,
    )
}

#[test]
fn prop4_pass_on_one_server_with_a_top1_and_a_top2_model() {
    // Alg. 3 on the one server (base empty). F~^mod = 1/2 x 0.02 [0 in S] = 0.01 [0 in S]:
    // modular (every sub- and supermodular inequality an equality, left out), monotone with
    // strict gains 0.01 over max |f| = 0.01 (margin 1). F~^super = 1/2 (0.03 - G(S and {1,
    // 2})): {1} 0.005, {2} 0.005, {1, 2} 0.015; monotone with worst strict gain 0.005 over
    // 0.015 = 1/3; supermodular with f(1 | {2}) - f(1 | {}) = 0.01 - 0.005 = 0.005, also
    // 1/3. Margin 1/3 (less about 7e-10).
    let i = mixed_one_server();
    assert_ne!(
        tier("slimcaching/prop4-structure", &i).tier,
        Tier::Extension
    );
    let c = run("slimcaching/prop4-structure", &i);
    assert_eq!(c.outcome, Outcome::Pass, "{}", c.note);
    assert_eq!((c.value, c.reference, c.ratio), (None, None, None));
    assert_near(c.margin, 1.0 / 3.0, 1e-8);
    assert!(c.margin.unwrap() < 1.0 / 3.0);
}

#[test]
fn prop4_fails_on_a_server_slower_to_reach_than_the_cloud() {
    // Two servers of 1 byte joined by 30 ms latency links, one Top-1 expert, the user on
    // server 1. Alg. 3 takes server 0 first (X_{<0} empty): caching e0 there sends the token
    // 30 ms away and back (G = 0.06 instead of the cloud's 0.02), so F~^mod_0({e0}) = -0.04:
    // not monotone, worst gain -0.04 over max |f| = 0.04, margin -1 (plus about 1e-9).
    // (Alg. 3 skips the negative item; server 1 then caches e0, a gain of 0.02 whose margin
    // is about +1. F~^super has no term.)
    let i = two_servers_with(
        1,
        json!({ "latency_s": 0.03 }),
        model_json("A", 1, 1, 1, 1e6),
        &[0],
        1,
    );
    // Outside the model tier: the 60 ms edge round trip is slower than the cloud's 10 ms
    // return (premise cloud-much-slower). Inside the model F~^mod is modular and monotone
    // (each Top-1 demand gains local <= remote <= cloud), so no in-model fail is expected.
    let t = tier("slimcaching/prop4-structure", &i);
    assert_eq!(t.tier, Tier::Extension);
    assert!(
        t.broken.iter().any(|b| b.starts_with("cloud-much-slower")),
        "{t:?}"
    );
    let c = run("slimcaching/prop4-structure", &i);
    assert_eq!(c.outcome, Outcome::Fail, "{}", c.note);
    assert_eq!((c.value, c.reference, c.ratio), (None, None, None));
    assert_near(c.margin, -1.0, 1e-8);
    assert!(c.margin.unwrap() > -1.0);
    let w = c.witness.expect("witness");
    assert_eq!(w["server"], json!(0));
    assert_eq!(w["part"], json!("F~^mod"));
    assert_eq!(w["property"], json!("monotone non-decreasing"));
    assert_near(w["gain_smaller"].as_f64(), -0.04, 1e-12);
    assert!(
        c.note
            .contains("1 violated: server 0 F~^mod monotone non-decreasing"),
        "{}",
        c.note
    );
}

/// One server of 4 bytes, one Top-2 model with experts {0, 1} of 1 byte, three users with p
/// = 1 who always activate {0, 1}: the first holds neither, the second holds expert 1, the
/// third expert 0. Demands (weight 1/3 each): R = {0, 1}, {0} and {1}.
fn three_users_one_server() -> Instance {
    let user = |holds: &[u32]| {
        let local: Vec<Value> = holds
            .iter()
            .map(|&e| json!({ "model": 0, "layer": 0, "expert": e }))
            .collect();
        let mut u = user_json(
            json!([ { "model": 0, "p": 1.0 } ]),
            json!([ { "model": 0, "layer": 0, "sets": [ { "experts": [0, 1], "p": 1.0 } ] } ]),
        );
        u["local_experts"] = local.into();
        u
    };
    one_server(
        4,
        json!([model_json("P", 2, 2, 1, 1e6)]),
        json!([user(&[]), user(&[1]), user(&[0])]),
        1e30,
    )
}

#[test]
fn prop6_single_server_fails_where_tokens_miss_one_expert() {
    // App. E (1) with T = 0.01: g(0 | {}) = 1/3 (0.03 - 0.02) [R = {0, 1}] + 1/3 x 0.02
    // [R = {0}] = 0.01; g(0 | {1}) = 1/3 x 0.02 [R = {0, 1}: 0.02 -> 0] + 1/3 x 0.02
    // [R = {0}] = 0.04/3; the same for expert 1 by symmetry. kappa_1 = 1 - 0.01 / (0.04/3) =
    // 1/4 (the closed form A / (2 (A + B)) with A = B = 1/3). Prop. 6 as stated: margin 0.05
    // - |1/4 - 1/2| = -0.2, a fail. Repaired: delta = 0 (compute 2e-24 s is below the last
    // bit of 0.01), bound 1/2, raw slack min(0.04/3 - 0.01, 0.01 - 1/2 x 0.04/3) = 1/300 over
    // g(z | V - z) = 0.04/3: margin 1/4 plus the allowance (1e-12 + 1e-9 x 0.04/3) / (0.04/3).
    let i = three_users_one_server();
    // Inside the model (the regime's sizes aside), and Prop. 6's premises hold.
    assert_ne!(
        tier("slimcaching/prop6-single-server", &i).tier,
        Tier::Extension
    );
    assert_eq!(prop6_premises(&i), Ok(()));
    let c = run("slimcaching/prop6-single-server", &i);
    assert_eq!(c.outcome, Outcome::Fail, "{}", c.note);
    assert_near(c.value, 0.25, 1e-12);
    assert_eq!((c.reference, c.bound), (None, None));
    assert_near(c.margin, -0.2, 1e-12);
    let r = run("slimcaching/prop6-single-repaired", &i);
    assert_eq!(r.outcome, Outcome::Pass, "{}", r.note);
    assert_near(r.value, 0.25, 1e-12);
    assert_eq!(r.bound, Some(0.5));
    let at_rest = 0.04 / 3.0;
    assert_near(r.margin, 0.25 + (1e-12 + 1e-9 * at_rest) / at_rest, 1e-12);
}

#[test]
fn prop6_multi_repaired_pass_at_kappa_one_half() {
    // a_server_left_with_nothing_to_gain_has_kappa_zero's instance: kappa_0 = 1/2, server 1
    // vanishes, kappa_max = 1/2, inside the closed [0, 1]: margin min(1/2, 1 - 1/2) + 1e-12 +
    // 1e-9. No fail case: the repair is proved (claim 13), and its outcome is decided inline
    // (no judging function to perturb).
    let i = two_servers(2, 0.001, model_json("P", 2, 2, 1, 1e6), &[0, 1]);
    // Outside the model tier only by the form of its edge links (a fixed 1 ms latency, not a
    // rate: premise link-forms); a rate-only 1 ms link gives the same numbers (see
    // prop6_multi_server_pass_with_the_user_on_the_second_server).
    let t = tier("slimcaching/prop6-multi-repaired", &i);
    assert_eq!(t.tier, Tier::Extension);
    assert!(t.broken[0].starts_with("link-forms"), "{t:?}");
    let c = run("slimcaching/prop6-multi-repaired", &i);
    assert_eq!(c.outcome, Outcome::Pass, "{}", c.note);
    assert_near(c.value, 0.5, 1e-12);
    assert_eq!((c.reference, c.bound), (None, None));
    assert_near(c.margin, 0.5 + 1e-12 + 1e-9, 1e-12);
}

#[test]
fn prop6_multi_server_pass_with_the_user_on_the_second_server() {
    // Two servers of 2 bytes, rate-only 1 ms edge links (tau = 0.001), the cloud 10 ms (c =
    // 0.01), one Top-2 model with experts {0, 1} of 1 byte; the user is on server 1 and
    // always activates both. Alg. 3, server 0 first (remote for the user, X_{<0} empty):
    // caching one expert sends it to server 0 and the other to the cloud: G = 2 tau + 2 c =
    // 0.022 instead of 3 c = 0.03, a gain c - 2 tau = 0.008; adding the second gives G = tau +
    // 2 tau = 0.003, a gain 0.019 = 2 c - tau. kappa_0 = 1 - 0.008 / 0.019 = 11/19. Both fit
    // and gain: cached. Server 1 (X_{<1} = both on server 0): one local expert leaves one
    // remote trip, G = 0.002 (gain 0.001 = tau), both local G = 0 (gain 0.002 at the rest):
    // kappa_1 = 1/2. kappa_max = 11/19 in (1/2, 1): margin min(11/19 - 1/2, 1 - 11/19) +
    // 1e-9 = 3/38 + 1e-9. Repaired: min(11/19, 8/19) + 1e-12 + 1e-9.
    let i = two_servers_with(
        2,
        one_ms_rated_link(),
        model_json("P", 2, 2, 1, 1e6),
        &[0, 1],
        1,
    );
    assert_ne!(
        tier("slimcaching/prop6-multi-server", &i).tier,
        Tier::Extension
    );
    assert_eq!(prop6_premises(&i), Ok(()));
    let c = run("slimcaching/prop6-multi-server", &i);
    assert_eq!(c.outcome, Outcome::Pass, "{}", c.note);
    assert_near(c.value, 11.0 / 19.0, 1e-12);
    assert_near(c.margin, 3.0 / 38.0 + 1e-9, 1e-12);
    assert!(c.note.contains("inside (1/2, 1)"), "{}", c.note);
    assert_eq!(c.witness, None);
    let r = run("slimcaching/prop6-multi-repaired", &i);
    assert_eq!(r.outcome, Outcome::Pass, "{}", r.note);
    assert_near(r.value, 11.0 / 19.0, 1e-12);
    assert_near(r.margin, 8.0 / 19.0 + 1e-12 + 1e-9, 1e-12);
    // Thm. 1 on the same run: F(Alg. 3) = 0.03 (both experts on the user's server) = OPT,
    // bound (1 - 11/19)/2 = 4/19, margin 15/19 less (1e-12 + 1e-9 x 0.03) / 0.03.
    let t = run("slimcaching/thm1-ratio", &i);
    assert_eq!(t.outcome, Outcome::Pass, "{}", t.note);
    assert_near(t.value, 0.03, 1e-12);
    assert_near(t.reference, 0.03, 1e-12);
    assert_near(t.ratio, 1.0, 1e-12);
    assert_near(t.bound, 4.0 / 19.0, 1e-12);
    assert_near(
        t.margin,
        15.0 / 19.0 - allowance_over(0.03, 0.03, 4.0 / 19.0),
        1e-12,
    );
    // Prop. 5: server 0 has F~_0 = 0.027 = its P2_0 optimum (both fit), ratio 1 vs 1 - 11/19
    // = 8/19, margin 11/19 - 1.04e-9; server 1 has F~_1 = 0.003 = its optimum, ratio 1 vs
    // 1/2, margin 1/2 less (1e-12 + 1e-9 x 0.003) / 0.003: the worst server, reported.
    let p = run("slimcaching/prop5-subproblem-ratio", &i);
    assert_eq!(p.outcome, Outcome::Pass, "{}", p.note);
    assert_near(p.value, 0.003, 1e-12);
    assert_near(p.reference, 0.003, 1e-12);
    assert_near(p.ratio, 1.0, 1e-9);
    assert_near(p.bound, 0.5, 1e-12);
    assert_near(p.margin, 0.5 - allowance_over(0.003, 0.003, 0.5), 1e-9);
}

#[test]
fn alg3_equals_alg2_on_the_knapsack_example() {
    // The knapsack example of the algorithms' tests with negligible compute: one server of
    // 100 bytes; model A (Top-1, experts of 100 bytes; expert 0 with weight 10/16.5, expert 1
    // never) and model B (Top-1, experts of 50 bytes, weights 5.5/16.5 and 1/16.5). Each
    // cached expert saves 0.02 per unit of weight: item values (10, 0, 5.5, 1)/16.5 x 0.02,
    // sizes (100, 100, 50, 50), Q = 100. Both solvers find {A0} = 10/16.5 x 0.02 (B0 + B1
    // gives 6.5/16.5 x 0.02), summed in the same order: difference 0, margin (t - 0) / t = 1.
    let i = one_server(
        100,
        json!([
            model_json("A", 1, 2, 100, 1e6),
            model_json("B", 1, 2, 50, 1e6)
        ]),
        json!([user_json(
            json!([ { "model": 0, "p": 10.0 / 16.5 }, { "model": 1, "p": 6.5 / 16.5 } ]),
            json!([
                { "model": 0, "layer": 0, "sets": [ { "experts": [0], "p": 1.0 } ] },
                { "model": 1, "layer": 0, "sets": [ { "experts": [0], "p": 5.5 / 6.5 },
                                                    { "experts": [1], "p": 1.0 / 6.5 } ] } ]),
        )]),
        1e30,
    );
    let model = LatencyModel::new(&i);
    let run2 = algorithms::successive_dp(&model).expect("small");
    assert_near(
        run2.subproblem_values.first().copied(),
        10.0 / 16.5 * 0.02,
        1e-12,
    );
    let c = run("slimcaching/alg3-equals-alg2", &i);
    assert_eq!(c.outcome, Outcome::Pass, "{}", c.note);
    assert_eq!(c.value, Some(0.0));
    assert_eq!(c.bound, Some(1e-9));
    assert_near(c.margin, 1.0, 1e-12);
}

/// The fail branch of the ratio claims that have no known counterexample (Remark 2, Prop. 5,
/// Thm. 1; and the proved Prop. 3 repair): JUDGE-LEVEL, NOT AN INSTANCE. Each takes the
/// value of one of the hand pass cases above and a deliberately perturbed (too large) proved
/// optimum, and runs the claims' shared judging (`ratio_check`, i.e. `judge`): v < b r, so a
/// fail certified by the optimum, ratio v / r, margin (v - b r + t) / r with t = 1e-12 +
/// 1e-9 b r.
#[test]
fn ratio_claims_fail_branch_through_judge_with_perturbed_references() {
    let alpha = (1.0 - (-1.0f64).exp()) / 2.0;
    for (id, v, true_r, perturbed, b) in [
        // Remark 2 on the 1/9 instance: Alg. 2 = 0.018 = OPT; against 0.04, 1/2 x 0.04 =
        // 0.02 > 0.018: ratio 0.45, margin -0.05 + 2.1e-11 / 0.04.
        ("slimcaching/remark2-half", 0.018, 0.018, 0.04, 0.5),
        // Prop. 5, server 0 of a_server_left_with_nothing_to_gain_has_kappa_zero: 0.03 =
        // OPT, bound 1 - 1/2; against 0.07: ratio 3/7, margin -1/14 + 3.6e-11 / 0.07.
        ("slimcaching/prop5-subproblem-ratio", 0.03, 0.03, 0.07, 0.5),
        // Thm. 1 on the same instance: 0.03 = OPT, bound 1/4; against 0.13: ratio 3/13,
        // margin -0.0025 / 0.13 + 3.35e-11 / 0.13.
        ("slimcaching/thm1-ratio", 0.03, 0.03, 0.13, 0.25),
        // Prop. 3 repaired on the 1/9 instance: 0.018 = OPT, bound alpha; against 0.06,
        // alpha x 0.06 = 0.01896 > 0.018.
        ("slimcaching/prop3-repaired", 0.018, 0.018, 0.06, alpha),
    ] {
        let optimum = |r: f64| Reference {
            value: Some(r),
            kind: ReferenceKind::Optimum,
            status: Some("exhaustive".into()),
            placement: None,
            incumbent: Some(r),
        };
        let check = |r: f64| {
            ratio_check(
                v,
                &optimum(r),
                Some(b),
                format!("{id} judge-level"),
                || json!({ "perturbed_reference": r }),
            )
        };
        // The true optimum passes (as the instance's check does) ...
        let pass = check(true_r);
        assert_eq!(pass.outcome, Outcome::Pass, "{id}");
        assert_near(pass.margin, 1.0 - b - allowance_over(v, true_r, b), 1e-12);
        // ... the perturbed one fails.
        let c = check(perturbed);
        assert_consistent(id, &c);
        assert_eq!(c.outcome, Outcome::Fail, "{id}");
        assert_eq!(c.certificate, Some(Certificate::Optimum), "{id}");
        assert_eq!(
            (c.value, c.reference, c.bound),
            (Some(v), Some(perturbed), Some(b))
        );
        assert_near(c.ratio, v / perturbed, 1e-15);
        let t = 1e-12 + 1e-9 * b * perturbed;
        assert_near(c.margin, (v - b * perturbed + t) / perturbed, 1e-15);
        assert!(c.witness.is_some(), "{id}");
    }
    // The hand values of the margins named above.
    let m = |v: f64, r: f64, b: f64| (v - b * r + 1e-12 + 1e-9 * b * r) / r;
    assert_near(Some(m(0.018, 0.04, 0.5)), -0.05, 1e-9);
    assert_near(Some(m(0.03, 0.07, 0.5)), -1.0 / 14.0, 1e-9);
    assert_near(Some(m(0.03, 0.13, 0.25)), -0.0025 / 0.13, 1e-9);
}

#[test]
fn demand_by_demand_agrees_with_the_whole_lattice() {
    // The paper-size path (group by group, module `properties`) against every inequality of
    // F's whole lattice, on the tiny families (F over all N x E <= 16 pairs) and on a
    // non-monotone two-server instance: a pass is a proof (the lattice agrees), a violation
    // is one of F (re-evaluated here with LatencyModel::objective), and undecided is allowed.
    let properties = [
        ("monotone non-decreasing", Property::Monotone),
        ("submodular", Property::Submodular),
        ("supermodular", Property::Supermodular),
    ];
    let (mut proved, mut refuted, mut undecided) = (0, 0, 0);
    let slow = two_servers(1, 0.03, model_json("A", 1, 1, 1, 1e6), &[0]);
    let instances = (0..10)
        .flat_map(|s| {
            [
                family_tiny_top1(s),
                family_tiny_top2(s),
                family_tiny_mixed(s),
            ]
        })
        .chain([slow]);
    for i in instances {
        let model = LatencyModel::new(&i);
        let (ground, _) = full_ground(&model);
        let f = PlacementFunction::new(&model, &model.empty_placement(), ground, |_| true);
        let objective = |members: &[usize]| {
            let mut x = model.empty_placement();
            for &m in members {
                x.insert(f.ground[m].0, f.ground[m].1);
            }
            model.objective(&x)
        };
        for (name, p) in properties {
            let Some(whole) = worst_slack(&f, p, Mode::Exhaustive, TOLERANCE) else {
                continue;
            };
            let t = termwise(&f, &[(name, p)]);
            assert!(t.groups > 0, "{}", i.name);
            match (t.violated.first(), t.unresolved.is_empty()) {
                (Some((_, _, slack, w)), _) => {
                    assert!(whole.slack < 0.0, "{} {name}", i.name);
                    let with = |set: &[usize]| {
                        let mut plus = set.to_vec();
                        plus.push(w.element);
                        objective(&plus) - objective(set)
                    };
                    let (a, b) = (with(&w.smaller), with(&w.larger));
                    assert!(
                        (a - w.gain_smaller).abs() < 1e-12 && (b - w.gain_larger).abs() < 1e-12
                    );
                    assert!(
                        p.slack(TOLERANCE, a, b) < 0.0 && *slack < 0.0,
                        "{} {name}",
                        i.name
                    );
                    assert!(w.larger.iter().all(|x| *x != w.element));
                    assert!(w.smaller.iter().all(|x| w.larger.contains(x)));
                    refuted += 1;
                }
                (None, true) => {
                    assert!(whole.slack >= 0.0, "{} {name}: {whole:?}", i.name);
                    proved += 1;
                }
                (None, false) => undecided += 1,
            }
        }
    }
    // Both verdicts occur, and the sums rarely hide a group's violation on these families
    // (measured: 57 proved, 36 refuted, none undecided).
    assert!(
        proved > 20 && refuted > 10,
        "{proved} {refuted} {undecided}"
    );
    assert!(undecided <= refuted, "{proved} {refuted} {undecided}");
}
