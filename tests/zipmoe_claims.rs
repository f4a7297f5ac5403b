//! The ZipMoE claims on hand-checked layers and on the tiny family.

use formulations::zipmoe::Instance;
use moe_opt::claims::{CheckOptions, Outcome, ReferenceKind};
use moe_opt::zipmoe::claims::{family_tiny, registry};

fn layer(json: serde_json::Value) -> Instance {
    let i: Instance = serde_json::from_value(json).unwrap();
    formulations::zipmoe::validate::validate(&i).unwrap();
    i
}

fn claim(id: &str) -> moe_opt::zipmoe::claims::ZipClaim {
    registry().into_iter().find(|c| c.info.id == id).unwrap()
}

#[test]
fn lemma_b3_fails_when_reads_overlap_decompressions() {
    // One SM-cached tensor, K = 2, L = 1, rho u = 1 (u = 2, rho = .5), c = 1, p = .5. Reads end
    // at .5 and 1; decompressions [.5, 1.5], [1.5, 2.5]; execution [2.5, 3]: OPT = 3 (the first
    // decompression needs a read of .5, then 2 c and p on one thread and the GPU). Def. B.2's
    // z = rho u + K c / min(K, L) + p = 1 + 2 + .5 = 3.5 > OPT.
    let i = layer(serde_json::json!({
        "problem": "zipmoe", "name": "z-counterexample", "tensors_per_expert": 1,
        "shards": 2, "compression_ratio": 0.5, "sm_read_s": 2.0, "decompress_s": 1.0,
        "threads": 1,
        "experts": [ { "id": 0, "tokens": 1, "gpu_s": 0.5, "state": "sm_cached" } ] }));
    let c = (claim("zipmoe/lemmab3-lower-bound").check)(&i, &CheckOptions::default());
    assert_eq!(c.outcome, Outcome::Fail);
    assert_eq!(c.reference_kind, ReferenceKind::Optimum);
    assert_eq!((c.value, c.reference), (Some(3.5), Some(3.0)));
    assert!(c.note.contains("above OPT: Z"), "{}", c.note);
    let m = c.margin.unwrap();
    assert!((m - (-0.5 / 3.0)).abs() < 1e-8, "{m}");
    assert!(c.witness.is_some());
}

#[test]
fn theorem_3_1_on_the_hand_derived_layer() {
    // See algorithms.rs's tests: Alg. 1 makes one block (C, B, A) with makespan 8, OPT = 7;
    // bound 3 - 1/2 = 2.5, margin = 2.5 - 8/7 (within 1e-8).
    let i = layer(serde_json::json!({
        "problem": "zipmoe", "name": "abc", "tensors_per_expert": 1, "shards": 2,
        "compression_ratio": 0.5, "sm_read_s": 2.0, "decompress_s": 1.0, "threads": 2,
        "experts": [
            { "id": 0, "tokens": 1, "gpu_s": 3.0, "state": "missed" },
            { "id": 1, "tokens": 1, "gpu_s": 2.0, "state": "compressed" },
            { "id": 2, "tokens": 1, "gpu_s": 1.0, "state": "e_cached" } ] }));
    let c = (claim("zipmoe/thm31-ratio").check)(&i, &CheckOptions::default());
    assert_eq!(c.outcome, Outcome::Pass);
    assert_eq!((c.value, c.reference), (Some(8.0), Some(7.0)));
    assert_eq!(c.solver_status.as_deref(), Some("exhaustive"));
    assert!((c.margin.unwrap() - (2.5 - 8.0 / 7.0)).abs() < 1e-8);
    let lb = (claim("zipmoe/lemmab3-lower-bound").check)(&i, &CheckOptions::default());
    // LB = max(I 5, C/L 3, P 6, Z 6) = 6 <= 7.
    assert_eq!((lb.outcome, lb.value), (Outcome::Pass, Some(6.0)));
}

#[test]
fn checks_on_the_tiny_family_are_consistent() {
    let options = CheckOptions::default();
    let mut lemma_fails = 0;
    for seed in 0..16 {
        let i = family_tiny(seed);
        for c in registry() {
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
