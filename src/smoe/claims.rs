//! The SMoE claims (paper 004) as hypotheses checked layer by layer.
//!
//! ## Optima
//! The optimum of objective (1) comes from the exhaustive per-token search
//! (`formulations::smoe::evaluate::routing_exhaustive`, status `exhaustive`) where a token has
//! at most 10^6 subsets, otherwise from the closed form (`routing_closed_form`, status
//! `closed_form`): a routing that puts every available expert of E_l ∪ S into the |E_l| free
//! slots, evaluated by the one evaluator, whose value must equal formula (1), the proved
//! maximum (module doc of formulations::smoe; else the check is inconclusive). The optimum of
//! (4) for uniform costs is the closed form (`split_optimum_uniform`, checked against brute
//! force in its tests; status `closed_form`). All are proved optima at any size, so these
//! claims pass or fail at the papers' scale too.
//!
//! ## Families
//! * `tiny` (the small scale): the tiny preset.
//! * The papers' scale ([`paper_layer`]): Table III's three settings (64 experts, top-6 or
//!   top-8), batches of 1 and 3 tokens, alpha on Table IV's grid; tier `regime` (its premises'
//!   bands hold by construction; the unit tests check it).
//!
//! ## The claims (ids `smoe/...`)
//! 1. `eq1-router-optimal`, Sec. IV-B, Alg. 1 with the text's reading (only low-score experts
//!    outside G ∪ C are replaced): its routing reaches the maximum of (1) for every token;
//!    measured as the total routing hits over the batch.
//! 2. `alg1-literal-optimal`, the same for Alg. 1 as printed (all low-score experts replaced
//!    when there are enough substitutes, otherwise the best-scoring ones kept whether resident
//!    or not).
//! 3. `alg2-uniform-optimal`, Sec. V-A: Alg. 2 (as printed) attains the minimum of (4) for
//!    uniform costs, on the missed experts of claim 1's routing. Layers without a missed
//!    expert hold vacuously (nothing to split: every split is optimal); per-expert costs are
//!    outside the claim (not applicable).
//!
//! All three are inferred, not stated: the paper gives objective (1) as the router's goal ("Our
//! goal is to maximize, for each layer, the number of routing hits [...]") and (4) as the
//! scheduler's ("The optimization goal is expressed by the following equation [...]"), but
//! never states that Alg. 1 or Alg. 2 attains the optimum; a violation is not the paper's error.
//!
//! ## Margins
//! Claims 1-2: router hits minus optimal hits (an integer, <= 0; a fail exactly when < 0).
//! Claim 3: with a = Alg. 2's (4), b = the optimum and t = 1e-12 + 1e-9 max(a, b), the margin
//! is (b - a + t) / b when b - a + t < 0 (a fail) and 0 otherwise (equality claims have no
//! slack to spare; [`decide`]).

use formulations::smoe::evaluate::{evaluate_routing, routing_closed_form, routing_exhaustive};
use formulations::smoe::{objective1, split_optimum_uniform, Costs, Instance, LayerSets};
use serde_json::json;

use super::generate::{generate, paper_layer, Preset};
use super::router::{route_batch, LowScore, RouterConfig};
use super::split::{alg2, Alg2Rule};
use crate::claims::{
    decide, Check, CheckOptions, Claim, ClaimInfo, ClaimKind, Outcome, PaperScale,
};

/// The paper's file.
pub const PAPER: &str = "004_ecd17ad30b7583cf.txt";

/// One registered SMoE claim.
pub type SmoeClaim = Claim<Instance>;

/// The paper's goal sentence for Alg. 1 (Sec. IV-B), which both Alg. 1 claims infer from.
const ALG1_GOAL: &str = "Our goal is to maximize, for each layer, the number of routing hits on \
    experts that already reside in GPU memory. [...] Our optimization objective, given by \
    Equation (1), consists of the number of experts already in the GPU and the number of \
    low-score experts replaced by experts in the GPU. [...] Algorithm 1 illustrates our approach \
    for the expert-cache router.";

/// The papers' scale ([`paper_layer`]).
const PAPER_SCALE: &str = "Table III's settings: seed % 3 picks deepseek-moe-16b or \
    XVERSE-MoE-A4.2B (64 experts, top-6) or Qwen2-57B-A14B (64, top-8), seed % 6 < 3 a batch of 1 \
    token, else 3; alpha on Table IV's grid 0..0.6 step 0.05, softmax scores of N(0, sigma^2) \
    logits (sigma in [0.8, 1.5]), the GPU's share of the model (0.39, 0.33, 0.45) resident, \
    C_load 6 ms, C_CPU 2 ms";

const TINY: &str = "tiny: E in 6..=10, k in 2..=4, 1-3 tokens, softmax scores of N(0, sigma^2) \
    logits (sigma in [0.3, 1.5]), alpha in [0, 0.6], G a random 20-60% of E, uniform costs";

/// Every SMoE claim.
pub fn table() -> Vec<SmoeClaim> {
    // Objective (1) read two ways: Sec. IV-B's text and Alg. 1 as printed.
    let router = ClaimInfo {
        id: "smoe/eq1-router-optimal",
        paper: PAPER,
        place: "Sec. IV-A eq. (1) and Sec. IV-B (expert-cache router, text)",
        statement: "The expert-cache router maximises the routing hits of objective \
            (1): |G ∩ E_a| + min(|E_l \\ G|, |E_s|) per token",
        measured: "routing hits of Alg. 1 (text's reading) over the batch vs the \
            exhaustive per-token optimum",
        bound: "hits = optimum",
        family: TINY,
        quote: ALG1_GOAL,
        kind: ClaimKind::Inferred,
        ..ClaimInfo::DEFAULTS
    };
    vec![
        SmoeClaim {
            info: router,
            family: family_tiny,
            paper: PaperScale::Family(PAPER_SCALE, paper_layer),
            check: |i, o| check_router(i, o, LowScore::Missing),
        },
        SmoeClaim {
            info: ClaimInfo {
                id: "smoe/alg1-literal-optimal",
                place: "Alg. 1 as printed (Sec. IV-B)",
                statement: "Alg. 1 as printed (every low-score expert replaced when substitutes \
                    suffice, else the best-scoring ones kept) maximises objective (1)",
                measured: "routing hits of the printed Alg. 1 over the batch vs the exhaustive \
                    per-token optimum",
                ..router
            },
            family: family_tiny,
            paper: PaperScale::Family(PAPER_SCALE, paper_layer),
            check: |i, o| check_router(i, o, LowScore::All),
        },
        SmoeClaim {
            info: ClaimInfo {
                id: "smoe/alg2-uniform-optimal",
                paper: PAPER,
                place: "Sec. V-A, Alg. 2 and eq. (4)",
                statement: "The two-pointer CPU-assisted scheduling minimises max(n_load \
                    C_load, n_CPU C_CPU) for uniform costs",
                measured: "(4) of Alg. 2 on the missed experts of the router's routing vs \
                    the closed-form optimum",
                bound: "(4) = optimum",
                family: TINY,
                quote: "This decision-making process is guided by Algorithm 2, which uses a \
                    two-pointer strategy to balance the cumulative costs associated with loading \
                    and CPU computation times. [...] The optimization goal is expressed by the \
                    following equation, which seeks to minimize the maximum of T_{load} and \
                    T_{CPU} :",
                kind: ClaimKind::Inferred,
                ..ClaimInfo::DEFAULTS
            },
            family: family_tiny,
            paper: PaperScale::Family(PAPER_SCALE, paper_layer),
            check: check_alg2_uniform,
        },
    ]
}

/// The `tiny` family: the tiny preset at `seed`.
pub fn family_tiny(seed: u64) -> Instance {
    generate(Preset::Tiny, seed)
}

fn in_gpu(instance: &Instance) -> Vec<bool> {
    let mut g = vec![false; instance.experts];
    for &e in &instance.gpu_cache {
        g[e as usize] = true;
    }
    g
}

/// The router's routing for an instance.
pub fn route(instance: &Instance, low_score: LowScore) -> Vec<Vec<u32>> {
    let g = in_gpu(instance);
    let config = RouterConfig {
        low_score,
        ..RouterConfig::new(instance.alpha)
    };
    route_batch(
        &instance.scores,
        instance.top_k,
        &|e| g[e as usize],
        &config,
    )
}

fn check_router(instance: &Instance, _: &CheckOptions, low_score: LowScore) -> Check {
    let sets = LayerSets::new(instance);
    // The exhaustive search where it is within its limit, else the closed form (module doc).
    let (best, status) = match routing_exhaustive(&sets) {
        Ok(r) => (r, "exhaustive"),
        Err(_) => (routing_closed_form(&sets), "closed_form"),
    };
    let routing = route(instance, low_score);
    let (alg, opt) = match (
        evaluate_routing(instance, &sets, &routing),
        evaluate_routing(instance, &sets, &best),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) => {
            return Check::property(
                Outcome::Fail,
                None,
                format!("the evaluator refused the router's routing: {e}"),
                Some(json!({ "routing": routing })),
                Some(-1.0),
            );
        }
        (_, Err(e)) => {
            return Check::inconclusive(format!("the evaluator refused the optimum: {e}"))
        }
    };
    let formula: usize = objective1(&sets).iter().sum();
    if status == "closed_form" && opt.total_hits != formula {
        return Check::inconclusive(format!(
            "the closed form's routing evaluates to {} hits, formula (1) to {formula}",
            opt.total_hits
        ));
    }
    let margin = alg.total_hits as f64 - opt.total_hits as f64;
    let outcome = Outcome::fail_if(margin < 0.0);
    let note = format!(
        "router hits {:?} (total {}), optimum {:?} (total {}), formula (1) {formula}, \
         {} substituted",
        alg.hits, alg.total_hits, opt.hits, opt.total_hits, alg.substituted
    );
    let (value, optimum) = (alg.total_hits as f64, opt.total_hits as f64);
    Check {
        ratio: (opt.total_hits > 0).then(|| value / optimum),
        bound: Some(1.0),
        witness: (outcome == Outcome::Fail)
            .then(|| json!({ "sets": sets, "routing": routing, "optimal_routing": best })),
        margin: Some(margin),
        ..Check::against_optimum(outcome, value, optimum, status, note)
    }
}

fn check_alg2_uniform(instance: &Instance, _: &CheckOptions) -> Check {
    let Costs::Uniform { load_s, cpu_s, .. } = instance.costs else {
        return Check::not_applicable("per-expert costs: the claim is about uniform costs");
    };
    let sets = LayerSets::new(instance);
    let routing = route(instance, LowScore::Missing);
    let value = match evaluate_routing(instance, &sets, &routing) {
        Ok(v) => v,
        Err(e) => return Check::inconclusive(format!("the evaluator refused the routing: {e}")),
    };
    let n = value.misses.len();
    if n == 0 {
        // Nothing to split: every split is the optimum, the claim tests nothing here.
        return Check::new(Outcome::Vacuous, "no missed expert: nothing to split");
    }
    let split = alg2(&value.misses, &instance.costs, Alg2Rule::Paper);
    let (m, opt) = split_optimum_uniform(n, load_s, cpu_s);
    let a = split.objective_s;
    let t = 1e-12 + 1e-9 * a.max(opt);
    let r = opt - a;
    let outcome = decide(r, t, false);
    let fail = outcome == Outcome::Fail;
    let note = format!(
        "n = {n} missed, C_load {load_s:.3e} s, C_CPU {cpu_s:.3e} s: Alg. 2 loads {} \
         ({a:.4e} s), the optimum loads {m} ({opt:.4e} s)",
        split.load.len()
    );
    Check {
        ratio: Some(a / opt),
        bound: Some(1.0),
        witness: fail.then(|| {
            json!({ "misses": value.misses, "load_s": load_s, "cpu_s": cpu_s,
                    "alg2": split, "optimal_loads": m })
        }),
        margin: Some(if fail { (r + t) / opt } else { 0.0 }),
        ..Check::against_optimum(outcome, a, opt, "closed_form", note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Certificate;

    #[test]
    fn registry_ids_and_paper() {
        let r = table();
        assert_eq!(r.len(), 3);
        for c in &r {
            assert!(c.info.id.starts_with("smoe/"));
            assert_eq!(c.info.paper, PAPER);
        }
    }

    #[test]
    fn the_text_router_passes_and_margins_match_outcomes() {
        let o = CheckOptions::default();
        for seed in 0..40 {
            let i = family_tiny(seed);
            for c in table() {
                let check = (c.check)(&i, &o);
                assert_eq!(
                    check.inconsistencies(),
                    Vec::<String>::new(),
                    "{}",
                    c.info.id
                );
                if c.info.id == "smoe/eq1-router-optimal" {
                    assert_eq!(check.outcome, Outcome::Pass, "seed {seed}: {}", check.note);
                }
            }
        }
    }

    /// The closed form is an optimum: on the tiny layers its routing evaluates to the
    /// exhaustive optimum's hits and to formula (1).
    #[test]
    fn closed_form_matches_the_exhaustive_optimum() {
        for seed in 0..60 {
            let i = family_tiny(seed);
            let sets = LayerSets::new(&i);
            let closed = evaluate_routing(&i, &sets, &routing_closed_form(&sets)).unwrap();
            let exhaustive =
                evaluate_routing(&i, &sets, &routing_exhaustive(&sets).unwrap()).unwrap();
            assert_eq!(closed.total_hits, exhaustive.total_hits, "seed {seed}");
            assert_eq!(closed.total_hits, objective1(&sets).iter().sum::<usize>());
        }
    }

    /// The papers' family: the same layer per seed, Table III's sizes, batches of 1 and 3,
    /// tier `regime` for every claim; the checks are decided by proved optima (closed forms
    /// where the exhaustive search refuses) and the router of the text passes.
    #[test]
    fn paper_family_sizes_tier_and_certificates() {
        use crate::tier::{classify, Tier};
        let premises = super::super::premises::premises();
        let o = CheckOptions::default();
        for seed in 0..24 {
            let i = paper_layer(seed);
            assert_eq!(i, paper_layer(seed));
            assert!(formulations::smoe::validate::validate(&i).is_ok());
            let k = if seed % 3 == 2 { 8 } else { 6 };
            let tokens = if seed % 6 < 3 { 1 } else { 3 };
            assert_eq!((i.experts, i.top_k, i.scores.len()), (64, k, tokens));
            for c in table() {
                let tier = classify(&premises, c.info.id, &i);
                assert_eq!(tier.tier, Tier::Regime, "{}: {:?}", c.info.id, tier.broken);
                let check = (c.check)(&i, &o);
                if check.outcome != Outcome::Inconclusive {
                    assert_eq!(
                        check.certificate,
                        Some(Certificate::Optimum),
                        "{}",
                        check.note
                    );
                }
                if c.info.id == "smoe/eq1-router-optimal" {
                    assert_eq!(check.outcome, Outcome::Pass, "seed {seed}: {}", check.note);
                }
            }
        }
        // A flat layer beyond the exhaustive search: scores 1, 0.99, ..., 0.37 (normalised
        // away: the thresholds are relative), alpha 0.6: all 8 active experts are low-score
        // (T = 1.6 S_9 > 1), all 56 inactive ones candidates (R = 0.4 S_9 < 0.37): C(64, 8) =
        // 4.4e9 subsets, so the closed form decides, and the text's router reaches it.
        let mut flat = paper_layer(2);
        flat.alpha = 0.6;
        flat.scores = vec![(0..64).map(|e| 1.0 - 0.01 * f64::from(e)).collect()];
        let check = check_router(&flat, &o, LowScore::Missing);
        assert_eq!(
            check.solver_status.as_deref(),
            Some("closed_form"),
            "{}",
            check.note
        );
        assert_eq!(check.outcome, Outcome::Pass, "{}", check.note);
    }
}
