//! Tests of the SlimCaching claims: the registry, the families, each layer's pieces and every
//! check on hand-built instances.

use super::curvature::{
    check_prop5, check_prop6_multi, check_prop6_single, check_thm1, kappas, prop5_with,
    prop6_premises,
};
use super::properties::{check_prop1, check_prop2_monotone, check_prop2_neither, check_prop4};
use super::references::{check_prop3, check_remark2, judge, p2_reference, Judged, Reference};
use super::set_functions::{
    eid, full_ground, prefix, server_ground, sid, top_k, PlacementFunction,
};
use super::*;
use crate::claims::{Certificate, Check, Outcome, ReferenceKind};
use crate::slimcaching::algorithms;
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
    registry()
        .into_iter()
        .find(|c| c.info.id == id)
        .unwrap_or_else(|| panic!("claim {id} registered"))
}

#[test]
fn ids_are_unique_and_well_formed() {
    let reg = registry();
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
    for c in registry() {
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

/// The fields of a check are consistent with each other.
fn assert_consistent(id: &str, c: &Check) {
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
    if ratio_claim && c.outcome != Outcome::Inconclusive {
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
        (Outcome::Inconclusive | Outcome::Measured, m) => assert_eq!(m, None, "{id}: {c:?}"),
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
    for c in registry() {
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
    for c in registry() {
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
    let users = json!([{
        "compute_flops": 1e30, "associated_server": 0,
        "uplink": [ { "rate_bps": 1e7 } ], "downlink": [ { "rate_bps": 1e7 } ],
        "requests": [ { "model": 0, "p": 0.1 }, { "model": 1, "p": 0.9 } ],
        "activations": [
            { "model": 0, "layer": 0, "sets": [ { "experts": [0], "p": 1.0 } ] },
            { "model": 1, "layer": 0, "sets": [ { "experts": [0], "p": 1.0 } ] } ] }]);
    let i = one_server(
        10,
        json!([
            model_json("A", 1, 1, 1, 1e6),
            model_json("B", 1, 1, 10, 1e6)
        ]),
        users,
        1e30,
    );
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
    // Alg. 2 / 3 solve this one-server Top-1 knapsack exactly (Remark 2): ratio 1.
    let r = check_remark2(&i, &options());
    assert_eq!(r.outcome, Outcome::Pass);
    assert!((r.ratio.unwrap() - 1.0).abs() < 1e-12);
    assert!((r.margin.unwrap() - 0.5).abs() < 1e-8);
}

/// Two servers of `storage` bytes joined by `edge_s` latency each way, the cloud 10 ms
/// each way, negligible compute, one model, one user on server 0 who always activates
/// `experts` of layer 0.
fn two_servers(storage: u64, edge_s: f64, model: serde_json::Value, experts: &[u32]) -> Instance {
    instance(json!({
        "servers": [ { "storage_bytes": storage, "compute_flops": 1e30 },
                     { "storage_bytes": storage, "compute_flops": 1e30 } ],
        "cloud": { "compute_flops": 1e30 },
        "backhaul": { "symmetric": true,
                      "edge_to_edge": [[null, { "latency_s": edge_s }],
                                       [{ "latency_s": edge_s }, null]],
                      "edge_to_cloud": [ { "latency_s": 0.01 }, { "latency_s": 0.01 } ],
                      "cloud_to_edge": [ { "latency_s": 0.01 }, { "latency_s": 0.01 } ] },
        "models": [ model ],
        "users": [ { "compute_flops": 1e30, "associated_server": 0,
                     "uplink": [ { "rate_bps": 1e7 }, { "rate_bps": 1e7 } ],
                     "downlink": [ { "rate_bps": 1e7 }, { "rate_bps": 1e7 } ],
                     "requests": [ { "model": 0, "p": 1.0 } ],
                     "activations": [ { "model": 0, "layer": 0,
                                        "sets": [ { "experts": experts, "p": 1.0 } ] } ] } ]
    }))
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
    // Prop. 3's premise holds but Prop. 2's does not.
    assert_eq!(
        check_prop2_monotone(&i, &options()).outcome,
        Outcome::Inconclusive
    );
}

/// One server, one Top-2 model of 2 experts in one layer, one user who holds none and
/// always activates {0, 1}: Appendix E's single-server setting.
fn pair_instance(edge_flops: f64, cloud_flops: f64, expert_flops: f64) -> Instance {
    let mut i = one_server(
        4,
        json!([model_json("P", 2, 2, 1, expert_flops)]),
        json!([{ "compute_flops": 1e30, "associated_server": 0,
                 "uplink": [ { "rate_bps": 1e7 } ], "downlink": [ { "rate_bps": 1e7 } ],
                 "requests": [ { "model": 0, "p": 1.0 } ],
                 "activations": [ { "model": 0, "layer": 0,
                                    "sets": [ { "experts": [0, 1], "p": 1.0 } ] } ] }]),
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
    //   "computation negligible" fails, so the check is inconclusive but reports kappa.
    let c = check_prop6_single(&pair_instance(2e12, 1e12, 1e9), &options());
    assert_eq!(c.outcome, Outcome::Inconclusive);
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
            let a = p2_reference(&model, &base, n, &opts, None, false);
            let b = p2_reference(&model, &base, n, &opts, None, true);
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
fn premises_make_checks_inconclusive() {
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
        assert_eq!(c.outcome, Outcome::Inconclusive, "{id}");
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
    let p = check_prop5(&i, &options());
    assert_eq!(p.outcome, Outcome::Pass);
    assert!((p.margin.unwrap() - 0.5).abs() < 1e-8, "{:?}", p.margin);
    let t = check_thm1(&i, &options());
    assert_eq!(t.outcome, Outcome::Pass);
    assert!((t.bound.unwrap() - 0.25).abs() < 1e-12);
    assert!((t.reference.unwrap() - 0.03).abs() < 1e-12);
    assert!((t.margin.unwrap() - 0.75).abs() < 1e-8, "{:?}", t.margin);
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
