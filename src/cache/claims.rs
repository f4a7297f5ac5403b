//! The offline caching claims of paper 002 (Sec. 4.8) as hypotheses checked on `cache-offline`
//! instances.
//!
//! ## The claims (ids `cache/...`)
//! 1. `sec48-belady-optimal`: Belady's MIN ("evicts the expert that will be needed farthest
//!    in the future", the paper's oracle) reaches the fixed-routing optimum when the K experts
//!    of a token are requested together. Reference: the fixed-routing MILP (proved optimal) or,
//!    where it fits, the exhaustive search. Margin: -|Belady - OPT| in loads (0 = holds).
//! 2. `sec48-flexible-below-belady`: the flexible-routing optimum (top-J forced, the rest
//!    within rank max(M, K)) is at most Belady's loads: the paper's "even surpassing the oracle
//!    bound" is possible only through routing freedom, and the flexible optimum is the most
//!    any router with that freedom can gain. Reference: the flexible MILP (proved optimal).
//!    Margin: Belady - OPT_flex in loads. A sanity check, not a claim of the paper: Belady's
//!    routing is feasible for the flexible MILP, so OPT_flex <= Belady by construction.
//! 3. `sec48-belady-halves-lru`: "Belady's algorithm roughly halves cache miss rates compared
//!    to LRU" at C = E/2. Measured: Belady loads / LRU loads. "Roughly" is read as within 0.1
//!    of 0.5 (a choice); margin 0.1 - |ratio - 0.5|. The ratio is reported per instance, and
//!    the family cycles through the generator's presets, so the verdicts say per model shape
//!    where it holds (on the real logs: `moe-opt replay LOG --policies lru,belady`). The check
//!    runs at C = max(E/2, K) whatever the instance's capacity, so the worst-case search
//!    cannot escape the claim's premise by moving C (at C = K every policy loads alike); a
//!    stream of fewer than 20 E requests is inconclusive (compulsory loads would exceed 5%
//!    of the requests), so shrinking keeps a counterexample long enough to mean a miss rate.
//!    LRU's loads are the reference, of kind `baseline` (they bound nothing about OPT).
//! 4. `sec48-cache-prior-below-belady`: "our Cache-Prior method achieves similar or even lower
//!    miss rates" than Belady's oracle bound "with only minimal perplexity increases". Measured:
//!    Cache-Prior (J of Sec. 4.2, running delta_avg) with LRU over the paper's lambda grid (50
//!    points of [0, 1]); the least lambda whose loads are below Belady's, and the router mass
//!    lost there (1 - mean mass kept; no perplexity here). "Small" is read as a loss of at most
//!    0.1 (a choice). Margin: 0.1 - loss when some lambda goes below Belady; otherwise minus
//!    the relative excess of the best Cache-Prior loads over Belady's. Like claim 3, a stream
//!    of fewer than 20 E requests is inconclusive.
//! 6. `sec48-belady-below-lru` repairs claim 3 (kind `repaired`): the paper's own weaker
//!    sentence (Sec. 4.8, Cache Size: "reducing cache size to half the number of experts
//!    improves performance over LRU"): at C = max(E/2, K) Belady makes strictly fewer loads than
//!    LRU, no factor claimed. Fig. 9's "roughly halves" has no printed number to calibrate
//!    "roughly" against (the paper prints no Belady miss rate), so the factor is dropped, not
//!    re-tuned. Same family and replay as claim 3; margin (LRU - Belady - 1/2) / LRU.
//! 7. `sec48-cache-prior-similar` repairs claim 4 (kind `repaired`): the sentence's own "similar
//!    or even lower", which claim 4 reads as "lower": the least lambda on the grid whose loads
//!    exceed Belady's by at most 1 % of the requests ([`SIMILAR_MISS_RATE`]: the paper prints
//!    miss rates in whole percents, Table 2 and Fig. 7, so two rates closer than that are
//!    printed alike; moe-opt's reading), with mass loss at most 0.1 there. Margin: 0.1 - loss,
//!    or 0.01 minus the best excess miss rate when no lambda comes that close.
//! 5. `router-gap-max-rank`, `router-gap-cumsum`, `router-gap-cache-prior` (issue 5: "the gap
//!    of every router to the flexible-routing bound"): the router (Max-Rank M = 4 = K + 2, J = 1;
//!    Cumsum p = 0.9, J = 1; Cache-Prior lambda = 0.5, J = 1) replayed with LRU, against the
//!    flexible-routing optimum at the freedom the router used
//!    ([`formulations::cache::offline::freedom_used`]: the kept prefix J and the deepest rank
//!    M), which no router with that freedom can beat. Reference: that optimum, proved
//!    (exhaustive or MILP). Bound: router loads >= OPT_flex; the ratio loads / OPT_flex is the
//!    gap. Margin: loads - OPT_flex. Sanity checks, not claims of the paper: the router's
//!    routing is feasible for that MILP, so the bound holds by construction; the gap is the
//!    measurement they carry.
//!
//! ## Families
//! Traces come from the calibrated generator ([`crate::cache::generate`]), one layer:
//! * `small`: [`GeneratorConfig::synthetic`] with the calibrated localities in turn (OLMoE,
//!   Kimi, Switch by seed mod 3), sized for the exhaustive search.
//! * `half`: the presets in turn (seed mod 7), their own (E, K) and locality, 2000 tokens.
//! * `prior`: the Table 1 presets in turn (Mixtral, Phi, DeepSeek, Qwen; seed mod 4), 500
//!   tokens, C = E/2.
//! * `gap`: synthetic E in {6, 8}, K = 2, 40 to 60 tokens, C = E/2, calibrated localities in
//!   turn; small enough for the flexible MILP to prove its optimum in well under a second.

use formulations::cache::exhaustive::fits_exhaustive;
use formulations::cache::offline::{CacheInstance, Freedom};
use formulations::cache::Trace;
use formulations::ProblemKind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::bounds::{layer_trace, run, OfflineMethod};
use super::generate::{generate, GeneratorConfig, Preset, CALIBRATED};
use super::pareto::{default_j, unit_grid};
use super::policy::Lru;
use super::routers::{replay_routed, DeltaEstimate, RankTable, ReplayOptions, RouterSpec};
use crate::claims::{
    Check, CheckOptions, Claim, ClaimInfo, ClaimKind, Outcome, Quantifier, ReferenceKind,
};

/// The paper's file.
pub const PAPER: &str = "002_af7f5861d0abc3cf.txt";

/// One registered offline caching claim.
pub type CacheClaim = Claim<CacheInstance>;

const SMALL: &str = "small: generated traces (calibrated localities in turn), E in {4, 6, 8}, \
    K in {1, 2}, T = 12..=24, C uniform in K..E-1, one layer; freedom J = K - 1, M = K + 2";
const HALF: &str = "half: the generator's presets in turn, one layer, 2000 tokens, C = E/2";
const PRIOR: &str = "prior: the Table 1 presets (Mixtral, Phi, DeepSeek, Qwen) in turn, one \
    layer, 500 tokens, C = E/2";
const GAP: &str = "gap: generated traces (calibrated localities in turn), E in {6, 8}, K = 2, \
    T = 40..=60, C = E/2, one layer";

/// "Small" router mass loss for `sec48-cache-prior-below-belady` (our reading).
pub const SMALL_MASS_LOSS: f64 = 0.1;

/// The routers whose gap is registered, with their knobs (module doc).
const GAP_ROUTERS: [RouterSpec; 3] = [
    RouterSpec::MaxRank { m: 4, j: 1 },
    RouterSpec::Cumsum { p: 0.9, j: 1 },
    RouterSpec::CachePrior {
        lambda: 0.5,
        j: 1,
        delta: DeltaEstimate::Running,
    },
];

/// The paper's sentence of `sec48-cache-prior-below-belady`, which its repaired claim corrects.
const PRIOR_QUOTE: &str = "As can be seen in Figure 9, our Cache-Prior method achieves similar or \
    even lower miss rates with only minimal perplexity increases.";

/// Every offline caching claim.
pub fn registry() -> Vec<CacheClaim> {
    let mut claims = vec![
        CacheClaim {
            info: ClaimInfo {
                id: "cache/sec48-belady-optimal",
                paper: PAPER,
                place: "Sec. 4.8 (Optimal Cache Eviction), Belady (1966)",
                statement: "Belady's MIN, evicting the expert needed farthest in the future, \
                    is the optimal cache policy for the model's own routing",
                measured: "Belady's loads vs the fixed-routing optimum (MILP or exhaustive)",
                bound: "Belady loads = OPT",
                family: SMALL,
                quote: "As a theoretical upper bound for cache policy, we consider Belady's \
                    algorithm (Belady, 1966), which evicts the expert that will be needed \
                    farthest in the future.",
                kind: ClaimKind::Stated,
                quantifier: Quantifier::Universal,
                repairs: None,
                search_limit: None,
            },
            family: family_small,
            check: |i, o| settle(check_belady_optimal(i, o)),
        },
        CacheClaim {
            info: ClaimInfo {
                id: "cache/sec48-flexible-below-belady",
                paper: PAPER,
                place: "Sec. 4.8 (surpassing the oracle bound by reranking)",
                statement: "Cache-aware routing with top-J kept and the rest within rank M can \
                    go below Belady's misses; its exact optimum is at most Belady's",
                measured: "flexible-routing optimum (MILP) vs Belady's loads",
                bound: "OPT_flex <= Belady loads",
                family: SMALL,
                quote: "This design enables us to trade a negligible amount of accuracy for a \
                    substantial gain in cache efficiency, even surpassing the oracle bound.",
                kind: ClaimKind::Sanity,
                quantifier: Quantifier::Universal,
                repairs: None,
                search_limit: None,
            },
            family: family_small,
            check: |i, o| settle(check_flexible_below_belady(i, o)),
        },
        CacheClaim {
            info: ClaimInfo {
                id: "cache/sec48-belady-halves-lru",
                paper: PAPER,
                place: "Sec. 4.8, Fig. 9",
                statement: "Belady's algorithm roughly halves cache miss rates compared to LRU \
                    (cache size E/2)",
                measured: "Belady loads / LRU loads at C = E/2",
                bound: "|ratio - 0.5| <= 0.1 (\"roughly\", our reading)",
                family: HALF,
                quote:
                    "Figure 9 shows that while Belady's algorithm roughly halves cache miss rates \
                    compared to LRU.",
                kind: ClaimKind::Stated,
                quantifier: Quantifier::Universal,
                repairs: None,
                search_limit: None,
            },
            family: family_half,
            check: |i, o| settle(check_halves_lru(i, o)),
        },
        CacheClaim {
            info: ClaimInfo {
                id: "cache/sec48-cache-prior-below-belady",
                paper: PAPER,
                place: "Sec. 4.8, Fig. 9",
                statement: "Cache-Prior achieves similar or even lower miss rates than the \
                    oracle (Belady) bound with only minimal quality loss",
                measured: "the least lambda of [0, 1] (50 points) with Cache-Prior + LRU loads \
                    below Belady's, and the router mass lost there",
                bound: "reached with mass loss <= 0.1 (\"small\", our reading)",
                family: PRIOR,
                quote: PRIOR_QUOTE,
                kind: ClaimKind::Stated,
                quantifier: Quantifier::Universal,
                repairs: None,
                search_limit: None,
            },
            family: family_prior,
            check: |i, o| settle(check_cache_prior_below_belady(i, o)),
        },
        CacheClaim {
            info: ClaimInfo {
                id: "cache/sec48-belady-below-lru",
                paper: PAPER,
                place: "Sec. 4.8 (Cache Size), Fig. 10, repaired by moe-opt",
                statement: "at cache size E/2, Belady's optimal caching makes fewer loads than \
                    LRU (\"improves performance over LRU\"), without a factor",
                measured: "Belady loads and LRU loads at C = E/2",
                bound: "Belady < LRU",
                family: HALF,
                quote: "For the optimal cache baseline, reducing cache size to half the number of \
                    experts improves performance over LRU, but the benefit diminishes as cache \
                    size shrinks further, becoming negligible for cache sizes  $\\leq k$ .",
                kind: ClaimKind::Repaired,
                quantifier: Quantifier::Universal,
                repairs: Some("cache/sec48-belady-halves-lru"),
                search_limit: None,
            },
            family: family_half,
            check: |i, o| settle(check_belady_below_lru(i, o)),
        },
        CacheClaim {
            info: ClaimInfo {
                id: "cache/sec48-cache-prior-similar",
                paper: PAPER,
                place: "Sec. 4.8, Fig. 9, repaired by moe-opt",
                statement: "Cache-Prior achieves similar (within 1 percentage point of the \
                    requests, the paper's printed precision) or lower miss rates than Belady, \
                    with a small router mass loss",
                measured: "the least lambda of [0, 1] (50 points) with Cache-Prior + LRU loads \
                    at most Belady's + 1 % of the requests, and the router mass lost there",
                bound: "reached with mass loss <= 0.1 (\"small\", our reading)",
                family: PRIOR,
                quote: PRIOR_QUOTE,
                kind: ClaimKind::Repaired,
                quantifier: Quantifier::Universal,
                repairs: Some("cache/sec48-cache-prior-below-belady"),
                search_limit: None,
            },
            family: family_prior,
            check: |i, o| settle(check_cache_prior_similar(i, o)),
        },
    ];
    type CheckFn = fn(&CacheInstance, &CheckOptions) -> Check;
    let gaps: [(&'static str, CheckFn); 3] = [
        ("cache/router-gap-max-rank", |i, o| {
            settle(check_router_gap(i, o, &GAP_ROUTERS[0]))
        }),
        ("cache/router-gap-cumsum", |i, o| {
            settle(check_router_gap(i, o, &GAP_ROUTERS[1]))
        }),
        ("cache/router-gap-cache-prior", |i, o| {
            settle(check_router_gap(i, o, &GAP_ROUTERS[2]))
        }),
    ];
    for (id, check) in gaps {
        claims.push(CacheClaim {
            info: ClaimInfo {
                id,
                paper: PAPER,
                place: "Sec. 3 (Max-Rank, Cumsum, Cache-Prior) vs the flexible-routing bound",
                statement: "no cache-aware router beats the flexible-routing optimum of the \
                    freedom it uses; the gap is what the router leaves",
                measured: "router + LRU loads vs the flexible optimum at the router's used \
                    freedom (top-J kept, max rank)",
                bound: "router loads >= OPT_flex (ratio = the gap)",
                family: GAP,
                quote: "In contrast, our approach introduces controlled, lossy, reranking of \
                    experts, allowing the model to swap lower-ranked experts for in-cache ones, \
                    at the cost of a small, tunable increase in perplexity.",
                kind: ClaimKind::Sanity,
                quantifier: Quantifier::Universal,
                repairs: None,
                search_limit: None,
            },
            family: family_gap,
            check,
        });
    }
    claims
}

/// A one-layer generated trace (module doc), or the generator's error as a panic: the
/// families' configurations are fixed and valid.
fn one_layer(config: GeneratorConfig, seed: u64) -> Trace {
    generate(&config, seed).expect("the families' generator configurations are valid")
}

fn offline(name: String, capacity: usize, freedom: Freedom, trace: Trace) -> CacheInstance {
    CacheInstance {
        problem: ProblemKind::CacheOffline,
        name,
        capacity,
        layer: 0,
        freedom,
        trace,
    }
}

/// The `small` family at `seed`.
pub fn family_small(seed: u64) -> CacheInstance {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_cac4e);
    let experts = [4, 6, 8][rng.random_range(0..3)];
    let top_k = rng.random_range(1..=2);
    let tokens = rng.random_range(12..=24);
    let capacity = rng.random_range(top_k..experts);
    let locality = CALIBRATED[(seed % 3) as usize];
    let freedom = Freedom {
        top_j: top_k - 1,
        max_rank: Some(top_k + 2),
        min_mass: None,
    };
    let trace = one_layer(
        GeneratorConfig::synthetic(experts, top_k, 1, tokens, locality),
        seed,
    );
    offline(format!("small-{seed}"), capacity, freedom, trace)
}

/// A preset's first layer, about `tokens` tokens of it (its sequences kept), cached at C = E/2
/// with fixed routing: the instance of the `half` and `prior` families.
fn preset_half(family: &str, preset: Preset, tokens: usize, seed: u64) -> CacheInstance {
    let mut config = GeneratorConfig::preset(preset);
    config.layers = 1;
    config.tokens_per_sequence = tokens.div_ceil(config.sequences);
    let (e, k) = (config.experts, config.top_k);
    let name = format!("{family}-{preset}-{seed}");
    offline(name, e / 2, Freedom::fixed(k), one_layer(config, seed))
}

/// The `half` family at `seed`.
pub fn family_half(seed: u64) -> CacheInstance {
    let preset = Preset::ALL[(seed % Preset::ALL.len() as u64) as usize];
    preset_half("half", preset, 2000, seed)
}

/// The `prior` family at `seed`.
pub fn family_prior(seed: u64) -> CacheInstance {
    preset_half("prior", Preset::ALL[(seed % 4) as usize], 500, seed)
}

/// The `gap` family at `seed`.
pub fn family_gap(seed: u64) -> CacheInstance {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6a9_cac4e);
    let experts = [6, 8][rng.random_range(0..2)];
    let tokens = rng.random_range(40..=60);
    let locality = CALIBRATED[(seed % 3) as usize];
    let trace = one_layer(
        GeneratorConfig::synthetic(experts, 2, 1, tokens, locality),
        seed,
    );
    let freedom = Freedom {
        top_j: 1,
        max_rank: Some(4),
        min_mass: None,
    };
    offline(format!("gap-{seed}"), experts / 2, freedom, trace)
}

/// A check's outcome, or the inconclusive check that ended it early (what `?` returns).
type Checked = Result<Check, Box<Check>>;

fn inconclusive(note: impl Into<String>) -> Box<Check> {
    Box::new(Check::inconclusive(note))
}

/// The check of a [`Checked`] body, ended early or not.
fn settle(checked: Checked) -> Check {
    checked.unwrap_or_else(|early| *early)
}

/// A proved optimum: (loads, how). Exhaustive where it fits, else the MILP.
fn optimum(
    instance: &CacheInstance,
    flexible: bool,
    options: &CheckOptions,
) -> Result<(u64, String), Box<Check>> {
    let method = match (fits_exhaustive(instance), flexible) {
        (true, false) => OfflineMethod::ExhaustiveFixed,
        (true, true) => OfflineMethod::ExhaustiveFlexible,
        (false, false) => OfflineMethod::MilpFixed,
        (false, true) => OfflineMethod::MilpFlexible,
    };
    match run(instance, method, &options.solve) {
        Ok(r) => match (r.report.proved_optimal, r.report.loads) {
            (true, Some(l)) => Ok((l, r.report.status.unwrap_or_default())),
            _ => Err(Box::new(Check {
                solver_status: r.report.status,
                ..Check::inconclusive(format!("{} proved no optimum", method.name()))
            })),
        },
        Err(e) => Err(inconclusive(format!("{}: {e}", method.name()))),
    }
}

fn belady_loads(instance: &CacheInstance) -> Result<u64, Box<Check>> {
    run(instance, OfflineMethod::Belady, &Default::default())
        .ok()
        .and_then(|r| r.report.loads)
        .ok_or_else(|| inconclusive("Belady failed"))
}

/// Inconclusive when the stream is too short for a miss rate, a long-run figure: with fewer
/// than 20 E requests the E compulsory loads alone exceed 5% of them.
fn too_short(instance: &CacheInstance) -> Result<(), Box<Check>> {
    let requests = instance.steps() * instance.top_k();
    if requests < 20 * instance.experts() {
        return Err(inconclusive(format!(
            "{requests} requests, fewer than 20 E = {}: too short for a miss rate",
            20 * instance.experts()
        )));
    }
    Ok(())
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn check_belady_optimal(instance: &CacheInstance, options: &CheckOptions) -> Checked {
    let (opt, status) = optimum(instance, false, options)?;
    let belady = belady_loads(instance)?;
    let outcome = Outcome::fail_if(belady != opt);
    let note = format!(
        "Belady {belady} loads, optimum {opt} (T = {}, E = {}, K = {}, C = {})",
        instance.steps(),
        instance.experts(),
        instance.top_k(),
        instance.capacity
    );
    Ok(Check {
        ratio: ratio(belady, opt),
        bound: Some(1.0),
        witness: (outcome == Outcome::Fail).then(|| json!({ "requests": instance.requests() })),
        margin: Some(-(belady.abs_diff(opt) as f64)),
        ..Check::against_optimum(outcome, belady as f64, opt as f64, status, note)
    })
}

fn check_flexible_below_belady(instance: &CacheInstance, options: &CheckOptions) -> Checked {
    let (opt, status) = optimum(instance, true, options)?;
    let belady = belady_loads(instance)?;
    let note = format!(
        "flexible optimum {opt} loads vs Belady {belady} (J = {}, M = {:?}): {:.1}% fewer",
        instance.freedom.top_j,
        instance.freedom.max_rank,
        100.0 * (1.0 - ratio(opt, belady).unwrap_or(1.0))
    );
    Ok(Check {
        ratio: ratio(opt, belady),
        bound: Some(1.0),
        margin: Some(belady as f64 - opt as f64),
        ..Check::against_optimum(
            Outcome::fail_if(opt > belady),
            opt as f64,
            belady as f64,
            status,
            note,
        )
    })
}

fn check_halves_lru(instance: &CacheInstance, _options: &CheckOptions) -> Checked {
    // The claim is about C = E/2 (at least K), whatever capacity a search move gave.
    let half = (instance.experts() / 2).max(instance.top_k());
    let at_half;
    let instance = if instance.capacity == half {
        instance
    } else {
        at_half = CacheInstance {
            capacity: half,
            ..instance.clone()
        };
        &at_half
    };
    too_short(instance)?;
    let belady = belady_loads(instance)?;
    let lru = run(instance, OfflineMethod::Lru, &Default::default())
        .map_err(|e| inconclusive(format!("LRU: {e}")))?
        .report
        .loads
        .unwrap_or(0);
    let r = ratio(belady, lru).ok_or_else(|| inconclusive("LRU has no loads"))?;
    let margin = 0.1 - (r - 0.5).abs();
    let note = format!(
        "Belady {belady} loads, LRU {lru} at C = {} of E = {}: ratio {r:.3}",
        instance.capacity,
        instance.experts()
    );
    // LRU's loads are a baseline, not an optimum: nothing here bounds OPT.
    Ok(Check {
        value: Some(belady as f64),
        reference: Some(lru as f64),
        reference_kind: ReferenceKind::Baseline,
        ratio: Some(r),
        bound: Some(0.5),
        margin: Some(margin),
        ..Check::new(Outcome::fail_if(margin < 0.0), note)
    })
}

/// The halving claim's repair (module doc, claim 6): Belady strictly below LRU at C = E/2.
fn check_belady_below_lru(instance: &CacheInstance, _options: &CheckOptions) -> Checked {
    let half = CacheInstance {
        capacity: (instance.experts() / 2).max(instance.top_k()),
        ..instance.clone()
    };
    too_short(&half)?;
    let belady = belady_loads(&half)?;
    let lru = run(&half, OfflineMethod::Lru, &Default::default())
        .map_err(|e| inconclusive(format!("LRU: {e}")))?
        .report
        .loads
        .unwrap_or(0);
    let r = ratio(belady, lru).ok_or_else(|| inconclusive("LRU has no loads"))?;
    // Loads are integers: Belady < LRU iff LRU - Belady >= 1, so the half-load offset makes
    // the margin < 0 exactly on a fail.
    let margin = ((lru as f64 - belady as f64) - 0.5) / lru as f64;
    let note = format!(
        "Belady {belady} loads, LRU {lru} at C = {} of E = {}: ratio {r:.3}",
        half.capacity,
        half.experts()
    );
    Ok(Check {
        value: Some(belady as f64),
        reference: Some(lru as f64),
        reference_kind: ReferenceKind::Baseline,
        ratio: Some(r),
        bound: Some(1.0),
        margin: Some(margin),
        ..Check::new(Outcome::fail_if(margin < 0.0), note)
    })
}

/// "Similar" for `sec48-cache-prior-similar`: within this share of the requests (the paper
/// prints miss rates in whole percents: Table 2, Fig. 7).
pub const SIMILAR_MISS_RATE: f64 = 0.01;

/// Cache-Prior with LRU over the lambda grid (50 points of [0, 1], J of Sec. 4.2), up to the
/// first lambda whose loads `accept` takes.
struct PriorSweep {
    belady: u64,
    j: usize,
    /// The first accepted (lambda, loads, mass kept).
    found: Option<(f64, u64, f64)>,
    /// Otherwise the fewest loads and their (first) lambda.
    best: (u64, f64),
}

fn sweep_cache_prior(
    instance: &CacheInstance,
    accept: impl Fn(u64, u64) -> bool,
) -> Result<PriorSweep, Box<Check>> {
    too_short(instance)?;
    let belady = belady_loads(instance)?;
    let j = default_j(instance.top_k());
    let table = RankTable::new(&layer_trace(instance));
    let options = ReplayOptions {
        per_layer_stats: false,
        ..ReplayOptions::default()
    };
    let mut best: Option<(u64, f64)> = None;
    for lambda in unit_grid(50) {
        let spec = RouterSpec::CachePrior {
            lambda,
            j,
            delta: DeltaEstimate::Running,
        };
        let replay = replay_routed(&table, &spec, instance.capacity, &options, Lru::new)
            .map_err(|e| inconclusive(format!("{spec}: {e}")))?;
        let (loads, Some(kept)) = (replay.loads, replay.quality.mass_kept) else {
            return Err(inconclusive(format!("{spec}: no router mass (no logits?)")));
        };
        if accept(loads, belady) {
            let found = Some((lambda, loads, kept));
            let best = (loads, lambda);
            return Ok(PriorSweep {
                belady,
                j,
                found,
                best,
            });
        }
        if best.is_none_or(|(l, _)| loads < l) {
            best = Some((loads, lambda));
        }
    }
    let best = best.expect("the grid has 50 points");
    Ok(PriorSweep {
        belady,
        j,
        found: None,
        best,
    })
}

/// A Cache-Prior check that reached its target at `lambda` with `loads`: the mass lost there
/// against [`SMALL_MASS_LOSS`].
fn prior_mass_check(sweep: &PriorSweep, relation: &str) -> Check {
    let (lambda, loads, kept) = sweep.found.expect("a lambda reached the target");
    let (belady, j) = (sweep.belady, sweep.j);
    let loss = 1.0 - kept;
    let margin = SMALL_MASS_LOSS - loss;
    let note = format!(
        "Cache-Prior lambda = {lambda:.4} (J = {j}): {loads} loads {relation} Belady {belady}, \
         router mass lost {loss:.4}"
    );
    Check {
        // The value is the quantity the bound limits, the mass loss (loads are in the note): no
        // ratio to Belady's loads.
        bound: Some(SMALL_MASS_LOSS),
        margin: Some(margin),
        ..Check::against_optimum(
            Outcome::fail_if(margin < 0.0),
            loss,
            belady as f64,
            "belady",
            note,
        )
    }
}

/// A Cache-Prior check whose target no lambda reached: a fail against Belady's loads.
fn prior_missed(sweep: &PriorSweep, margin: f64, note: String) -> Check {
    Check {
        reference: Some(sweep.belady as f64),
        reference_kind: ReferenceKind::Optimum,
        solver_status: Some("belady".into()),
        bound: Some(SMALL_MASS_LOSS),
        margin: Some(margin),
        ..Check::new(Outcome::Fail, note)
    }
}

/// The Cache-Prior claim's repair (module doc, claim 7).
fn check_cache_prior_similar(instance: &CacheInstance, _options: &CheckOptions) -> Checked {
    let requests = (instance.steps() * instance.top_k()) as f64;
    let excess = |loads: u64, belady: u64| (loads as f64 - belady as f64) / requests;
    let sweep = sweep_cache_prior(instance, |l, b| excess(l, b) <= SIMILAR_MISS_RATE)?;
    if sweep.found.is_some() {
        return Ok(prior_mass_check(&sweep, "within 1 % of the requests of"));
    }
    let ((loads, lambda), belady) = (sweep.best, sweep.belady);
    let over = excess(loads, belady);
    let note = format!(
        "no lambda in [0, 1] comes within 1 % of the requests of Belady's {belady} loads: the \
         best, lambda = {lambda:.4}, misses {over:+.4} of the requests more"
    );
    Ok(prior_missed(&sweep, SIMILAR_MISS_RATE - over, note))
}

fn check_cache_prior_below_belady(instance: &CacheInstance, _options: &CheckOptions) -> Checked {
    let sweep = sweep_cache_prior(instance, |loads, belady| loads < belady)?;
    let (c, e) = (instance.capacity, instance.experts());
    if sweep.found.is_some() {
        let mut check = prior_mass_check(&sweep, "<");
        check.note = format!("{} (C = {c} of E = {e})", check.note);
        return Ok(check);
    }
    let ((loads, lambda), belady) = (sweep.best, sweep.belady);
    let note = format!(
        "no lambda in [0, 1] goes below Belady's {belady} loads: the best, lambda = \
         {lambda:.4}, loads {loads} (C = {c} of E = {e})"
    );
    let margin = -((loads + 1 - belady) as f64) / belady.max(1) as f64;
    Ok(prior_missed(&sweep, margin, note))
}

fn check_router_gap(
    instance: &CacheInstance,
    options: &CheckOptions,
    spec: &RouterSpec,
) -> Checked {
    let report = run(instance, OfflineMethod::Routed(*spec), &options.solve)
        .map_err(|e| inconclusive(format!("{spec}: {e}")))?
        .report;
    let (Some(loads), Some(top_j)) = (report.loads, report.used_top_j) else {
        return Err(inconclusive(format!("{spec} produced no schedule")));
    };
    // The bound of every router with the freedom this one used (module doc).
    let used = CacheInstance {
        freedom: Freedom {
            top_j,
            max_rank: report.used_max_rank,
            min_mass: None,
        },
        ..instance.clone()
    };
    let (opt, status) = optimum(&used, true, options)?;
    let outcome = Outcome::fail_if(loads < opt);
    let note = format!(
        "{spec} + LRU: {loads} loads (mass kept {}); flexible optimum {opt} at its used \
             freedom J = {top_j}, M = {} (T = {}, E = {}, C = {})",
        report
            .mass_kept_mean
            .map_or("-".into(), |m| format!("{m:.4}")),
        report.used_max_rank.map_or("-".into(), |m| m.to_string()),
        instance.steps(),
        instance.experts(),
        instance.capacity
    );
    Ok(Check {
        ratio: ratio(loads, opt),
        bound: Some(1.0),
        witness: (outcome == Outcome::Fail).then(|| json!({ "router": spec.to_string() })),
        margin: Some(loads as f64 - opt as f64),
        ..Check::against_optimum(outcome, loads as f64, opt as f64, status, note)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use formulations::cache::offline::validate;

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
    fn router_gaps_are_never_negative() {
        // Loads >= the flexible optimum of the used freedom is a theorem (the router's own
        // schedule is feasible there): every check passes with a non-negative margin.
        let options = CheckOptions::default();
        for claim in registry()
            .iter()
            .filter(|c| c.info.id.contains("router-gap"))
        {
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
            problem: ProblemKind::CacheTrace,
            name: "t".into(),
            model: "m".into(),
            experts: 4,
            top_k: 1,
            shared_experts: 0,
            layers: 1,
            ranked: false,
            tokens: requests
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
        for claim in registry().iter().take(2) {
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
        for spec in &GAP_ROUTERS {
            // Forced: K = J = 1 on 0, 1, 2 cycled 3 times at C = 2. Max-Rank and Cumsum keep
            // r[:J], the whole top 1; Cache-Prior boosts the top-1 (top-J) and no other expert
            // can pass it. So each router is the original routing with LRU: 9 loads (a cycle of
            // 3 in 2 slots). Used freedom J = 1, M = 1 = K: fixed routing, whose optimum is
            // Belady's 6 (3 compulsory + one miss in each window {4, 5}, {6, 7}, {8, 9}).
            // Loads 9, OPT_flex 6: margin 3, ratio 1.5.
            let cycle: Vec<u32> = (0..9).map(|i| i % 3).collect();
            let c = check_router_gap(&top1_logits(&cycle), &options, spec).unwrap();
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
            let c =
                check_router_gap(&rotating_second(4, 2, 6, 1.0 / 64.0), &options, spec).unwrap();
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
    fn cache_prior_claims_pass_by_hand() {
        let options = CheckOptions::default();
        // rotating_second(6, 3, 60, d = 1/64): E = 6, K = 2, C = 3 = E/2, 120 requests = 20 E.
        // Belady on {0, s_t} (0 always requested, never evicted; s in two slots): steps 0, 1
        // load 0, 1, 2; then it misses at every even step 2..58 (evicting the one of the two
        // cycle experts needed later) and hits at odd steps: 3 + 29 = 32 loads.
        // Cache-Prior (J = 1, delta = running mean of the range 1 = 1, bias = lambda): while
        // lambda <= d, s_t (logit d, or d + bias when cached) beats every other cached expert
        // (0 + bias), ties to rank: the original routing, with LRU 61 loads (it misses s_t at
        // every step), more than 32 + 1.2. The first grid point above d = 0.0156 is lambda =
        // 1/49 = 0.0204: the cached 1 (0 + 0.0204) beats s_t (0.0156), so every step routes
        // {0, 1}: 2 loads, below Belady and within 1 % of the requests. Mass kept: 1 at the 20
        // steps with s_t = 1, else (p_0 + p_1) / (p_0 + p_s) = (e + 1) / (e + e^d) at the 40
        // others. Loss = (2/3) (e^d - 1) / (e + e^d) = 0.0028116, margin 0.1 - loss.
        let i = rotating_second(6, 3, 60, 1.0 / 64.0);
        let d = 1.0f64 / 64.0;
        let e = std::f64::consts::E;
        let loss = 2.0 / 3.0 * (d.exp() - 1.0) / (e + d.exp());
        assert!((loss - 0.0028116).abs() < 1e-7);
        for c in [
            check_cache_prior_below_belady(&i, &options).unwrap(),
            check_cache_prior_similar(&i, &options).unwrap(),
        ] {
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
    }

    #[test]
    fn cache_prior_claims_fail_by_hand() {
        let options = CheckOptions::default();
        // No lambda helps: 0, 1, 2 cycled 27 times with logits, K = 1, C = 2 (81 requests).
        // J = K = 1 boosts the top-1, which no other expert can pass: Cache-Prior is LRU at
        // every lambda, 81 loads (best at the first, lambda = 0); Belady 42
        // (belady_halves_lru_by_hand). Below: margin -(81 + 1 - 42) / 42 = -20/21. Similar:
        // excess (81 - 42) / 81 = 13/27, margin 0.01 - 13/27.
        let cycle: Vec<u32> = (0..81).map(|i| i % 3).collect();
        let i = top1_logits(&cycle);
        let below = check_cache_prior_below_belady(&i, &options).unwrap();
        let similar = check_cache_prior_similar(&i, &options).unwrap();
        for (c, margin) in [(&below, -20.0 / 21.0), (&similar, 0.01 - 13.0 / 27.0)] {
            assert_eq!(
                (c.outcome, c.value, c.reference, c.reference_kind, c.bound),
                (
                    Outcome::Fail,
                    None,
                    Some(42.0),
                    ReferenceKind::Optimum,
                    Some(SMALL_MASS_LOSS)
                ),
                "{}",
                c.note
            );
            assert!(close(c.margin, margin, 1e-12), "{c:?}");
            assert!(c.note.contains("lambda = 0.0000"), "{}", c.note);
        }
        assert!(below.note.contains("loads 81"), "{}", below.note);
        // Reached, but at too high a mass loss: rotating_second(6, 3, 60, d = 0.9). As in
        // cache_prior_claims_pass_by_hand (Belady 32, the original routing with 61 loads while
        // lambda <= d), but the first grid point above 0.9 is 45/49 = 0.9184 (44/49 = 0.898):
        // {0, 1} at every step, 2 loads. Loss (2/3) (e^d - 1) / (e + e^d) = 0.18793 > 0.1:
        // a fail with margin 0.1 - loss = -0.08793, for both claims.
        let i = rotating_second(6, 3, 60, 0.9);
        let d = f64::from(0.9f32);
        let e = std::f64::consts::E;
        let loss = 2.0 / 3.0 * (d.exp() - 1.0) / (e + d.exp());
        assert!((loss - 0.18793).abs() < 1e-5);
        for c in [
            check_cache_prior_below_belady(&i, &options).unwrap(),
            check_cache_prior_similar(&i, &options).unwrap(),
        ] {
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
    }
}
