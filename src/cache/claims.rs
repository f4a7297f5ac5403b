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
//! 7. `sec48-cache-prior-similar` stands in for a repair of claim 4 (kind `measurement`,
//!    `repairs` naming claim 4): the sentence's "similar or even lower" has no threshold in the
//!    paper's text, and the distance it shows between Cache-Prior and Belady is in Fig. 9,
//!    which the text does not carry (an earlier "within 1 % of the requests" was moe-opt's
//!    threshold, and failed at the papers' scale). Measured instead, per instance: at the
//!    lambda of the grid with the fewest Cache-Prior + LRU loads among those losing at most
//!    0.1 of the router mass (lambda = 0, the original routing, loses none; ties to the least
//!    lambda), those loads against Belady's (value, reference and ratio; the note gives the
//!    excess miss rate and the lambda). No bound, no verdict: the ratios' distribution over
//!    the family is the result (claims.csv: range, 5 % quantile, median).
//! 5. `router-gap-max-rank`, `router-gap-cumsum`, `router-gap-cache-prior` (issue 5: "the gap
//!    of every router to the flexible-routing bound"): the router (Max-Rank M = K + 2; Cumsum
//!    p = 0.9; Cache-Prior lambda = 0.5; each with J of Sec. 4.1, 1 for K <= 2 and 2 above, so
//!    M = 4, J = 1 on the `gap` family's K = 2) replayed with LRU, against the
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
//!
//! ## Paper scale (`verify --scale paper`)
//! The Table 1 models as the generator's presets (Mixtral, Phi, DeepSeek, Qwen by seed mod 4,
//! their own (E, K)) with the locality under which LRU at C = E/2 misses Table 2's rate
//! (`TABLE1`), at least one WikiText context of 1,024 tokens (Sec. 4.1), at the paper's
//! capacities: C = E/2 throughout, E/4 in App. D. All are in the `regime` tier of
//! [`super::premises`] except Phi for claim 4 (the paper's named exception). `verify` draws
//! the family seeds, so the configurations' shares vary from run to run.
//! * `paper-fixed` (claim 1): seed mod 7 picks a Table 1 preset (0-3; C = E/2 for even
//!   j = seed / 7, max(E/4, K) for odd) or a whole real log of ../shared/data/token-traces
//!   (4 OLMoE, 299 tokens; 5 Kimi, 300; 6 Switch, 215), its layer j mod L, C = E/2. Belady's
//!   optimality is a statement about every trace, so the real logs belong here (tier `model`:
//!   not Table 1 shapes). Where the data is absent the log's calibrated preset stands in,
//!   named `-standin`.
//! * `paper-flexible` (claims 2 and 5): the presets at 1,024 tokens, C = E/2, J of Sec. 4.1
//!   and M = K + 2. The real logs carry no ranks nor logits, so their only freedoms are J = K
//!   (the fixed problem) and J = 0 with any K experts (optimum K loads: load K once): nothing
//!   to check there.
//! * `paper-half` (claims 3 and 6): the presets at 4,096 tokens, C = E/2 (Belady and LRU are
//!   simulations: a longer stream costs little and makes the miss rates long-run). No real
//!   log: OLMoE's and Kimi's routings are sorted by id (K = 8), which the paper's LRU order
//!   by rank needs (premise `lru-step-order-by-rank`), Switch's is an encoder pass, and
//!   Kimi's 2,400 requests are fewer than 20 E = 5,120 (`too_short`): each instance would be
//!   outside the model or inconclusive.
//! * `paper-prior` (claims 4 and 7): the presets at 1,024 tokens, C = E/2 for even seed / 4,
//!   max(E/4, K) for odd. No real log: Cache-Prior needs logits, which the logs lack.
//!
//! Certificates at that scale. Belady's loads are the proved fixed-routing optimum (the
//! exchange argument in [`super::belady`]) wherever the claim is not Belady's optimality
//! itself (claims 2-7). Claim 1 keeps the MILP as the independent reference: when it stops at
//! its time limit, OPT lies in [its bound rounded up, its incumbent] (the incumbent
//! re-evaluated by the one evaluator), and Belady passes when the bound reaches its loads
//! (Belady's schedule is feasible, so then Belady = OPT) and fails when the incumbent loads
//! fewer. Claims 2 and 5 are true by construction: the MILP starts from a feasible schedule
//! (Belady's for claim 2; for claim 5 the router's own or Belady's, whichever loads fewer), so
//! its incumbent certifies the pass, and the MILP's bound, when it stops, is the other end of
//! the gap reported in the note. Their MILPs run at most `SANITY_MILP_SECONDS` (8 s; the
//! DeepSeek and Qwen models at 1,024 tokens rarely close their gap within a minute, and the
//! verdict does not wait on it). The other end is the larger of the MILP's bound and a bound
//! of the problem (`forced_lower_bound`): OPT_flex >= Belady's loads on the stream of the
//! forced (top-J) experts at capacity C. Proof: in any flexible schedule, the resident set
//! R_t holds the chosen set, which holds step t's forced experts F_t, and |R_t| <= C; so
//! (F_t, R_t) is a schedule of the fixed-routing problem whose requests are F_t, with the same
//! loads, and Belady's loads are that problem's optimum (the exchange argument of
//! [`super::belady`] holds for requests of any size, K, J or none).

use std::path::{Path, PathBuf};

use formulations::cache::exhaustive::fits_exhaustive;
use formulations::cache::model::Requests;
use formulations::cache::offline::{CacheInstance, Freedom, Schedule};
use formulations::cache::Trace;
use formulations::ProblemKind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use super::belady::belady_schedule;
use super::bounds::{layer_trace, run, run_from, OfflineMethod};
use super::generate::{generate, GeneratorConfig, Locality, Preset, CALIBRATED};
use super::import::{import_token_log, ImportOptions};
use super::pareto::{default_j, unit_grid};
use super::policy::Lru;
use super::routers::{replay_routed, DeltaEstimate, RankTable, ReplayOptions, RouterSpec};
use crate::claims::{
    Certificate, Check, CheckOptions, Claim, ClaimInfo, ClaimKind, Outcome, PaperScale,
    ReferenceKind,
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

const PAPER_FIXED: &str = "paper-fixed: seed % 7 picks 0-3 a Table 1 preset (Mixtral, Phi, \
    DeepSeek, Qwen; generator seed = seed; locality giving Table 2's LRU miss rate) at 1,024 \
    tokens, one layer, C = E/2 for even seed / 7 and max(E/4, K) for odd; 4-6 the whole real \
    OLMoE (299 tokens), Kimi (300) or Switch (215) log of ../shared/data/token-traces, layer \
    seed / 7 mod L, C = E/2 (a calibrated stand-in, named so, where the data is absent); fixed \
    routing";
const PAPER_FLEXIBLE: &str = "paper-flexible: seed % 4 picks a Table 1 preset (Mixtral, Phi, \
    DeepSeek, Qwen; generator seed = seed; locality giving Table 2's LRU miss rate) at 1,024 \
    tokens, one layer, C = E/2; freedom J of Sec. 4.1 (1 for K <= 2, else 2), M = K + 2";
const PAPER_HALF: &str = "paper-half: seed % 4 picks a Table 1 preset (Mixtral, Phi, DeepSeek, \
    Qwen; generator seed = seed; locality giving Table 2's LRU miss rate) at 4,096 tokens (four \
    WikiText contexts), one layer, C = E/2";
const PAPER_PRIOR: &str = "paper-prior: seed % 4 picks a Table 1 preset (Mixtral, Phi, \
    DeepSeek, Qwen; generator seed = seed; locality giving Table 2's LRU miss rate) at 1,024 \
    tokens, one layer, C = E/2 for even seed / 4 and max(E/4, K) (App. D) for odd";

/// "Small" router mass loss for `sec48-cache-prior-below-belady` (our reading).
pub const SMALL_MASS_LOSS: f64 = 0.1;

/// The router of gap claim `which` (0 Max-Rank, 1 Cumsum, 2 Cache-Prior) for top-K routing:
/// J of Sec. 4.1 ([`default_j`]: 1 for K <= 2, else 2); Max-Rank M = K + 2, Cumsum p = 0.9,
/// Cache-Prior lambda = 0.5 with the running delta (module doc).
fn gap_router(which: usize, k: usize) -> RouterSpec {
    let j = default_j(k);
    match which {
        0 => RouterSpec::MaxRank { m: k + 2, j },
        1 => RouterSpec::Cumsum { p: 0.9, j },
        _ => RouterSpec::CachePrior {
            lambda: 0.5,
            j,
            delta: DeltaEstimate::Running,
        },
    }
}

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
                ..ClaimInfo::DEFAULTS
            },
            family: family_small,
            paper: PaperScale::Family(PAPER_FIXED, paper_fixed),
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
                ..ClaimInfo::DEFAULTS
            },
            family: family_small,
            paper: PaperScale::Family(PAPER_FLEXIBLE, paper_flexible),
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
                ..ClaimInfo::DEFAULTS
            },
            family: family_half,
            paper: PaperScale::Family(PAPER_HALF, paper_half),
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
                ..ClaimInfo::DEFAULTS
            },
            family: family_prior,
            paper: PaperScale::Family(PAPER_PRIOR, paper_prior),
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
                repairs: Some("cache/sec48-belady-halves-lru"),
                ..ClaimInfo::DEFAULTS
            },
            family: family_half,
            paper: PaperScale::Family(PAPER_HALF, paper_half),
            check: |i, o| settle(check_belady_below_lru(i, o)),
        },
        CacheClaim {
            info: ClaimInfo {
                id: "cache/sec48-cache-prior-similar",
                paper: PAPER,
                place: "Sec. 4.8, Fig. 9, measured by moe-opt in place of a repair",
                statement: "how close Cache-Prior comes to Belady's misses, which the paper \
                    calls \"similar or even lower\" and shows only in Fig. 9 (absent from the \
                    text): no threshold of the paper's to check, so a measurement, its \
                    distribution over the instances the result",
                measured: "at the lambda of [0, 1] (51 points) with the fewest Cache-Prior + \
                    LRU loads among those losing at most 0.1 of the router mass (\"minimal \
                    perplexity increases\", our reading), those loads / Belady's loads (the \
                    note: the excess miss rate over Belady's)",
                bound: "none (a measurement)",
                family: PRIOR,
                quote: PRIOR_QUOTE,
                kind: ClaimKind::Measurement,
                repairs: Some("cache/sec48-cache-prior-below-belady"),
                ..ClaimInfo::DEFAULTS
            },
            family: family_prior,
            paper: PaperScale::Family(PAPER_PRIOR, paper_prior),
            check: |i, o| settle(check_cache_prior_distance(i, o)),
        },
    ];
    type CheckFn = fn(&CacheInstance, &CheckOptions) -> Check;
    let gaps: [(&'static str, CheckFn); 3] = [
        ("cache/router-gap-max-rank", |i, o| {
            settle(check_router_gap(i, o, 0))
        }),
        ("cache/router-gap-cumsum", |i, o| {
            settle(check_router_gap(i, o, 1))
        }),
        ("cache/router-gap-cache-prior", |i, o| {
            settle(check_router_gap(i, o, 2))
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
                ..ClaimInfo::DEFAULTS
            },
            family: family_gap,
            check,
            paper: PaperScale::Family(PAPER_FLEXIBLE, paper_flexible),
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

/// Tokens of a paper-scale preset trace: one WikiText context (Sec. 4.1: "chunk it into
/// context lengths of 1024").
const CONTEXT: usize = 1024;

/// The models of Table 1, the first four presets, each with the locality knobs under which
/// LRU at C = E/2 misses Table 2's rate ("Original" routing: Mixtral 40 %, Phi 22 %,
/// DeepSeek 28 %, Qwen 35 %). The presets' own knobs were calibrated on the real OLMoE and
/// Switch logs and miss 45.7 % (Mixtral) and 20 % (Qwen) at 4,096 tokens, outside the regime
/// (premise `table2-lru-miss-rate`). Found by hand on a grid of rho and beta, generator seeds
/// 0-3, 1,024 tokens: LRU misses 0.404-0.411 (Mixtral), 0.209-0.233 (Phi), 0.282-0.317
/// (DeepSeek), 0.340-0.364 (Qwen); at 4,096 tokens DeepSeek 0.284-0.311, Qwen 0.343-0.367.
const TABLE1: [(Preset, Locality); 4] = [
    (
        Preset::Mixtral8x7b,
        Locality {
            persistence: 0.3,
            topic_weight: 0.0,
            popularity_skew: 0.03,
        },
    ),
    (
        Preset::Phi35Moe,
        Locality {
            persistence: 0.7,
            topic_weight: 0.0,
            popularity_skew: 0.3,
        },
    ),
    (
        Preset::DeepseekV2Lite,
        Locality {
            persistence: 0.51,
            topic_weight: 0.02,
            popularity_skew: 0.2,
        },
    ),
    (
        Preset::Qwen15Moe,
        Locality {
            persistence: 0.3,
            topic_weight: 0.02,
            popularity_skew: 0.2,
        },
    ),
];

/// The freedom of the paper's routers for top-K: J of Sec. 4.1 (1 for K <= 2, else 2), the
/// others within rank M = K + 2.
fn paper_freedom(k: usize) -> Freedom {
    Freedom {
        top_j: default_j(k),
        max_rank: Some(k + 2),
        min_mass: None,
    }
}

/// Table 1 model `model` (mod 4) as its preset with Table 2's locality (`TABLE1`), one layer
/// of `tokens` tokens at generator seed `seed`: C = E/2, or max(E/4, K) when `quarter` (App.
/// D); fixed routing, or the paper's freedom when `flexible`.
fn table1_layer(
    family: &str,
    model: usize,
    seed: u64,
    tokens: usize,
    quarter: bool,
    flexible: bool,
) -> CacheInstance {
    let (preset, locality) = TABLE1[model % 4];
    let mut config = GeneratorConfig::preset(preset);
    config.layers = 1;
    config.tokens_per_sequence = tokens.div_ceil(config.sequences);
    config.persistence = locality.persistence;
    config.topic_weight = locality.topic_weight;
    config.popularity_skew = locality.popularity_skew;
    let (e, k) = (config.experts, config.top_k);
    let (capacity, size) = if quarter {
        ((e / 4).max(k), "-quarter")
    } else {
        (e / 2, "")
    };
    let freedom = if flexible {
        paper_freedom(k)
    } else {
        Freedom::fixed(k)
    };
    let name = format!("{family}-{preset}-{seed}{size}");
    offline(name, capacity, freedom, one_layer(config, seed))
}

/// The real token logs of ../shared/data/token-traces (README there), each with the preset
/// calibrated on it (its stand-in where the data is absent).
const REAL_LOGS: [(&str, Preset); 3] = [
    ("olmoe_1b7b_0924_warp_decode.jsonl.gz", Preset::Olmoe),
    ("kimi_linear_48b_a3b_warp_decode.jsonl.gz", Preset::Kimi),
    ("switch_base8_encoder_top1.jsonl.gz", Preset::Switch),
];

/// `shared/data/token-traces/FILE` under the nearest ancestor of the working directory, or
/// else of the package's source directory, that has one (../shared in the main checkout).
fn token_log(file: &str) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    cwd.iter()
        .flat_map(|d| d.ancestors())
        .chain(manifest.ancestors())
        .map(|d| d.join("shared/data/token-traces").join(file))
        .find(|p| p.is_file())
}

/// Real log `which` of [`REAL_LOGS`]: its layer `j` mod L, every token, as a one-layer trace
/// cached at C = max(E/2, K), fixed routing; where the file is absent or unreadable, its
/// calibrated preset at generator seed `seed`, named `-standin` so that the substitution
/// shows in every report.
fn real_log(which: usize, j: u64, seed: u64) -> CacheInstance {
    let (file, preset) = REAL_LOGS[which];
    let stem = file.trim_end_matches(".jsonl.gz");
    let read = token_log(file).and_then(|p| import_token_log(&p, &ImportOptions::default()).ok());
    let (trace, name) = match read {
        Some(trace) => (trace, format!("paper-fixed-real-{stem}")),
        None => (
            one_layer(GeneratorConfig::preset(preset), seed),
            format!("paper-fixed-{preset}-{seed}-standin"),
        ),
    };
    let layer = (j % trace.layers.max(1) as u64) as usize;
    let (e, k) = (trace.experts, trace.top_k);
    let whole = CacheInstance {
        layer,
        ..offline(String::new(), (e / 2).max(k), Freedom::fixed(k), trace)
    };
    // The cached layer alone (what every check reads), named after its place in the log.
    let one = layer_trace(&whole);
    offline(
        format!("{name}-layer{layer}"),
        whole.capacity,
        whole.freedom,
        one,
    )
}

/// The `paper-fixed` family at `seed` (`PAPER_FIXED`).
pub fn paper_fixed(seed: u64) -> CacheInstance {
    let (pick, j) = ((seed % 7) as usize, seed / 7);
    if pick < 4 {
        table1_layer("paper-fixed", pick, seed, CONTEXT, j % 2 == 1, false)
    } else {
        real_log(pick - 4, j, seed)
    }
}

/// The `paper-flexible` family at `seed` (`PAPER_FLEXIBLE`).
pub fn paper_flexible(seed: u64) -> CacheInstance {
    table1_layer(
        "paper-flexible",
        (seed % 4) as usize,
        seed,
        CONTEXT,
        false,
        true,
    )
}

/// The `paper-half` family at `seed` (`PAPER_HALF`).
pub fn paper_half(seed: u64) -> CacheInstance {
    table1_layer(
        "paper-half",
        (seed % 4) as usize,
        seed,
        4 * CONTEXT,
        false,
        false,
    )
}

/// The `paper-prior` family at `seed` (`PAPER_PRIOR`).
pub fn paper_prior(seed: u64) -> CacheInstance {
    table1_layer(
        "paper-prior",
        (seed % 4) as usize,
        seed,
        CONTEXT,
        (seed / 4) % 2 == 1,
        false,
    )
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

/// What an exact method established about OPT (loads): proved (`lower` = `upper` = OPT), or,
/// when the MILP stopped at its limit, OPT in [`lower`, `upper`].
#[derive(Debug, Clone, PartialEq)]
struct Reference {
    /// A proved lower bound: OPT where proved, else the MILP's best bound rounded up (loads
    /// are whole), 0 without one.
    lower: u64,
    /// Loads of a feasible schedule, re-evaluated by the evaluator: OPT where proved.
    upper: Option<u64>,
    /// How: `exhaustive`, or the MILP's status.
    status: String,
    /// Whether `lower` is OPT itself.
    proved: bool,
}

impl Reference {
    /// "OPT = x" or "OPT in [a, b] (status)" for the notes.
    fn describe(&self) -> String {
        match (self.proved, self.upper) {
            (true, _) => format!("{} ({})", self.lower, self.status),
            (false, Some(u)) => format!("in [{}, {u}] ({})", self.lower, self.status),
            (false, None) => format!(">= {} ({}, no incumbent)", self.lower, self.status),
        }
    }
}

/// At most this many seconds for the MILPs of claims 2 and 5, whatever `--time-limit` says
/// (module doc: their pass is certified by the MILP's start; the time buys only the other end
/// of the gap). Keeps `verify --scale paper` of paper 002 near 10 minutes on 2 cores.
const SANITY_MILP_SECONDS: f64 = 8.0;

/// `options` with the time limit capped at `SANITY_MILP_SECONDS`.
fn sanity_limit(options: &CheckOptions) -> CheckOptions {
    let mut capped = options.clone();
    capped.solve.time_limit_s = Some(
        options
            .solve
            .time_limit_s
            .map_or(SANITY_MILP_SECONDS, |s| s.min(SANITY_MILP_SECONDS)),
    );
    capped
}

/// A lower bound on the flexible optimum (module doc): Belady's loads on the stream of every
/// step's forced (top-J) experts at capacity C.
fn forced_lower_bound(instance: &CacheInstance) -> u64 {
    let mut forced = Requests::new(instance.experts());
    for t in 0..instance.steps() {
        forced.push(&instance.allowed(t, true).forced);
    }
    belady_schedule(instance.capacity, &forced).0
}

/// OPT of the fixed (`flexible` false) or flexible problem: exhaustive where it fits, else the
/// MILP started from `start` (Belady's schedule when `None`), with its bounds when it stops
/// at the time limit (for the flexible problem, the larger of the MILP's bound and
/// `forced_lower_bound`).
fn optimum(
    instance: &CacheInstance,
    flexible: bool,
    options: &CheckOptions,
    start: Option<&Schedule>,
) -> Result<Reference, Box<Check>> {
    let method = match (fits_exhaustive(instance), flexible) {
        (true, false) => OfflineMethod::ExhaustiveFixed,
        (true, true) => OfflineMethod::ExhaustiveFlexible,
        (false, false) => OfflineMethod::MilpFixed,
        (false, true) => OfflineMethod::MilpFlexible,
    };
    let r = run_from(instance, method, &options.solve, start)
        .map_err(|e| inconclusive(format!("{}: {e}", method.name())))?
        .report;
    let status = r.status.unwrap_or_default();
    Ok(match (r.proved_optimal, r.loads) {
        (true, Some(l)) => Reference {
            lower: l,
            upper: Some(l),
            status,
            proved: true,
        },
        (_, upper) => {
            // Loads are whole: OPT >= the bound rounded up (1e-6: HiGHS's bound in floating
            // point, on objectives of at most a few thousand loads).
            let milp = r
                .bound_loads
                .map_or(0, |b| (b - 1e-6).ceil().max(0.0) as u64);
            let forced = if flexible {
                forced_lower_bound(instance)
            } else {
                0
            };
            Reference {
                lower: milp.max(forced),
                upper,
                status,
                proved: false,
            }
        }
    })
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

/// A proved lower bound on an optimum's loads, at least 1: every schedule loads some expert at
/// its first step, the cache starting empty.
fn least(lower: u64) -> f64 {
    lower.max(1) as f64
}

/// `sec48-belady-optimal`: Belady's loads against the fixed-routing optimum, which the MILP
/// (or the exhaustive search) establishes independently of Belady: proved, or when the MILP
/// stops, a pass from its bound (OPT >= lower = Belady, and Belady's schedule is feasible, so
/// Belady = OPT) and a fail from its incumbent (a schedule with fewer loads than Belady).
fn check_belady_optimal(instance: &CacheInstance, options: &CheckOptions) -> Checked {
    let opt = optimum(instance, false, options, None)?;
    let belady = belady_loads(instance)?;
    Ok(judge_belady_optimal(instance, belady, &opt))
}

/// The verdict of `sec48-belady-optimal` from Belady's loads and what the MILP established.
fn judge_belady_optimal(instance: &CacheInstance, belady: u64, opt: &Reference) -> Check {
    let note = |how: &str| {
        format!(
            "Belady {belady} loads, optimum {} (T = {}, E = {}, K = {}, C = {}){how}",
            opt.describe(),
            instance.steps(),
            instance.experts(),
            instance.top_k(),
            instance.capacity
        )
    };
    let witness = || Some(json!({ "requests": instance.requests() }));
    if opt.proved {
        let outcome = Outcome::fail_if(belady != opt.lower);
        return Check {
            ratio: ratio(belady, opt.lower),
            bound: Some(1.0),
            witness: (outcome == Outcome::Fail).then(witness).flatten(),
            margin: Some(-(belady.abs_diff(opt.lower) as f64)),
            ..Check::against_optimum(
                outcome,
                belady as f64,
                opt.lower as f64,
                opt.status.clone(),
                note(""),
            )
        };
    }
    let (outcome, reference, certificate, how) = match opt.upper {
        _ if opt.lower >= belady => (
            Outcome::Pass,
            opt.lower,
            Certificate::Bound,
            ": the MILP's bound reaches Belady's loads",
        ),
        Some(u) if u < belady => (
            Outcome::Fail,
            u,
            Certificate::Incumbent,
            ": the MILP's incumbent loads fewer",
        ),
        _ => return Check::inconclusive(note(": the MILP's bounds do not decide")),
    };
    // A pass proves OPT = Belady (the bound reaches its loads): ratio 1. A fail brackets OPT
    // in [lower, incumbent], so Belady / OPT lies between Belady over each.
    let ratio_interval = (outcome == Outcome::Fail)
        .then(|| {
            opt.upper
                .map(|u| [belady as f64 / u as f64, belady as f64 / least(opt.lower)])
        })
        .flatten();
    Check {
        value: Some(belady as f64),
        reference: Some(reference as f64),
        reference_kind: ReferenceKind::Bound,
        solver_status: Some(opt.status.clone()),
        ratio: ratio(belady, reference),
        bound: Some(1.0),
        witness: (outcome == Outcome::Fail).then(witness).flatten(),
        margin: Some(-(belady.abs_diff(reference) as f64)),
        lower: Some(opt.lower as f64),
        upper: opt.upper.map(|u| u as f64),
        certificate: Some(certificate),
        ratio_interval,
        ..Check::new(outcome, note(how))
    }
}

/// `sec48-flexible-below-belady`: OPT_flex <= Belady's loads, Belady's loads being the proved
/// fixed-routing optimum (the exchange argument of [`super::belady`]). The MILP starts from
/// Belady's schedule, feasible for it; when it stops, its incumbent (re-evaluated) certifies a
/// pass and its bound above Belady a fail.
fn check_flexible_below_belady(instance: &CacheInstance, options: &CheckOptions) -> Checked {
    let opt = optimum(instance, true, &sanity_limit(options), None)?;
    let belady = belady_loads(instance)?;
    Ok(judge_flexible_below_belady(instance, belady, &opt))
}

/// The verdict of `sec48-flexible-below-belady` from Belady's loads and OPT_flex's bounds.
fn judge_flexible_below_belady(instance: &CacheInstance, belady: u64, opt: &Reference) -> Check {
    let (value, outcome, certificate) = match opt.upper {
        _ if opt.proved => (
            opt.lower,
            Outcome::fail_if(opt.lower > belady),
            Certificate::Optimum,
        ),
        Some(u) if u <= belady => (u, Outcome::Pass, Certificate::Bound),
        _ if opt.lower > belady => (opt.lower, Outcome::Fail, Certificate::Bound),
        _ => {
            return Check::inconclusive(format!(
                "flexible optimum {} vs Belady {belady}: undecided",
                opt.describe()
            ))
        }
    };
    // Where the MILP stopped, OPT_flex lies in [lower, upper]: so does OPT_flex / Belady.
    let ratio_interval = (!opt.proved && belady > 0)
        .then(|| {
            let upper = opt.upper?;
            Some([
                opt.lower as f64 / belady as f64,
                upper as f64 / belady as f64,
            ])
        })
        .flatten();
    let note = format!(
        "flexible optimum {} vs Belady {belady} (J = {}, M = {:?}): {}",
        opt.describe(),
        instance.freedom.top_j,
        instance.freedom.max_rank,
        match ratio_interval {
            Some([lo, hi]) => format!(
                "{:.1}% to {:.1}% fewer",
                100.0 * (1.0 - hi),
                100.0 * (1.0 - lo)
            ),
            None => format!(
                "{:.1}% fewer",
                100.0 * (1.0 - ratio(value, belady).unwrap_or(1.0))
            ),
        }
    );
    Check {
        ratio: ratio(value, belady),
        bound: Some(1.0),
        margin: Some(belady as f64 - value as f64),
        certificate: Some(certificate),
        ratio_interval,
        ..Check::against_optimum(
            outcome,
            value as f64,
            belady as f64,
            opt.status.clone(),
            note,
        )
    }
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

/// Cache-Prior (J of Sec. 4.2, the running delta) with LRU at each lambda of the grid (50
/// points of [0, 1]) in order, each `visit`ed with (lambda, loads, mass kept) until `visit`
/// says stop; J. Inconclusive on a stream too short for a miss rate.
fn replay_cache_prior(
    instance: &CacheInstance,
    mut visit: impl FnMut(f64, u64, f64) -> bool,
) -> Result<usize, Box<Check>> {
    too_short(instance)?;
    let j = default_j(instance.top_k());
    let table = RankTable::new(&layer_trace(instance));
    let options = ReplayOptions {
        per_layer_stats: false,
        ..ReplayOptions::default()
    };
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
        if !visit(lambda, loads, kept) {
            break;
        }
    }
    Ok(j)
}

fn sweep_cache_prior(
    instance: &CacheInstance,
    accept: impl Fn(u64, u64) -> bool,
) -> Result<PriorSweep, Box<Check>> {
    too_short(instance)?;
    let belady = belady_loads(instance)?;
    let (mut found, mut best) = (None, None::<(u64, f64)>);
    let j = replay_cache_prior(instance, |lambda, loads, kept| {
        if best.is_none_or(|(l, _)| loads < l) || accept(loads, belady) {
            best = Some((loads, lambda));
        }
        if accept(loads, belady) {
            found = Some((lambda, loads, kept));
        }
        found.is_none()
    })?;
    let best = best.expect("the grid has 50 points");
    Ok(PriorSweep {
        belady,
        j,
        found,
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

/// The Cache-Prior claim's measurement (module doc, claim 7): at the lambda with the fewest
/// loads among those losing at most [`SMALL_MASS_LOSS`] of the router's mass (the first on
/// ties; lambda = 0, the original routing, loses nothing), Cache-Prior's loads against
/// Belady's (value and ratio; the note gives the excess miss rate).
fn check_cache_prior_distance(instance: &CacheInstance, _options: &CheckOptions) -> Checked {
    let requests = (instance.steps() * instance.top_k()) as f64;
    too_short(instance)?;
    let belady = belady_loads(instance)?;
    let mut best: Option<(f64, u64, f64)> = None;
    let j = replay_cache_prior(instance, |lambda, loads, kept| {
        if 1.0 - kept <= SMALL_MASS_LOSS && best.is_none_or(|(_, l, _)| loads < l) {
            best = Some((lambda, loads, kept));
        }
        true
    })?;
    let (lambda, loads, kept) =
        best.ok_or_else(|| inconclusive("no lambda of the grid loses at most 0.1 of the mass"))?;
    let excess = (loads as f64 - belady as f64) / requests;
    let note = format!(
        "Cache-Prior lambda = {lambda:.4} (J = {j}): {loads} loads against Belady's {belady} \
         ({excess:+.4} of the requests), router mass lost {:.4} (C = {} of E = {})",
        1.0 - kept,
        instance.capacity,
        instance.experts()
    );
    Ok(Check {
        ratio: ratio(loads, belady),
        ..Check::against_optimum(
            Outcome::Measured,
            loads as f64,
            belady as f64,
            "belady",
            note,
        )
    })
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

/// A router's gap (module doc, claims 5): its loads against the flexible optimum at the
/// freedom it used. The MILP starts from the router's own schedule or Belady's, whichever
/// loads fewer (both are feasible at that freedom); when it stops, its incumbent at most the
/// router's loads certifies the pass, and its bound above them would be a fail.
fn check_router_gap(instance: &CacheInstance, options: &CheckOptions, which: usize) -> Checked {
    let spec = gap_router(which, instance.top_k());
    let run = run(instance, OfflineMethod::Routed(spec), &options.solve)
        .map_err(|e| inconclusive(format!("{spec}: {e}")))?;
    let report = run.report;
    let (Some(loads), Some(top_j), Some(schedule)) =
        (report.loads, report.used_top_j, run.schedule)
    else {
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
    let belady = belady_loads(instance)?;
    let start = (loads < belady).then_some(&schedule);
    let opt = optimum(&used, true, &sanity_limit(options), start)?;
    let note = format!(
        "{spec} + LRU: {loads} loads (mass kept {}); flexible optimum {} at its used \
             freedom J = {top_j}, M = {} (T = {}, E = {}, C = {})",
        report
            .mass_kept_mean
            .map_or("-".into(), |m| format!("{m:.4}")),
        opt.describe(),
        report.used_max_rank.map_or("-".into(), |m| m.to_string()),
        instance.steps(),
        instance.experts(),
        instance.capacity
    );
    Ok(judge_router_gap(spec, loads, &opt, note))
}

/// The verdict of a gap claim from the router's loads and OPT_flex's bounds at its freedom.
fn judge_router_gap(spec: RouterSpec, loads: u64, opt: &Reference, note: String) -> Check {
    let witness = |outcome: Outcome| {
        (outcome == Outcome::Fail).then(|| json!({ "router": spec.to_string() }))
    };
    if opt.proved {
        let outcome = Outcome::fail_if(loads < opt.lower);
        return Check {
            ratio: ratio(loads, opt.lower),
            bound: Some(1.0),
            witness: witness(outcome),
            margin: Some(loads as f64 - opt.lower as f64),
            ..Check::against_optimum(
                outcome,
                loads as f64,
                opt.lower as f64,
                opt.status.clone(),
                note,
            )
        };
    }
    let (outcome, reference) = match opt.upper {
        Some(u) if u <= loads => (Outcome::Pass, u),
        _ if opt.lower > loads => (Outcome::Fail, opt.lower),
        _ => return Check::inconclusive(format!("{note}: undecided")),
    };
    // OPT_flex in [lower, upper]: the gap loads / OPT_flex between loads over each.
    let ratio_interval = opt
        .upper
        .map(|u| [loads as f64 / u as f64, loads as f64 / least(opt.lower)]);
    Check {
        value: Some(loads as f64),
        reference: Some(reference as f64),
        reference_kind: ReferenceKind::Bound,
        solver_status: Some(opt.status.clone()),
        ratio: ratio(loads, reference),
        bound: Some(1.0),
        witness: witness(outcome),
        margin: Some(loads as f64 - reference as f64),
        lower: Some(opt.lower as f64),
        upper: opt.upper.map(|u| u as f64),
        certificate: Some(Certificate::Bound),
        ratio_interval,
        ..Check::new(outcome, note)
    }
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
            let c =
                check_router_gap(&rotating_second(4, 2, 6, 1.0 / 64.0), &options, which).unwrap();
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
}
