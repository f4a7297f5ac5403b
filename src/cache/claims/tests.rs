use super::checks::*;
use super::instances::*;
use super::*;
use crate::claims::{Certificate, Outcome, ReferenceKind};
use formulations::cache::offline::validate;
use formulations::cache::offline::Freedom;
use formulations::cache::Trace;
use formulations::ProblemKind;

#[test]
fn families_are_valid_and_deterministic() {
    for seed in 0..20 {
        let i = family_small(seed);
        validate(&i).unwrap();
        assert_eq!(i, family_small(seed));
    }
    for seed in 0..7 {
        validate(&family_half(seed)).unwrap();
    }
    for seed in 0..4 {
        validate(&family_prior(seed)).unwrap();
        validate(&family_gap(seed)).unwrap();
        assert_eq!(family_gap(seed), family_gap(seed));
    }
}

#[test]
fn paper_families_have_the_papers_sizes_and_lie_in_the_regime() {
    use crate::cache::premises::premises;
    use crate::tier::{classify, Tier};
    let tier = |claim: &str, i: &CacheInstance| classify(&premises(), claim, i).tier;
    for seed in 0..8u64 {
        let model = seed % 4;
        for (claim, make, tokens) in [
            (
                "cache/sec48-flexible-below-belady",
                paper_flexible as fn(u64) -> CacheInstance,
                1024,
            ),
            ("cache/router-gap-cache-prior", paper_flexible, 1024),
            ("cache/sec48-belady-halves-lru", paper_half, 4096),
            ("cache/sec48-cache-prior-below-belady", paper_prior, 1024),
        ] {
            let i = make(seed);
            validate(&i).unwrap();
            assert_eq!(i, make(seed), "{claim} {seed}: deterministic");
            assert_eq!(i.steps(), tokens, "{claim} {seed}");
            let (e, k) = (i.experts(), i.top_k());
            assert_eq!((e, k), [(8, 2), (16, 2), (64, 6), (60, 4)][model as usize]);
            let c = if claim == "cache/sec48-cache-prior-below-belady" && (seed / 4) % 2 == 1 {
                (e / 4).max(k)
            } else {
                e / 2
            };
            assert_eq!(i.capacity, c, "{claim} {seed}");
            // Phi-3.5-MoE is the paper's named exception to the Cache-Prior claim.
            let expected = if claim == "cache/sec48-cache-prior-below-belady" && model == 1 {
                Tier::Extension
            } else {
                Tier::Regime
            };
            assert_eq!(
                tier(claim, &i),
                expected,
                "{claim} {seed}: {:?}",
                classify(&premises(), claim, &i).broken
            );
        }
    }
}

#[test]
fn paper_fixed_takes_table1_presets_and_whole_real_logs() {
    use crate::cache::premises::premises;
    use crate::tier::{classify, Tier};
    let claim = "cache/sec48-belady-optimal";
    // Seed 0: Mixtral at 1,024 tokens, C = E/2 = 4; seed 9 = 7 + 2: DeepSeek, odd j = 1,
    // C = E/4 = 16.
    let i = paper_fixed(0);
    assert_eq!((i.steps(), i.experts(), i.capacity), (1024, 8, 4));
    let i = paper_fixed(9);
    assert_eq!(
        (i.steps(), i.experts(), i.top_k(), i.capacity),
        (1024, 64, 6, 16)
    );
    assert_eq!(classify(&premises(), claim, &i).tier, Tier::Regime);
    // Seeds 4, 5, 6: the OLMoE, Kimi and Switch logs at layer 0; seed 11: OLMoE layer 1.
    let olmoe = paper_fixed(11);
    if !olmoe.name.contains("real") {
        eprintln!(
            "skipped: no shared/data/token-traces (stand-in {})",
            olmoe.name
        );
        assert!(olmoe.name.ends_with("standin-layer1"), "{}", olmoe.name);
        return;
    }
    // ../shared/data/README.md: OLMoE 299 decode tokens, 16 layers, top-8 of 64; Kimi 300,
    // 26 layers, top-8 of 256; Switch 215 tokens of 10 prompts, 6 layers, top-1 of 8.
    // Each instance is its layer alone (one-layer trace), named after the log's layer.
    for (seed, shape, layer) in [
        (4, (299, 64, 8, 32), "olmoe_1b7b_0924_warp_decode-layer0"),
        (11, (299, 64, 8, 32), "olmoe_1b7b_0924_warp_decode-layer1"),
        (
            5,
            (300, 256, 8, 128),
            "kimi_linear_48b_a3b_warp_decode-layer0",
        ),
        (6, (215, 8, 1, 4), "switch_base8_encoder_top1-layer0"),
    ] {
        let i = paper_fixed(seed);
        validate(&i).unwrap();
        let got = (i.steps(), i.experts(), i.top_k(), i.capacity);
        assert_eq!(got, shape, "{}", i.name);
        assert!(i.name.ends_with(layer) && i.trace.layers == 1, "{}", i.name);
        // Not Table 1 shapes, nor a 1,024-token context: the model tier, not the regime.
        assert_eq!(
            classify(&premises(), claim, &i).tier,
            Tier::Model,
            "{}",
            i.name
        );
    }
}

#[test]
fn bounds_decide_when_the_milp_stops_by_hand() {
    let i = top1(&[0, 1, 2, 0, 1, 2]);
    let stopped = |lower, upper| Reference {
        lower,
        upper,
        status: "time_limit".into(),
        proved: false,
    };
    let proved = Reference {
        lower: 10,
        upper: Some(10),
        status: "optimal".into(),
        proved: true,
    };
    // Belady optimal. Belady 10 loads: a bound of 10 proves OPT >= 10 = Belady, a pass by
    // the bound; an incumbent of 9 is a schedule below Belady, a fail by the incumbent
    // (margin -1); bounds [8, 10] decide nothing; a proved 10 is a pass by the optimum.
    let c = judge_belady_optimal(&i, 10, &stopped(10, Some(10)));
    assert_eq!(
        (c.outcome, c.certificate, c.reference, c.margin),
        (
            Outcome::Pass,
            Some(Certificate::Bound),
            Some(10.0),
            Some(0.0)
        )
    );
    let c = judge_belady_optimal(&i, 10, &stopped(8, Some(9)));
    assert_eq!(
        (c.outcome, c.certificate, c.reference, c.margin),
        (
            Outcome::Fail,
            Some(Certificate::Incumbent),
            Some(9.0),
            Some(-1.0)
        )
    );
    assert!(c.witness.is_some());
    // OPT in [8, 9]: Belady / OPT in [10/9, 10/8], not the 10/9 of one end alone.
    assert_eq!(c.ratio_interval, Some([10.0 / 9.0, 10.0 / 8.0]));
    let c = judge_belady_optimal(&i, 10, &stopped(8, Some(10)));
    assert_eq!((c.outcome, c.certificate), (Outcome::Inconclusive, None));
    let c = judge_belady_optimal(&i, 10, &proved);
    assert_eq!(
        (c.outcome, c.certificate),
        (Outcome::Pass, Some(Certificate::Optimum))
    );
    // Flexible below Belady (10): an incumbent of 9 bounds OPT_flex <= 9 <= 10, a pass by
    // that bound, margin 1; a bound of 11 > 10 a fail, margin -1; [5, 12] undecided.
    let c = judge_flexible_below_belady(&i, 10, &stopped(5, Some(9)));
    assert_eq!(
        (c.outcome, c.certificate, c.value, c.margin),
        (
            Outcome::Pass,
            Some(Certificate::Bound),
            Some(9.0),
            Some(1.0)
        )
    );
    // OPT_flex in [5, 9]: OPT_flex / Belady in [0.5, 0.9], the gap is an interval.
    assert_eq!(c.ratio_interval, Some([0.5, 0.9]));
    assert!(c.note.contains("10.0% to 50.0% fewer"), "{}", c.note);
    let c = judge_flexible_below_belady(&i, 10, &stopped(11, None));
    assert_eq!(
        (c.outcome, c.certificate, c.margin),
        (Outcome::Fail, Some(Certificate::Bound), Some(-1.0))
    );
    let c = judge_flexible_below_belady(&i, 10, &stopped(5, Some(12)));
    assert_eq!(c.outcome, Outcome::Inconclusive);
    // Router gap, 10 loads: an incumbent of 10 bounds OPT_flex <= 10, a pass (ratio 1,
    // margin 0); a bound of 11 a fail (margin -1); [7, 12] undecided.
    let spec = gap_router(0, 2);
    let c = judge_router_gap(spec, 10, &stopped(7, Some(10)), "n".into());
    assert_eq!(
        (c.outcome, c.certificate, c.ratio, c.margin, c.lower),
        (
            Outcome::Pass,
            Some(Certificate::Bound),
            Some(1.0),
            Some(0.0),
            Some(7.0)
        )
    );
    // OPT_flex in [7, 10]: the gap loads / OPT_flex in [1, 10/7].
    assert_eq!(c.ratio_interval, Some([1.0, 10.0 / 7.0]));
    let c = judge_router_gap(spec, 10, &stopped(11, Some(12)), "n".into());
    assert_eq!((c.outcome, c.margin), (Outcome::Fail, Some(-1.0)));
    let c = judge_router_gap(spec, 10, &stopped(7, Some(12)), "n".into());
    assert_eq!(c.outcome, Outcome::Inconclusive);
    for c in [
        judge_belady_optimal(&i, 10, &stopped(10, Some(10))),
        judge_belady_optimal(&i, 10, &stopped(8, Some(9))),
        judge_flexible_below_belady(&i, 10, &stopped(5, Some(9))),
        judge_router_gap(spec, 10, &stopped(7, Some(10)), "n".into()),
        judge_router_gap(spec, 10, &stopped(11, Some(12)), "n".into()),
    ] {
        assert_eq!(c.inconsistencies(), Vec::<String>::new(), "{c:?}");
    }
}

#[test]
fn the_forced_stream_bounds_the_flexible_optimum_by_hand() {
    // rotating_second(4, 2, 6, 1/64) with J = 1, M = 3: every step forces only expert 0,
    // so the forced stream is 0 six times: 1 load, below OPT_flex = 2 (the first step
    // loads two; belady_is_optimal_and_flexible_is_below_belady_by_hand).
    let i = CacheInstance {
        freedom: Freedom {
            top_j: 1,
            max_rank: Some(3),
            min_mass: None,
        },
        ..rotating_second(4, 2, 6, 1.0 / 64.0)
    };
    assert_eq!(forced_lower_bound(&i), 1);
    // Fixed routing (J = K = 1) forces the whole request: the bound is Belady's 4 on
    // 0 1 2 0 1 2 at C = 2, OPT itself.
    assert_eq!(forced_lower_bound(&top1(&[0, 1, 2, 0, 1, 2])), 4);
}

#[test]
fn paper_scale_checks_are_certified() {
    let options = CheckOptions::default();
    // Mixtral, 1,024 tokens, C = 4: the fixed MILP proves its optimum (well under a
    // second), which Belady reaches: a pass by the optimum.
    let c = check_belady_optimal(&paper_fixed(0), &options).unwrap();
    assert_eq!(
        (c.outcome, c.certificate),
        (Outcome::Pass, Some(Certificate::Optimum)),
        "{}",
        c.note
    );
    // DeepSeek, 1,024 tokens, C = 32, J = 2, M = 8, the flexible MILP stopped after 2 s
    // (it needs more than a minute): its incumbent, Belady's schedule or better, bounds
    // OPT_flex <= Belady: a pass by the bound.
    let short = CheckOptions {
        solve: formulations::milp::SolveOptions {
            time_limit_s: Some(2.0),
            ..Default::default()
        },
    };
    let c = check_flexible_below_belady(&paper_flexible(2), &short).unwrap();
    assert_eq!(
        (c.outcome, c.certificate, c.solver_status.as_deref()),
        (Outcome::Pass, Some(Certificate::Bound), Some("time_limit")),
        "{}",
        c.note
    );
    assert!(c.margin.unwrap() >= 0.0);
}

#[test]
fn router_gaps_are_never_negative() {
    // Loads >= the flexible optimum of the used freedom is a theorem (the router's own
    // schedule is feasible there): every check passes with a non-negative margin.
    let options = CheckOptions::default();
    for claim in table().iter().filter(|c| c.info.id.contains("router-gap")) {
        for seed in 0..3 {
            let c = (claim.check)(&family_gap(seed), &options);
            assert_eq!(c.outcome, Outcome::Pass, "{}: {}", claim.info.id, c.note);
            assert!(c.margin.unwrap() >= 0.0 && c.ratio.unwrap() >= 1.0);
        }
    }
}

/// A one-layer top-1 instance over 4 experts at C = 2 requesting `requests` in order.
fn top1(requests: &[u32]) -> CacheInstance {
    use formulations::cache::model::{Phase, Routing, Token};
    let trace = Trace {
        ranked: false,
        ..Trace::new(
            "t",
            "m",
            4,
            1,
            1,
            requests
                .iter()
                .enumerate()
                .map(|(i, &e)| Token {
                    seq: 0,
                    token: i as u32,
                    phase: Phase::Decode,
                    layers: vec![Routing {
                        experts: vec![e],
                        weights: None,
                        logits: None,
                    }],
                })
                .collect(),
        )
    };
    CacheInstance {
        problem: ProblemKind::CacheOffline,
        name: "i".into(),
        capacity: 2,
        layer: 0,
        freedom: Freedom::fixed(1),
        trace,
    }
}

#[test]
fn belady_below_lru_by_hand() {
    let options = CheckOptions::default();
    // 0, 1, 2 cycled 27 times (81 requests >= 20 E): LRU at C = 2 misses every request;
    // Belady misses the first two, then every other one of the remaining 79 (it evicts the
    // expert needed after the next): 2 + 40 = 42 < 81, a pass with margin (81 - 42 -
    // 1/2) / 81.
    let cycle: Vec<u32> = (0..81).map(|i| i % 3).collect();
    let c = check_belady_below_lru(&top1(&cycle), &options).unwrap();
    assert_eq!(
        (c.outcome, c.value, c.reference),
        (Outcome::Pass, Some(42.0), Some(81.0))
    );
    assert!((c.margin.unwrap() - 38.5 / 81.0).abs() < 1e-12);
    // 0, 1 alternated (80 requests): both load each expert once, 2 = 2, a fail.
    let pair: Vec<u32> = (0..80).map(|i| i % 2).collect();
    let c = check_belady_below_lru(&top1(&pair), &options).unwrap();
    assert_eq!(
        (c.outcome, c.value, c.reference),
        (Outcome::Fail, Some(2.0), Some(2.0))
    );
    assert!((c.margin.unwrap() + 0.25).abs() < 1e-12);
    // Fewer than 20 E requests: no miss rate, inconclusive.
    assert!(check_belady_below_lru(&top1(&cycle[..60]), &options).is_err());
}

#[test]
fn small_family_claims_hold_on_a_few_seeds() {
    let options = CheckOptions::default();
    for claim in table().iter().take(2) {
        for seed in 0..4 {
            let c = (claim.check)(&(claim.family)(seed), &options);
            assert_eq!(c.outcome, Outcome::Pass, "{}: {}", claim.info.id, c.note);
            assert!(c.margin.unwrap() >= 0.0);
        }
    }
}

/// `top1(requests)` with logits (a ranked trace): 1 for the requested expert, 0 for the
/// other three, so the ranking is the request, then the others by id.
fn top1_logits(requests: &[u32]) -> CacheInstance {
    let mut i = top1(requests);
    i.trace.ranked = true;
    for token in &mut i.trace.tokens {
        let r = &mut token.layers[0];
        r.logits = Some((0..4).map(|e| f32::from(e == r.experts[0])).collect());
    }
    i
}

/// A one-layer ranked instance, K = 2, over `experts` at `capacity`, fixed routing: token t
/// (0-based) routes to expert 0 (logit 1) and to s_t = 1 + t mod 3 (logit `d`, 0 < d < 1),
/// every other expert at logit 0. So the logit range is 1 at every token, and the ranking is
/// 0, s_t, then the other experts by id.
fn rotating_second(experts: usize, capacity: usize, tokens: usize, d: f32) -> CacheInstance {
    let mut i = top1(&vec![0; tokens]);
    i.trace.experts = experts;
    i.trace.top_k = 2;
    i.trace.ranked = true;
    i.capacity = capacity;
    i.freedom = Freedom::fixed(2);
    for (t, token) in i.trace.tokens.iter_mut().enumerate() {
        let s = 1 + (t % 3) as u32;
        let mut z = vec![0.0; experts];
        z[0] = 1.0;
        z[s as usize] = d;
        token.layers[0].experts = vec![0, s];
        token.layers[0].logits = Some(z);
    }
    validate(&i).unwrap();
    i
}

fn close(a: Option<f64>, b: f64, tol: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= tol)
}

#[test]
fn belady_halves_lru_by_hand() {
    let options = CheckOptions::default();
    // Pass: 0, 1, 2 cycled 27 times (81 requests = 20 E + 1), E = 4, C = 2 = E/2. LRU
    // misses all 81 (the requested expert is always the one evicted two steps before).
    // Belady: after step i the cache holds request i and one other; steps i + 1, i + 2
    // request the two other experts, so each window {4, 5}, {6, 7}, ..., {80, 81} has a
    // miss, and Belady (evicting the expert needed after the next) misses exactly there:
    // 3 compulsory + 39 = 42. Ratio 42/81 = 0.5 + 1/54, margin 0.1 - 1/54 ~ 0.0815.
    let cycle: Vec<u32> = (0..81).map(|i| i % 3).collect();
    let c = check_halves_lru(&top1(&cycle), &options).unwrap();
    assert_eq!(
        (c.outcome, c.value, c.reference, c.reference_kind, c.bound),
        (
            Outcome::Pass,
            Some(42.0),
            Some(81.0),
            ReferenceKind::Baseline,
            Some(0.5)
        )
    );
    assert!(close(c.ratio, 42.0 / 81.0, 1e-12), "{c:?}");
    assert!(close(c.margin, 0.1 - 1.0 / 54.0, 1e-12), "{c:?}");
    // The check moves C to E/2 = 2 whatever the instance says (at C = 3 both would load
    // only the 3 compulsory): the same numbers.
    let at3 = CacheInstance {
        capacity: 3,
        ..top1(&cycle)
    };
    let c3 = check_halves_lru(&at3, &options).unwrap();
    assert_eq!((c3.value, c3.reference), (Some(42.0), Some(81.0)));
    assert_eq!(c3.margin, c.margin);
    // Fail: 0, 1 alternated (80 requests = 20 E): both fit, each policy loads 2. Ratio 1,
    // margin 0.1 - |1 - 0.5| = -0.4.
    let pair: Vec<u32> = (0..80).map(|i| i % 2).collect();
    let c = check_halves_lru(&top1(&pair), &options).unwrap();
    assert_eq!(
        (c.outcome, c.value, c.reference, c.ratio, c.bound),
        (Outcome::Fail, Some(2.0), Some(2.0), Some(1.0), Some(0.5))
    );
    assert!(close(c.margin, -0.4, 1e-12), "{c:?}");
    // 79 requests < 20 E: inconclusive.
    assert!(check_halves_lru(&top1(&pair[..79]), &options).is_err());
}

#[test]
fn belady_is_optimal_and_flexible_is_below_belady_by_hand() {
    let options = CheckOptions::default();
    // 0, 1, 2, 0, 1, 2 at C = 2 (K = 1, fixed routing). Belady: loads 0, 1; at step 3
    // evicts 1 (next at 5, 0 next at 4) for 2; step 4 hits 0; step 5 evicts 0 (never again,
    // 2 next at 6) for 1; step 6 hits: 4 loads. OPT >= 4: three distinct experts (3
    // compulsory), and after step 3 the cache holds 2 and at most one of 0, 1, both
    // requested at steps 4, 5. So Belady = OPT = 4 (exhaustive): margin 0, ratio 1.
    let i = top1(&[0, 1, 2, 0, 1, 2]);
    let c = check_belady_optimal(&i, &options).unwrap();
    assert_eq!(
        (c.outcome, c.value, c.reference, c.reference_kind),
        (Outcome::Pass, Some(4.0), Some(4.0), ReferenceKind::Optimum)
    );
    assert_eq!(
        (c.ratio, c.bound, c.margin, c.solver_status.as_deref()),
        (Some(1.0), Some(1.0), Some(0.0), Some("exhaustive"))
    );
    // Flexible, same instance: its freedom is fixed (J = K = 1), so OPT_flex = OPT = 4 =
    // Belady: margin 0, ratio 1.
    let c = check_flexible_below_belady(&i, &options).unwrap();
    assert_eq!(
        (c.outcome, c.value, c.reference, c.ratio, c.margin),
        (Outcome::Pass, Some(4.0), Some(4.0), Some(1.0), Some(0.0))
    );
    // With freedom (J = 1, M = 3) on rotating_second(4, 2, 6, 1/64): the fixed routing
    // {0, s_t} changes expert at every step and C = K = 2, so Belady loads 2 + 5 = 7. The
    // flexible MILP may route {0, 1} at every step (1 is at rank 2 or 3: rankings 0 1 2 3,
    // 0 2 1 3, 0 3 1 2): 2 loads, and no schedule loads fewer than the 2 of the first
    // step into an empty cache. OPT_flex = 2: margin 7 - 2 = 5, ratio 2/7.
    let flexible = CacheInstance {
        freedom: Freedom {
            top_j: 1,
            max_rank: Some(3),
            min_mass: None,
        },
        ..rotating_second(4, 2, 6, 1.0 / 64.0)
    };
    let c = check_flexible_below_belady(&flexible, &options).unwrap();
    assert_eq!(
        (c.outcome, c.value, c.reference, c.bound, c.margin),
        (Outcome::Pass, Some(2.0), Some(7.0), Some(1.0), Some(5.0))
    );
    assert!(close(c.ratio, 2.0 / 7.0, 1e-12), "{c:?}");
}

#[test]
fn router_gaps_by_hand() {
    let options = CheckOptions::default();
    for which in 0..3 {
        let spec = gap_router(which, 2);
        // Forced: K = J = 1 on 0, 1, 2 cycled 3 times at C = 2. Max-Rank and Cumsum keep
        // r[:J], the whole top 1; Cache-Prior boosts the top-1 (top-J) and no other expert
        // can pass it. So each router is the original routing with LRU: 9 loads (a cycle of
        // 3 in 2 slots). Used freedom J = 1, M = 1 = K: fixed routing, whose optimum is
        // Belady's 6 (3 compulsory + one miss in each window {4, 5}, {6, 7}, {8, 9}).
        // Loads 9, OPT_flex 6: margin 3, ratio 1.5.
        let cycle: Vec<u32> = (0..9).map(|i| i % 3).collect();
        let c = check_router_gap(&top1_logits(&cycle), &options, which).unwrap();
        assert_eq!(
            (c.outcome, c.value, c.reference, c.reference_kind),
            (Outcome::Pass, Some(9.0), Some(6.0), ReferenceKind::Optimum),
            "{spec}: {}",
            c.note
        );
        assert_eq!(
            (c.ratio, c.bound, c.margin),
            (Some(1.5), Some(1.0), Some(3.0)),
            "{spec}"
        );
        // Rerouted: rotating_second(4, 2, 6, 1/64), C = K = 2. Step 1 (empty cache) takes
        // {0, 1}; from then on the cache is {0, 1}. Max-Rank (M = 4) takes 0 (top-J), then
        // the cached 1 within rank 4. Cumsum: p = softmax(1, 1/64, 0, 0) sorted is 0.474,
        // 0.177, 0.174, 0.174, so 0.9 needs M = 4: as Max-Rank. Cache-Prior: bias 0.5 x
        // delta (range 1) = 0.5 > 1/64, so the cached 1 (0 + 0.5) beats s_t (1/64). Each
        // routes {0, 1} throughout: 2 loads. Used freedom: J = 1 (prefix 0 when s_t != 1),
        // M = 3 (1 at rank 3 behind 0, s_t). OPT_flex there >= 2 (the first step) and
        // <= 2 (the router's own schedule): margin 0, ratio 1.
        let c = check_router_gap(&rotating_second(4, 2, 6, 1.0 / 64.0), &options, which).unwrap();
        assert_eq!(
            (c.outcome, c.value, c.reference, c.ratio, c.margin),
            (Outcome::Pass, Some(2.0), Some(2.0), Some(1.0), Some(0.0)),
            "{spec}: {}",
            c.note
        );
        assert!(c.note.contains("J = 1, M = 3"), "{spec}: {}", c.note);
    }
}

#[test]
fn cache_prior_claim_passes_by_hand() {
    let options = CheckOptions::default();
    // rotating_second(6, 3, 60, d = 1/64): E = 6, K = 2, C = 3 = E/2, 120 requests = 20 E.
    // Belady on {0, s_t} (0 always requested, never evicted; s in two slots): steps 0, 1
    // load 0, 1, 2; then it misses at every even step 2..58 (evicting the one of the two
    // cycle experts needed later) and hits at odd steps: 3 + 29 = 32 loads.
    // Cache-Prior (J = 1, delta = running mean of the range 1 = 1, bias = lambda): while
    // lambda <= d, s_t (logit d, or d + bias when cached) beats every other cached expert
    // (0 + bias), ties to rank: the original routing, with LRU 61 loads (it misses s_t at
    // every step). The first grid point above d = 0.0156 is lambda = 1/49 = 0.0204: the
    // cached 1 (0 + 0.0204) beats s_t (0.0156), so every step routes {0, 1}: 2 loads,
    // below Belady. Mass kept: 1 at the 20 steps with s_t = 1, else (p_0 + p_1) / (p_0 +
    // p_s) = (e + 1) / (e + e^d) at the 40 others. Loss = (2/3) (e^d - 1) / (e + e^d) =
    // 0.0028116, margin 0.1 - loss.
    let i = rotating_second(6, 3, 60, 1.0 / 64.0);
    let d = 1.0f64 / 64.0;
    let e = std::f64::consts::E;
    let loss = 2.0 / 3.0 * (d.exp() - 1.0) / (e + d.exp());
    assert!((loss - 0.0028116).abs() < 1e-7);
    let c = check_cache_prior_below_belady(&i, &options).unwrap();
    assert_eq!(
        (c.outcome, c.reference, c.reference_kind, c.bound),
        (
            Outcome::Pass,
            Some(32.0),
            ReferenceKind::Optimum,
            Some(SMALL_MASS_LOSS)
        ),
        "{}",
        c.note
    );
    assert!(close(c.value, loss, 1e-6), "{c:?}");
    assert!(close(c.margin, 0.1 - loss, 1e-6), "{c:?}");
    assert!(
        c.note.contains("lambda = 0.0204") && c.note.contains(": 2 loads"),
        "{}",
        c.note
    );
}

#[test]
fn cache_prior_claim_fails_by_hand() {
    let options = CheckOptions::default();
    // No lambda helps: 0, 1, 2 cycled 27 times with logits, K = 1, C = 2 (81 requests).
    // J = K = 1 boosts the top-1, which no other expert can pass: Cache-Prior is LRU at
    // every lambda, 81 loads (best at the first, lambda = 0); Belady 42
    // (belady_halves_lru_by_hand). Margin -(81 + 1 - 42) / 42 = -20/21.
    let cycle: Vec<u32> = (0..81).map(|i| i % 3).collect();
    let i = top1_logits(&cycle);
    let below = check_cache_prior_below_belady(&i, &options).unwrap();
    assert_eq!(
        (
            below.outcome,
            below.value,
            below.reference,
            below.reference_kind
        ),
        (Outcome::Fail, None, Some(42.0), ReferenceKind::Optimum),
        "{}",
        below.note
    );
    assert!(close(below.margin, -20.0 / 21.0, 1e-12), "{below:?}");
    assert!(below.note.contains("lambda = 0.0000"), "{}", below.note);
    assert!(below.note.contains("loads 81"), "{}", below.note);
    // Reached, but at too high a mass loss: rotating_second(6, 3, 60, d = 0.9). As in
    // cache_prior_claim_passes_by_hand (Belady 32, the original routing with 61 loads
    // while lambda <= d), but the first grid point above 0.9 is 45/49 = 0.9184 (44/49 =
    // 0.898): {0, 1} at every step, 2 loads. Loss (2/3) (e^d - 1) / (e + e^d) = 0.18793 >
    // 0.1: a fail with margin 0.1 - loss = -0.08793.
    let i = rotating_second(6, 3, 60, 0.9);
    let d = f64::from(0.9f32);
    let e = std::f64::consts::E;
    let loss = 2.0 / 3.0 * (d.exp() - 1.0) / (e + d.exp());
    assert!((loss - 0.18793).abs() < 1e-5);
    let c = check_cache_prior_below_belady(&i, &options).unwrap();
    assert_eq!(
        (c.outcome, c.reference, c.bound),
        (Outcome::Fail, Some(32.0), Some(SMALL_MASS_LOSS)),
        "{}",
        c.note
    );
    assert!(close(c.value, loss, 1e-6), "{c:?}");
    assert!(close(c.margin, 0.1 - loss, 1e-6), "{c:?}");
    assert!(
        c.note.contains("lambda = 0.9184") && c.note.contains(": 2 loads"),
        "{}",
        c.note
    );
}

#[test]
fn cache_prior_distance_is_measured_by_hand() {
    let options = CheckOptions::default();
    // The three streams above: (instance, Belady's loads, the fewest loads within a mass
    // loss of 0.1 and their lambda, requests).
    let cycle: Vec<u32> = (0..81).map(|i| i % 3).collect();
    for (i, belady, loads, lambda, requests) in [
        // Every lambda >= 1/49 routes {0, 1}: 2 loads at a loss of 0.0028 (above).
        (rotating_second(6, 3, 60, 1.0 / 64.0), 32, 2, "0.0204", 120),
        // Cache-Prior is LRU at every lambda, 81 loads, no mass lost: the first, 0.
        (top1_logits(&cycle), 42, 81, "0.0000", 81),
        // The 2-load lambdas lose 0.188 > 0.1: the original routing's 61 at lambda 0.
        (rotating_second(6, 3, 60, 0.9), 32, 61, "0.0000", 120),
    ] {
        let c = check_cache_prior_distance(&i, &options).unwrap();
        let ratio = loads as f64 / belady as f64;
        assert_eq!(
            (c.outcome, c.value, c.reference, c.bound, c.margin),
            (
                Outcome::Measured,
                Some(loads as f64),
                Some(belady as f64),
                None,
                None
            ),
            "{}",
            c.note
        );
        assert!(close(c.ratio, ratio, 1e-12), "{c:?}");
        let excess = (loads as f64 - belady as f64) / requests as f64;
        assert!(
            c.note.contains(&format!("lambda = {lambda}"))
                && c.note.contains(&format!("({excess:+.4} of the requests)")),
            "{}",
            c.note
        );
        assert_eq!(c.inconsistencies(), Vec::<String>::new());
    }
}
