//! The cache-aware routers of paper 002 through the "route, then access" replay: hand-derived
//! replays, agreement with the plain LRU replay of the original routing, the literal eq. (7)
//! ranking against the fast selection, and the sweep's fronts.

use formulations::cache::model::{Phase, Routing, Token, Trace};
use formulations::Error;
use moe_opt::cache::generate::{generate, GeneratorConfig, Locality};
use moe_opt::cache::pareto::{self, SweepOptions};
use moe_opt::cache::policies::Scope;
use moe_opt::cache::policy::{replay, Lru, Simulation};
use moe_opt::cache::router::{CacheView, Router};
use moe_opt::cache::routers::{
    max_rank_ranking, max_rank_select, replay_routed, PolicyView, RankTable, ReplayOptions,
    RoutedReplay, RouterSpec, SpecRouter,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A one-layer trace whose tokens have the given logits (experts = their top K).
fn trace_of(logits: &[[f32; 4]], top_k: usize) -> Trace {
    Trace::new(
        "hand",
        "hand",
        4,
        top_k,
        1,
        logits
            .iter()
            .enumerate()
            .map(|(t, z)| Token {
                seq: 0,
                token: t as u32,
                phase: Phase::Decode,
                layers: vec![Routing {
                    experts: formulations::cache::model::ranking(z)[..top_k].to_vec(),
                    weights: None,
                    logits: Some(z.to_vec()),
                }],
            })
            .collect(),
    )
}

/// E = 4, K = 2, one layer, three steps ranked t0 [0,1,2,3], t1 [2,3,1,0], t2 [3,0,2,1]
/// (logits a permutation of 3, 2, 1, 0 each).
fn three_steps() -> Trace {
    trace_of(
        &[
            [3.0, 2.0, 1.0, 0.0],
            [0.0, 1.0, 3.0, 2.0],
            [2.0, 0.0, 1.0, 3.0],
        ],
        2,
    )
}

/// A generated synthetic trace: E experts, top K, L layers, T tokens, drifting locality.
fn synthetic(
    experts: usize,
    top_k: usize,
    layers: usize,
    tokens: usize,
    drift: f64,
    seed: u64,
) -> Trace {
    generate(
        &GeneratorConfig::synthetic(experts, top_k, layers, tokens, Locality::drift(drift)),
        seed,
    )
    .unwrap()
}

/// `spec`'s routing replayed through LRU caches of `capacity`, default options.
fn lru_replay(
    table: &RankTable,
    spec: &RouterSpec,
    capacity: usize,
) -> Result<RoutedReplay, Error> {
    replay_routed(table, spec, capacity, &ReplayOptions::default(), Lru::new)
}

fn spec(s: &str) -> RouterSpec {
    s.parse().unwrap()
}

#[test]
fn max_rank_replay_by_hand() {
    // E = 4, K = 2, C = 2, J = 1, M = 4, LRU with the best-weighted expert of a step evicted
    // first. Rankings: t0 [0,1,2,3], t1 [2,3,1,0], t2 [3,0,2,1] (logits a permutation of
    // 3, 2, 1, 0 each).
    // t0: cold: chosen [0, 1], 2 loads; LRU stamps 0 -> 1, 1 -> 2.
    // t1: top-1 = 2; cached within the top 4 after it: 1 (rank 3) -> chosen [2, 1]; handed to
    //     LRU in rank order [2, 1]: 1 hits (stamp 4), 2 misses and evicts 0 (stamp 1): 1 load.
    // t2: top-1 = 3; cached after it: 2 (rank 3) -> chosen [3, 2]; 2 hits (stamp 6), 3 evicts
    //     1 (stamp 4): 1 load. Loads 4 of K x steps = 6.
    // The original routing: t0 2 loads; t1 [2, 3] 2 loads (evicting 0 then 1); t2 [3, 0]: 3
    //     hits, 0 loads evicting 2: 1 load. 5 of 6.
    let trace = three_steps();
    let table = RankTable::new(&trace);
    let run = lru_replay(&table, &spec("max-rank:m=4,j=1"), 2).unwrap();
    assert_eq!(run.loads, 4);
    assert!((run.miss_rate - 4.0 / 6.0).abs() < 1e-12);
    // Quality: kept 2 + 1 + 1 of 6; 1-based ranks (1 + 2) + (1 + 3) + (1 + 3) = 11 over 6;
    // probabilities by rank are e^(3 - r) / S, so the mass kept is 1 at t0 and
    // (e^3 + e) / (e^3 + e^2) at t1 and t2.
    let q = &run.quality;
    assert!((q.share_topk_kept - 4.0 / 6.0).abs() < 1e-12);
    assert!((q.mean_rank.unwrap() - 11.0 / 6.0).abs() < 1e-12);
    let e = std::f64::consts::E;
    let swapped = (e.powi(3) + e) / (e.powi(3) + e.powi(2));
    assert!((q.mass_kept.unwrap() - (1.0 + 2.0 * swapped) / 3.0).abs() < 1e-6);
    let original = lru_replay(&table, &RouterSpec::TopK, 2).unwrap();
    assert_eq!(original.loads, 5);
    assert_eq!(original.quality.share_topk_kept, 1.0);
    assert_eq!(original.quality.mean_rank, Some(1.5));
}

#[test]
fn pruning_is_normalised_by_k() {
    // Same trace, pruning h = 1, C = 2: t0 loads 0; t1 loads 2; t2 loads 3 (evicting 0, the
    // older): 3 loads. Miss rate 3 / (K x steps) = 3 / 6 = 0.5 (Sec. 4.2), while eq. (4) over
    // the 3 experts requested would be 1.
    let trace = three_steps();
    let table = RankTable::new(&trace);
    let run = lru_replay(&table, &spec("pruning:h=1"), 2).unwrap();
    assert_eq!(run.loads, 3);
    assert_eq!(run.miss_rate, 0.5);
    assert_eq!(run.total.miss_rate, 1.0);
    assert_eq!(run.quality.share_topk_kept, 0.5);
    assert_eq!(run.quality.chosen_per_step, 1.0);
}

#[test]
fn neutral_knobs_reproduce_the_plain_lru_replay() {
    // lambda = 0, p = 0, M = K and h = K all choose the original top-K; their loads must equal
    // the policy module's replay of the trace's own request streams (an independent path),
    // per layer and in one pool.
    let trace = synthetic(8, 2, 3, 400, 0.8, 11);
    let table = RankTable::new(&trace);
    for c in [2, 4, 6] {
        let per_layer: u64 = (0..3)
            .map(|l| replay(Lru::new(c, 8), &trace.layer_requests(l)).loads)
            .sum();
        let pooled = replay(Lru::new(c, 24), &trace.pooled_requests()).loads;
        for s in [
            "top-k",
            "pruning:h=2",
            "max-rank:m=2,j=1",
            "cumsum:p=0,j=1",
            "cache-prior:lambda=0,j=1",
        ] {
            let mut opts = ReplayOptions::default();
            let run = replay_routed(&table, &spec(s), c, &opts, Lru::new).unwrap();
            assert_eq!(run.loads, per_layer, "{s} at C = {c}");
            assert_eq!(run.quality.share_topk_kept, 1.0);
            assert_eq!(run.per_layer.len(), 3);
            opts.layout = Scope::Pool;
            let run = replay_routed(&table, &spec(s), c, &opts, Lru::new).unwrap();
            assert_eq!(run.loads, pooled, "{s} pooled at C = {c}");
        }
    }
}

#[test]
fn fast_max_rank_matches_the_literal_eq7_ranking() {
    struct Bits(Vec<bool>);
    impl CacheView for Bits {
        fn is_cached(&self, e: u32) -> bool {
            self.0[e as usize]
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut chosen = Vec::new();
    for _ in 0..2000 {
        let e = rng.random_range(1..=10usize);
        let k = rng.random_range(1..=e);
        let m = rng.random_range(0..=e + 1);
        let j = rng.random_range(0..=k);
        let mut r: Vec<u32> = (0..e as u32).collect();
        for i in (1..e).rev() {
            r.swap(i, rng.random_range(0..=i));
        }
        let cache = Bits((0..e).map(|_| rng.random_bool(0.5)).collect());
        let full = max_rank_ranking(&r, m, j, |x| cache.is_cached(x));
        let order: Vec<u16> = r.iter().map(|&x| x as u16).collect();
        max_rank_select(&order, k, m, j, &cache, &mut chosen);
        assert_eq!(chosen, full[..k], "r {r:?} M {m} J {j} K {k}");
    }
}

#[test]
fn trait_router_agrees_with_the_table_replay() {
    // SpecRouter ranks each routing from its logits on the fly; replaying with it by hand
    // (route through a PolicyView, then access) must give the same loads as replay_routed.
    let trace = synthetic(16, 4, 2, 300, 0.7, 3);
    let table = RankTable::new(&trace);
    for s in [
        "max-rank:m=7,j=2",
        "cumsum:p=0.5,j=2",
        "cache-prior:lambda=0.4,j=2",
    ] {
        let mut router = SpecRouter::new(spec(s), 2).unwrap();
        assert_eq!(router.name(), s);
        let mut sims: Vec<Simulation<Lru>> = (0..2)
            .map(|_| Simulation::new(Lru::new(8, 16), 16))
            .collect();
        let mut chosen = Vec::new();
        for token in &trace.tokens {
            for (l, routing) in token.layers.iter().enumerate() {
                let view = PolicyView {
                    policy: sims[l].policy(),
                    offset: 0,
                };
                router.route(l, routing, &view, &mut chosen);
                // In rank (logit) order, as the replay hands steps to LRU.
                let z = routing.logits.as_ref().unwrap();
                chosen.sort_by(|a, b| z[*b as usize].total_cmp(&z[*a as usize]).then(a.cmp(b)));
                sims[l].step(&chosen, None);
            }
        }
        let loads: u64 = sims.iter().map(|s| s.stats().loads).sum();
        let run = lru_replay(&table, &spec(s), 8).unwrap();
        assert_eq!(run.loads, loads, "{s}");
    }
}

#[test]
fn a_strong_cache_prior_misses_only_the_top_j() {
    // With lambda * delta above every token's logit range, a cached expert outscores every
    // uncached one, so after the first step (the cache then holds >= K experts) each step
    // loads at most the J forced experts: loads <= K + J (steps - 1) per layer.
    let trace = synthetic(16, 4, 2, 500, 0.5, 9);
    let table = RankTable::new(&trace);
    let max_range = (0..500)
        .flat_map(|t| (0..2).map(move |l| (t, l)))
        .map(|(t, l)| table.row(t, l).range as f64)
        .fold(0.0, f64::max);
    let lambda = 2.0 * max_range / table.mean_range(0).min(table.mean_range(1));
    let s = format!("cache-prior:lambda={lambda},j=1,delta=trace");
    let run = lru_replay(&table, &spec(&s), 6).unwrap();
    assert!(run.loads <= 2 * (4 + 499), "{} loads", run.loads);
    let original = lru_replay(&table, &RouterSpec::TopK, 6).unwrap();
    assert!(run.loads < original.loads);
}

#[test]
fn bad_requests_are_refused_with_the_reason() {
    let trace = synthetic(8, 2, 1, 10, 0.5, 1);
    let table = RankTable::new(&trace);
    let err = lru_replay(&table, &RouterSpec::TopK, 1)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("capacity") && err.contains("top_k = 2"),
        "{err}"
    );
    let mut bare = trace.clone();
    for t in &mut bare.tokens {
        t.layers[0].logits = None;
    }
    let err = lru_replay(&RankTable::new(&bare), &spec("max-rank:m=3,j=1"), 4)
        .unwrap_err()
        .to_string();
    assert!(err.contains("logits"), "{err}");
    let err = pareto::route(&trace, "max-rank:m=3,j=5", 4, &ReplayOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("j must be at most top_k = 2"), "{err}");
}

#[test]
fn sweep_fronts_are_pareto_optimal_and_include_the_original_routing_extremes() {
    let trace = synthetic(8, 2, 2, 300, 0.8, 21);
    let options = SweepOptions {
        grid: pareto::GridOptions {
            points: 6,
            ..Default::default()
        },
        ..Default::default()
    };
    let report = pareto::sweep_report(&trace, &options).unwrap();
    // 1 + 2 + 3 + 6 + 6 routers x capacities [2, 4, 6].
    assert_eq!(report.capacities, vec![2, 4, 6]);
    assert_eq!(report.points.len(), 18 * 3);
    for f in &report.fronts {
        let members: Vec<_> = report
            .points
            .iter()
            .filter(|p| p.capacity == f.capacity && (f.family == "all" || p.family == f.family))
            .collect();
        for &i in &f.points {
            let p = &report.points[i];
            let (x, y) = (p.miss_rate, p.proxy(f.proxy).unwrap());
            assert!(
                !members.iter().any(|q| {
                    let (qx, qy) = (q.miss_rate, q.proxy(f.proxy).unwrap());
                    qx <= x && qy >= y && (qx < x || qy > y)
                }),
                "{} is dominated in {:?}",
                p.router,
                f
            );
        }
    }
    // The original routing keeps all of the top-K, so it ends the "all" front on share kept
    // (no router keeps more, and nothing keeping all of it misses less).
    let all_share = report
        .fronts
        .iter()
        .find(|f| f.capacity == 4 && f.family == "all" && f.proxy == pareto::Proxy::ShareTopkKept)
        .unwrap();
    let last = &report.points[*all_share.points.last().unwrap()];
    assert_eq!(last.share_topk_kept, 1.0);
    // The text table has capacity 4's front: rows whose second column (capacity) is 4.
    let text = report.text();
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().nth(1) == Some("4")),
        "{text}"
    );
    // Parallel sweeps are deterministic.
    assert_eq!(report, pareto::sweep_report(&trace, &options).unwrap());
}
