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
//! * `small`: [`GeneratorConfig::synthetic`](crate::cache::generate::GeneratorConfig::synthetic)
//!   with the calibrated localities in turn (OLMoE, Kimi, Switch by seed mod 3), sized for the
//!   exhaustive search.
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
//!
//! This module holds the claim table; `instances` builds the families, `checks` the checks.

use formulations::cache::offline::CacheInstance;

use super::pareto::default_j;
use super::routers::{DeltaEstimate, RouterSpec};
use crate::claims::{Check, CheckOptions, Claim, ClaimInfo, ClaimKind, PaperScale};

mod checks;
mod instances;
#[cfg(test)]
mod tests;

use checks::*;
pub use instances::{
    family_gap, family_half, family_prior, family_small, paper_fixed, paper_flexible, paper_half,
    paper_prior,
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
pub fn table() -> Vec<CacheClaim> {
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
