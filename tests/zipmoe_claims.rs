//! The ZipMoE claims on hand-checked layers and on the tiny family.

use formulations::zipmoe::Instance;
use moe_opt::claims::{CheckOptions, Outcome, ReferenceKind};
use moe_opt::zipmoe::claims::{family_tiny, table};

fn layer(json: serde_json::Value) -> Instance {
    let i: Instance = serde_json::from_value(json).unwrap();
    formulations::zipmoe::validate::validate(&i).unwrap();
    i
}

fn claim(id: &str) -> moe_opt::zipmoe::claims::ZipClaim {
    table().into_iter().find(|c| c.info.id == id).unwrap()
}

/// The tolerance of the claims' `a <= b` (zipmoe::claims, module doc): 1e-12 + 1e-9 max(a, b).
fn tolerance(a: f64, b: f64) -> f64 {
    1e-12 + 1e-9 * a.max(b)
}

/// One SM-cached tensor, K = 2, L = 1, rho u = 1 (u = 2, rho = .5), c = 1, p = .5.
fn z_layer() -> Instance {
    layer(serde_json::json!({
        "problem": "zipmoe", "name": "z-counterexample", "tensors_per_expert": 1,
        "shards": 2, "compression_ratio": 0.5, "sm_read_s": 2.0, "decompress_s": 1.0,
        "threads": 1,
        "experts": [ { "id": 0, "tokens": 1, "gpu_s": 0.5, "state": "sm_cached" } ] }))
}

/// K = 2, L = 2, u = 2, rho = .5, c = 1: a missed expert (p 3), a compressed one (p 2) and an
/// E-cached one (p 1).
fn abc_layer() -> Instance {
    layer(serde_json::json!({
        "problem": "zipmoe", "name": "abc", "tensors_per_expert": 1, "shards": 2,
        "compression_ratio": 0.5, "sm_read_s": 2.0, "decompress_s": 1.0, "threads": 2,
        "experts": [
            { "id": 0, "tokens": 1, "gpu_s": 3.0, "state": "missed" },
            { "id": 1, "tokens": 1, "gpu_s": 2.0, "state": "compressed" },
            { "id": 2, "tokens": 1, "gpu_s": 1.0, "state": "e_cached" } ] }))
}

#[test]
fn lemma_b3_fails_when_reads_overlap_decompressions() {
    // One SM-cached tensor, K = 2, L = 1, rho u = 1 (u = 2, rho = .5), c = 1, p = .5. Reads end
    // at .5 and 1; decompressions [.5, 1.5], [1.5, 2.5]; execution [2.5, 3]: OPT = 3 (the first
    // decompression needs a read of .5, then 2 c and p on one thread and the GPU). Def. B.2's
    // z = rho u + K c / min(K, L) + p = 1 + 2 + .5 = 3.5 > OPT. Ratio 3.5 / 3, margin
    // (3 - 3.5 + t) / 3 with t = 1e-12 + 3.5e-9.
    let i = z_layer();
    let c = (claim("zipmoe/lemmab3-lower-bound").check)(&i, &CheckOptions::default());
    assert_eq!(c.outcome, Outcome::Fail);
    assert_eq!(c.reference_kind, ReferenceKind::Optimum);
    assert_eq!((c.value, c.reference), (Some(3.5), Some(3.0)));
    assert_eq!(c.bound, Some(1.0));
    assert!((c.ratio.unwrap() - 3.5 / 3.0).abs() < 1e-12);
    assert!(c.note.contains("above OPT: Z"), "{}", c.note);
    let m = c.margin.unwrap();
    assert!((m - (-0.5 / 3.0)).abs() < 1e-8, "{m}");
    assert!(
        (m - (-0.5 + tolerance(3.5, 3.0)) / 3.0).abs() < 1e-15,
        "{m}"
    );
    assert!(c.witness.is_some());
}

#[test]
fn repaired_lemma_b3_meets_the_optimum_where_the_stated_one_fails() {
    // The layer of lemma_b3_fails_when_reads_overlap_decompressions. Z' = max(N v, D) + p
    // with N v = rho u = 1, m = 2 decompressions, e = rho u / K = .5: D = max(1 e + ceil(2 / 1)
    // c, 2 e + ceil(1 / 1) c) = max(2.5, 2) = 2.5, Z' = 3. I = 1, C / L = 2, P = .5: LB = 3 =
    // OPT. Equality within the tolerance band: a pass without a margin; ratio 1.
    let c = (claim("zipmoe/lemmab3-repaired").check)(&z_layer(), &CheckOptions::default());
    assert_eq!(c.outcome, Outcome::Pass, "{}", c.note);
    assert_eq!((c.value, c.reference), (Some(3.0), Some(3.0)));
    assert_eq!((c.ratio, c.bound, c.margin), (Some(1.0), Some(1.0), None));
    assert_eq!(c.solver_status.as_deref(), Some("exhaustive"));
    assert!(!c.note.contains("above OPT"), "{}", c.note);
    // The abc layer (theorem_3_1_on_the_hand_derived_layer): Z' per expert, e = .5, m = 2,
    // L = 2: missed max(N v = 1 + 2 = 3, D = max(.5 + 1, 1 + 1) = 2) + 3 = 6; compressed
    // max(0, D = 1) + 2 = 3; E-cached max(u = 2, 1) + 1 = 3. LB = max(I 5, C/L 3, P 6, Z' 6)
    // = 6 <= OPT 7: ratio 6/7, margin (7 - 6 - t) / 7 with t = 1e-12 + 7e-9.
    let c = (claim("zipmoe/lemmab3-repaired").check)(&abc_layer(), &CheckOptions::default());
    assert_eq!(c.outcome, Outcome::Pass, "{}", c.note);
    assert_eq!((c.value, c.reference), (Some(6.0), Some(7.0)));
    assert_eq!(c.bound, Some(1.0));
    assert!((c.ratio.unwrap() - 6.0 / 7.0).abs() < 1e-15);
    let m = c.margin.unwrap();
    assert!((m - (1.0 - tolerance(6.0, 7.0)) / 7.0).abs() < 1e-15, "{m}");
}

#[test]
fn theorem_3_1_on_the_hand_derived_layer() {
    // See algorithms.rs's tests: Alg. 1 makes one block (C, B, A) with makespan 8, OPT = 7;
    // bound 3 - 1/2 = 2.5, ratio 8/7, margin = (2.5 x 7 - 8 - t) / 7 = 2.5 - 8/7 - t/7 with
    // t = 1e-12 + 17.5e-9. (A fail of this stated, proved theorem needs a perturbed OPT:
    // zipmoe::claims's judge-level test.)
    let i = abc_layer();
    let c = (claim("zipmoe/thm31-ratio").check)(&i, &CheckOptions::default());
    assert_eq!(c.outcome, Outcome::Pass);
    assert_eq!((c.value, c.reference), (Some(8.0), Some(7.0)));
    assert_eq!(c.bound, Some(2.5));
    assert!((c.ratio.unwrap() - 8.0 / 7.0).abs() < 1e-15);
    assert_eq!(c.solver_status.as_deref(), Some("exhaustive"));
    assert!((c.margin.unwrap() - (2.5 - 8.0 / 7.0)).abs() < 1e-8);
    let m = c.margin.unwrap();
    assert!(
        (m - (17.5 - 8.0 - tolerance(8.0, 17.5)) / 7.0).abs() < 1e-15,
        "{m}"
    );
    let lb = (claim("zipmoe/lemmab3-lower-bound").check)(&i, &CheckOptions::default());
    // LB = max(I 5, C/L 3, P 6, Z 6) = 6 <= 7 (I: missed (1 + rho) u = 3 + E-cached u = 2;
    // C = 3 x K c = 6 over L = 2; P = 3 + 2 + 1; Z: missed rho u + max(K c / 2, u) + p = 1 +
    // 2 + 3). Ratio 6/7, margin (7 - 6 - t) / 7, t = 1e-12 + 7e-9.
    assert_eq!(
        (lb.outcome, lb.value, lb.reference),
        (Outcome::Pass, Some(6.0), Some(7.0))
    );
    assert_eq!(lb.bound, Some(1.0));
    assert!((lb.ratio.unwrap() - 6.0 / 7.0).abs() < 1e-15);
    let m = lb.margin.unwrap();
    assert!((m - (1.0 - tolerance(6.0, 7.0)) / 7.0).abs() < 1e-15, "{m}");
}

#[test]
fn checks_on_the_tiny_family_are_consistent() {
    let options = CheckOptions::default();
    let mut lemma_fails = 0;
    for seed in 0..16 {
        let i = family_tiny(seed);
        for c in table() {
            let check = (c.check)(&i, &options);
            assert_eq!(
                check.reference_kind,
                ReferenceKind::Optimum,
                "{}",
                c.info.id
            );
            // A margin is negative exactly on a fail.
            assert_eq!(
                check.outcome == Outcome::Fail,
                check.margin.is_some_and(|m| m < 0.0),
                "{} seed {seed}: {check:?}",
                c.info.id
            );
            if c.info.id == "zipmoe/thm31-ratio" {
                // ALG can never beat a proved optimum.
                assert!(check.ratio.unwrap() >= 1.0 - 1e-9);
            } else if check.outcome == Outcome::Fail {
                lemma_fails += 1;
                // Only Def. B.2's Z can exceed OPT: I, C/L and P are valid bounds.
                assert!(check.note.ends_with("above OPT: Z"), "{}", check.note);
            }
        }
    }
    // Seed 3 is such a layer (one tensor with L < K).
    assert!(lemma_fails >= 1);
}
