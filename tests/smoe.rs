//! SMoE (paper 004): the pipeline's time model on hand-built traces, the claims on hand-built
//! layers, and the command functions on generated layers.

use formulations::cache::model::{ranking, softmax, Phase, Routing, Token, Trace};
use formulations::milp::SolveOptions;
use formulations::smoe::{Costs, Instance};
use moe_opt::cache::generate::{generate, GeneratorConfig, Locality};
use moe_opt::cache::policy::Lru;
use moe_opt::claims::{CheckOptions, Outcome};
use moe_opt::smoe::claims::table;
use moe_opt::smoe::commands::{self, RoutingMethod, SplitMethod};
use moe_opt::smoe::generate::{try_generate, Preset};
use moe_opt::smoe::pipeline::{simulate, PipelineConfig, PipelineCosts, Predictor, SplitChoice};
use moe_opt::smoe::router::RouterConfig;
use std::path::Path;

fn routing(z: &[f32], k: usize) -> Routing {
    let order = ranking(z);
    let p = softmax(z);
    let experts = order[..k].to_vec();
    Routing {
        weights: Some(experts.iter().map(|&e| p[e as usize] as f32).collect()),
        experts,
        logits: Some(z.to_vec()),
    }
}

/// E = 4, k = 1; each token lists its layers' logits.
fn trace(tokens: &[Vec<Vec<f32>>]) -> Trace {
    Trace::new(
        "hand",
        "hand",
        4,
        1,
        tokens[0].len(),
        tokens
            .iter()
            .enumerate()
            .map(|(t, layers)| Token {
                seq: 0,
                token: t as u32,
                phase: Phase::Decode,
                layers: layers.iter().map(|z| routing(z, 1)).collect(),
            })
            .collect(),
    )
}

fn config(alpha: f64, split: SplitChoice, prefetch: usize) -> PipelineConfig {
    PipelineConfig {
        router: RouterConfig::new(alpha),
        split,
        prefetch,
        predictor: Predictor::Oracle,
        costs: PipelineCosts {
            load_s: 3.0,
            cpu_s: 1.0,
            gpu_s: 0.1,
            common_s: 0.5,
        },
    }
}

#[test]
fn pipeline_times_by_hand() {
    // One layer, two tokens both choosing expert 0; C = 1. Token 0: gate at 0.5, Alg. 2 loads
    // the single miss (T_load 0 <= T_CPU 0): arrives 3.5, GPU ends 3.6. Token 1: hit, gate at
    // 4.1, GPU ends 4.2: 0.6. TPOT (3.6 + 0.6) / 2 = 2.1.
    let z = vec![2.0, 1.0, 0.0, -1.0];
    let t = trace(&[vec![z.clone()], vec![z.clone()]]);
    let s = simulate(&t, Lru::new(1, 4), &config(0.0, SplitChoice::Alg2, 0)).unwrap();
    assert!((s.tpot_s - 2.1).abs() < 1e-12, "{}", s.tpot_s);
    assert_eq!((s.gpu_hits, s.loads, s.cpu_experts), (1, 1, 0));
    // All on the CPU: nothing is cached, each token takes 0.5 + 1 = 1.5.
    let s = simulate(&t, Lru::new(1, 4), &config(0.0, SplitChoice::Cpu, 0)).unwrap();
    assert!((s.tpot_s - 1.5).abs() < 1e-12);
    assert_eq!((s.gpu_hits, s.cpu_experts), (0, 2));
}

#[test]
fn substitution_turns_a_miss_into_a_hit() {
    // Token 1's logits (0.2, 0.3, -5, -5): p1 / p0 = e^0.1 = 1.105 < 1 + alpha = 1.5, so
    // expert 1 is low-score and resident expert 0 (score S_2 >= R) replaces it: 0.6 instead
    // of a load (gate 4.1, arrival 7.1, GPU 7.2: 3.6). TPOT (3.6 + 0.6) / 2 = 2.1 vs 3.6.
    let t = trace(&[
        vec![vec![2.0, 1.0, 0.0, -1.0]],
        vec![vec![0.2, 0.3, -5.0, -5.0]],
    ]);
    let sub = simulate(&t, Lru::new(1, 4), &config(0.5, SplitChoice::Alg2, 0)).unwrap();
    assert!((sub.tpot_s - 2.1).abs() < 1e-12, "{}", sub.tpot_s);
    assert_eq!(sub.substituted, 1);
    assert!(sub.mass_kept < 1.0);
    let top = simulate(&t, Lru::new(1, 4), &config(0.0, SplitChoice::Alg2, 0)).unwrap();
    assert!((top.tpot_s - 3.6).abs() < 1e-12, "{}", top.tpot_s);
    assert_eq!(top.substituted, 0);
}

#[test]
fn prefetching_the_next_layer_overlaps_its_load() {
    // Two layers, one token, both choose expert 0; C = 2. Layer 0: load arrives 3.5, GPU 3.6;
    // the prefetch of layer 1's top-score expert (pool id 4) follows on PCIe: 6.5. Layer 1:
    // gate 4.1, a hit that waits for 6.5: ends 6.6. Without prefetching layer 1 loads from
    // max(3.5, 4.1) = 4.1: arrives 7.1, ends 7.2.
    let z = vec![2.0, 1.0, 0.0, -1.0];
    let t = trace(&[vec![z.clone(), z.clone()]]);
    let with = simulate(&t, Lru::new(2, 8), &config(0.0, SplitChoice::Alg2, 1)).unwrap();
    assert!((with.tpot_s - 6.6).abs() < 1e-12, "{}", with.tpot_s);
    assert_eq!((with.prefetched, with.prefetch_used), (1, 1));
    let without = simulate(&t, Lru::new(2, 8), &config(0.0, SplitChoice::Alg2, 0)).unwrap();
    assert!((without.tpot_s - 7.2).abs() < 1e-12, "{}", without.tpot_s);
    // The previous-token predictor has nothing to go on at a sequence's first token: the
    // same times as without prefetching.
    let previous = PipelineConfig {
        predictor: Predictor::PreviousToken,
        ..config(0.0, SplitChoice::Alg2, 1)
    };
    let first = simulate(&t, Lru::new(2, 8), &previous).unwrap();
    assert!((first.tpot_s - 7.2).abs() < 1e-12, "{}", first.tpot_s);
    assert_eq!(first.prefetched, 0);
}

#[test]
fn the_previous_token_predictor_prefetches_from_the_second_token_on() {
    // 40 tokens of 4 layers, at most 2 prefetches per layer boundary: the previous-token
    // predictor can prefetch only at tokens 1.., so at most 39 x 3 x 2 experts.
    let t = generate(
        &GeneratorConfig::synthetic(16, 2, 4, 40, Locality::drift(0.5)),
        3,
    )
    .unwrap();
    let run = |predictor| {
        let c = PipelineConfig {
            predictor,
            ..config(0.0, SplitChoice::Alg2, 2)
        };
        simulate(&t, Lru::new(16, 64), &c).unwrap()
    };
    let (oracle, previous) = (run(Predictor::Oracle), run(Predictor::PreviousToken));
    assert!(previous.prefetched > 0 && previous.prefetched <= 39 * 3 * 2);
    assert!(previous.prefetch_used <= previous.prefetched);
    assert_ne!(oracle, previous);
}

#[test]
fn pipeline_refuses_traces_without_logits_and_small_caches() {
    let mut t = generate(
        &GeneratorConfig::synthetic(8, 2, 2, 5, Locality::drift(0.8)),
        1,
    )
    .unwrap();
    assert!(
        simulate(&t, Lru::new(1, 16), &config(0.3, SplitChoice::Alg2, 0))
            .unwrap_err()
            .to_string()
            .contains("capacity")
    );
    for tok in &mut t.tokens {
        for r in &mut tok.layers {
            r.logits = None;
        }
    }
    let e = simulate(&t, Lru::new(4, 16), &config(0.3, SplitChoice::Alg2, 0)).unwrap_err();
    assert!(e.to_string().contains("no logits"), "{e}");
}

/// `instances/smoe-fig1.json` (formulations::smoe's test layer): scores 0: .30, 1: .20, 2: .105,
/// 3: .10, 4: .09, ..., k = 4, alpha = 0.5, G = {1, 5, 6}: the router runs {0, 1, 5, 6}; only 0
/// is missed.
fn one_miss_layer() -> Instance {
    formulations::smoe::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("instances/smoe-fig1.json"),
    )
    .unwrap()
}

#[test]
fn alg2_fails_the_uniform_claim_on_a_single_miss() {
    // One miss, C_load 3 > C_CPU 1: Alg. 2 loads it (3 s), the optimum computes it on the CPU
    // (1 s). Margin (1 - 3 + t) / 1 ~ -2.
    let claim = table()
        .into_iter()
        .find(|c| c.info.id == "smoe/alg2-uniform-optimal")
        .unwrap();
    let check = (claim.check)(&one_miss_layer(), &CheckOptions::default());
    assert_eq!(check.outcome, Outcome::Fail);
    assert_eq!((check.value, check.reference), (Some(3.0), Some(1.0)));
    assert_eq!((check.ratio, check.bound), (Some(3.0), Some(1.0)));
    assert!((check.margin.unwrap() + 2.0).abs() < 1e-8);
    // Exactly (1 - 3 + t) / 1 with t = 1e-12 + 3e-9.
    assert!((check.margin.unwrap() - (-2.0 + 1e-12 + 3e-9)).abs() < 1e-15);
}

#[test]
fn the_literal_alg1_claim_fails_where_a_resident_low_score_expert_is_dropped() {
    // alpha = 0.2 (T = .108, R = .072), G = {3, 5}: low-score {2, 3}, one substitute (5).
    // Printed Alg. 1 keeps 2 (best of B) and drops resident 3: hits 3 (0, 1 in C; 5) of 4.
    let mut i = one_miss_layer();
    i.alpha = 0.2;
    i.gpu_cache = vec![3, 5];
    let o = CheckOptions::default();
    for c in table() {
        let check = (c.check)(&i, &o);
        match c.info.id {
            "smoe/alg1-literal-optimal" => {
                assert_eq!(check.outcome, Outcome::Fail);
                assert_eq!((check.value, check.reference), (Some(3.0), Some(4.0)));
                assert_eq!((check.ratio, check.bound), (Some(0.75), Some(1.0)));
                assert_eq!(check.margin, Some(-1.0));
            }
            "smoe/eq1-router-optimal" => {
                // The text keeps resident 3 and replaces missing 2 by 5: O = {0, 1, 3, 5},
                // all in V = G ∪ C = {0, 1, 3, 5}: 4 hits. Optimum (1): |V ∩ E_a| = 3 (0, 1,
                // 3) + min(|E_l \ V| = 1, |E_s| = 1 (5)) = 4. Margin 4 - 4 = 0, ratio 1.
                assert_eq!(check.outcome, Outcome::Pass);
                assert_eq!((check.value, check.reference), (Some(4.0), Some(4.0)));
                assert_eq!((check.ratio, check.bound), (Some(1.0), Some(1.0)));
                assert_eq!(check.margin, Some(0.0));
            }
            _ => {}
        }
    }
}

fn claim(id: &str) -> moe_opt::smoe::claims::SmoeClaim {
    table().into_iter().find(|c| c.info.id == id).unwrap()
}

#[test]
fn both_alg1_readings_reach_the_optimum_when_every_low_score_expert_is_missing() {
    // one_miss_layer (alpha = 0.5): T = .135, R = .045, top-score {0, 1}, low-score {2, 3}
    // (both missing: V = G ∪ C = {0, 1, 5, 6}), candidates {4, 5, 6, 7}, available 5, 6.
    // Text and printed Alg. 1 alike replace 2 and 3 by 5 and 6: O = {0, 1, 5, 6}, 4 hits.
    // Optimum (1): |V ∩ E_a| = 2 + min(|E_l \ V| = 2, |E_s| = 2) = 4. Value 4 = reference,
    // ratio 1, margin 0. (Counting G only, as the audit did: 3 = 3; the check counts V.)
    let o = CheckOptions::default();
    for id in ["smoe/alg1-literal-optimal", "smoe/eq1-router-optimal"] {
        let check = (claim(id).check)(&one_miss_layer(), &o);
        assert_eq!(check.outcome, Outcome::Pass, "{id}: {}", check.note);
        assert_eq!(
            (check.value, check.reference),
            (Some(4.0), Some(4.0)),
            "{id}"
        );
        assert_eq!((check.ratio, check.bound), (Some(1.0), Some(1.0)), "{id}");
        assert_eq!(check.margin, Some(0.0), "{id}");
        assert_eq!(check.solver_status.as_deref(), Some("exhaustive"));
    }
}

#[test]
fn alg2_meets_the_uniform_optimum_when_loading_is_cheaper() {
    // one_miss_layer with C_load 1 < C_CPU 3: the one miss is expert 0 (in C, not in G).
    // Alg. 2: T_load 0 <= T_CPU 0, it loads it: (4) = 1. Closed form, n = 1: m* = 3/4, m = 1
    // gives max(1, 0) = 1 < m = 0's 3. Value 1 = reference, ratio 1, margin 0 (an equality).
    let mut i = one_miss_layer();
    i.costs = Costs::Uniform {
        load_s: 1.0,
        cpu_s: 3.0,
        gpu_s: 0.1,
    };
    let check = (claim("smoe/alg2-uniform-optimal").check)(&i, &CheckOptions::default());
    assert_eq!(check.outcome, Outcome::Pass, "{}", check.note);
    assert_eq!((check.value, check.reference), (Some(1.0), Some(1.0)));
    assert_eq!((check.ratio, check.bound), (Some(1.0), Some(1.0)));
    assert_eq!(check.margin, Some(0.0));
    assert_eq!(check.solver_status.as_deref(), Some("closed_form"));
}

#[test]
fn compare_puts_the_router_and_the_exact_methods_at_the_optimum() {
    for seed in 0..10 {
        let i = try_generate(Preset::Tiny, seed).unwrap();
        let r = commands::compare(&i, &SolveOptions::default()).unwrap();
        assert_eq!(r.methods.len(), 10);
        for m in &r.methods {
            let exact_routing = matches!(
                m.routing_method,
                RoutingMethod::Smoe | RoutingMethod::Exhaustive | RoutingMethod::Milp
            );
            if exact_routing {
                assert_eq!(
                    m.hits,
                    r.objective1_optimum.iter().sum::<usize>(),
                    "seed {seed}"
                );
            }
            if m.split_method == SplitMethod::Optimal {
                assert_eq!(m.split_ratio, Some(1.0));
            } else {
                assert!(m.split_ratio.unwrap() >= 1.0 - 1e-12);
            }
        }
        assert!(!r.text().is_empty());
    }
    let pe = try_generate(Preset::TinyPerExpert, 3).unwrap();
    let [milp, exh] = [SplitMethod::Milp, SplitMethod::Optimal].map(|split| {
        let r = commands::solve(&pe, RoutingMethod::Smoe, split, &SolveOptions::default());
        r.unwrap().methods[0].split.objective_s
    });
    assert!((milp - exh).abs() < 1e-9);
}

#[test]
fn larger_alpha_substitutes_more_and_the_selection_meets_the_budget() {
    let t = generate(
        &GeneratorConfig::synthetic(16, 4, 4, 60, Locality::drift(0.8)),
        7,
    )
    .unwrap();
    let c = config(0.0, SplitChoice::Alg2, 2);
    let at = |a: f64| {
        let mut c = c;
        c.router.alpha = a;
        commands::tpot(&t, 24, &c).unwrap().stats
    };
    let (lo, hi) = (at(0.0), at(0.6));
    // alpha = 0 is the original top-k; alpha = 0.6 substitutes and loses router mass.
    assert!(hi.substituted > 0 && lo.substituted == 0);
    assert!(hi.mass_kept < 1.0 && (lo.mass_kept - 1.0).abs() < 1e-12);
    let alphas: Vec<f64> = (0..=6).map(|i| i as f64 * 0.1).collect();
    let budget = 0.5 * (lo.tpot_s + hi.tpot_s);
    let r = commands::alpha(&t, 24, &c, &alphas, 2, budget).unwrap();
    assert_eq!(r.samples.len(), 7);
    if let Some(a) = r.selection.chosen_alpha {
        assert!(r.selection.predicted_tpot_s.unwrap() <= budget);
        assert!((0.0..=0.6).contains(&a));
    }
    assert!(!r.text().is_empty());
}
