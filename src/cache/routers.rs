//! The cache-aware routers of paper 002 (Sec. 3 and 4.2) and the loop that replays a trace
//! "route, then access": per token and layer the router picks K experts looking at the cache,
//! then the cache loads the ones it misses.
//!
//! * Pruning (Sec. 4.2): keep the top `h` experts of the original ranking, drop ranks >= h
//!   (0-based ranks, so `h` experts run). The miss rate is normalised by K, not by the h experts
//!   requested ("normalized using k for a fair comparison"): see [`RoutedReplay::miss_rate`].
//! * Max-Rank (eqs. (5)-(7), Alg. 1): `promote(r[:J]; promote(r[:M] ∩ C; r))`, then the first
//!   K. Appendix B's worked example is a test.
//! * Cumsum threshold (eq. (8), Alg. 2): M is the least i with `sum_{j<=i} G(x)[r_j] >= p`
//!   (router probabilities over all E experts, highest first), then Max-Rank with that M.
//! * Cache-Prior (eqs. (9)-(10)): `z' = z + lambda * delta_avg * m~`, where `m~` marks the cached
//!   experts and the top-J of the original ranking; the top K of z' are chosen. The weights
//!   (and every quality proxy) use the original logits.
//!
//! ## Readings where the paper is ambiguous
//! * The original ranking r: the trace's selected experts first (in rank order), then the
//!   others by decreasing logit, ties by lower id. With logits, the selected experts are sorted
//!   by decreasing logit, ties kept in listed order; without logits the listed order is r.
//! * Max-Rank with `M <= K` chooses exactly the original top-K set (only the order changes), so
//!   the paper's grid "0, 1, ..., K" for Max-Rank cannot mean M itself; [`crate::cache::pareto`]
//!   reads it as `M = K + i` for `i = 0..=K` (capped at E) and offers all of `K..=E` as an option.
//! * Pruning's knob h counts the experts kept (0-based "ranked >= h" discarded); h = 0 would run
//!   no routed expert at all, so `h` must be in `1..=K` (h = K is the original routing).
//! * Cumsum with p = 1 may never reach the threshold in floating point: M is capped at E.
//! * delta_avg (eq. (10)) "estimated using a running average over sequences and tokens": by
//!   default the running mean of `max(z) - min(z)` over this layer's tokens so far, the current
//!   one included ([`DeltaEstimate::Running`]); [`DeltaEstimate::Trace`] uses the mean over the
//!   whole trace (an offline calibration).
//! * Ties in z' are broken by the original rank, so lambda = 0 reproduces the original routing.
//! * The order of a step's experts given to the cache: paper 002 Sec. 4.2 evicts "experts with
//!   higher router weights first", so by default the chosen experts are handed to the policy in
//!   original rank order (router weight), not in the new ranking;
//!   [`ReplayOptions::order_by_weight`] = false hands them over in the new ranking.

use std::fmt;
use std::str::FromStr;

use formulations::cache::model::{Routing, Trace};
use formulations::Error;
use serde::Serialize;

use super::policies::Scope;
use super::policy::{combine, CacheStats, Policy, Scores, Simulation};
use super::quality::{Quality, QualityAccumulator};
use super::router::{CacheView, Router, Row};

/// Ordered promotion, eq. (5): `subset ⊕ (all \ subset)`, keeping the order of both operands.
/// The literal definition, used to state Max-Rank (eq. (7)) in full; the replay uses
/// [`max_rank_select`], which gives the same first K without building the ranking.
pub fn promote(subset: &[u32], all: &[u32]) -> Vec<u32> {
    let mut out = subset.to_vec();
    out.extend(all.iter().filter(|e| !subset.contains(e)));
    out
}

/// The full Max-Rank ranking of eq. (7) / Alg. 1: `promote(r[:J]; promote(r[:M] ∩ C; r))`.
///
/// # Complexity
/// n = `r.len()`. Time: O(n (M + J)), the promotions' membership tests being linear; M calls
/// of `cached`. Memory: O(n). The replay's [`max_rank_select`] is O(n).
///
/// # Examples
/// ```
/// use moe_opt::cache::routers::max_rank_ranking;
///
/// // Ranking 3, 1, 0, 2; experts 0 and 2 cached; M = 3, J = 1: the top expert 3 stays first,
/// // then the cached 0 (within the top 3), then the rest in rank order (2 is cached but
/// // ranked below M).
/// let cached = |e: u32| e == 0 || e == 2;
/// assert_eq!(max_rank_ranking(&[3, 1, 0, 2], 3, 1, cached), vec![3, 0, 1, 2]);
/// ```
pub fn max_rank_ranking(r: &[u32], m: usize, j: usize, cached: impl Fn(u32) -> bool) -> Vec<u32> {
    let in_cache: Vec<u32> = r[..m.min(r.len())]
        .iter()
        .copied()
        .filter(|&e| cached(e))
        .collect();
    let first = promote(&in_cache, r);
    promote(&r[..j.min(r.len())], &first)
}

/// The first K of the Max-Rank ranking (eq. (7)) without building it: r\[:J\], then the cached
/// experts of r[J..M] in rank order, then the rest of r in rank order. `order` is r.
///
/// # Complexity
/// n = `order.len()` ranked experts. Time: O(n) calls of `is_cached` at most (stops once K are
/// chosen). Memory: O(K) in `chosen`.
///
/// # Examples
/// Appendix B's worked example: r = E1..E6, C = {E3, E4, E6}, M = 4, K = 2, J = 1. r\[:4\] ∩ C =
/// [E3, E4], so the ranking is [E1, E3, E4, E2, E5, E6] and the top 2 are E1 and E3.
/// ```
/// use moe_opt::cache::router::CacheView;
/// use moe_opt::cache::routers::max_rank_select;
///
/// struct Cache(Vec<u32>);
/// impl CacheView for Cache {
///     fn is_cached(&self, e: u32) -> bool {
///         self.0.contains(&e)
///     }
/// }
/// let mut chosen = Vec::new();
/// max_rank_select(&[1, 2, 3, 4, 5, 6], 2, 4, 1, &Cache(vec![3, 4, 6]), &mut chosen);
/// assert_eq!(chosen, vec![1, 3]);
/// ```
pub fn max_rank_select(
    order: &[u16],
    k: usize,
    m: usize,
    j: usize,
    cache: &impl CacheView,
    chosen: &mut Vec<u32>,
) {
    chosen.clear();
    let j = j.min(k).min(order.len());
    let m = m.min(order.len());
    chosen.extend(order[..j].iter().map(|&e| e as u32));
    for &e in order.get(j..m).unwrap_or(&[]) {
        if chosen.len() == k {
            return;
        }
        if cache.is_cached(e as u32) {
            chosen.push(e as u32);
        }
    }
    for (i, &e) in order.iter().enumerate().skip(j) {
        if chosen.len() == k {
            return;
        }
        if !(i < m && cache.is_cached(e as u32)) {
            chosen.push(e as u32);
        }
    }
}

/// M of eq. (8) / Alg. 2 lines 1-6: the least i with `sum_{j<=i} p[r_j] >= p`, capped at the
/// number of experts ranked. `probs` are router probabilities by expert id.
///
/// # Complexity
/// Time: O(M), M the result (at most `order.len()`). Memory: O(1).
///
/// # Examples
/// ```
/// use moe_opt::cache::routers::cumsum_max_rank;
///
/// // Ranked 2, 0, 1, 3 with probabilities 0.5, 0.25, 0.125, 0.125: the prefix sums are 0.5,
/// // 0.75, 0.875, 1, so p = 0.7 needs M = 2 and p = 0.5 only M = 1.
/// let probs = [0.25, 0.125, 0.5, 0.125];
/// assert_eq!(cumsum_max_rank(&[2, 0, 1, 3], &probs, 0.7), 2);
/// assert_eq!(cumsum_max_rank(&[2, 0, 1, 3], &probs, 0.5), 1);
/// ```
pub fn cumsum_max_rank(order: &[u16], probs: &[f32], p: f64) -> usize {
    let mut cum = 0.0f64;
    let mut m = 0;
    while cum < p && m < order.len() {
        cum += probs[order[m] as usize] as f64;
        m += 1;
    }
    m
}

/// How delta_avg of eq. (10) is estimated (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeltaEstimate {
    /// Running mean of the logit range over this layer's tokens so far, current one included.
    Running,
    /// Mean logit range of this layer over the whole trace.
    Trace,
}

/// A router and its knob, as named on the command line (`top-k`, `pruning:h=2`,
/// `max-rank:m=4,j=1`, `cumsum:p=0.6,j=1`, `cache-prior:lambda=0.5,j=1[,delta=trace]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "router", rename_all = "kebab-case")]
pub enum RouterSpec {
    /// The original routing.
    TopK,
    /// Keep the top h experts (Sec. 4.2).
    Pruning {
        /// Experts kept, 1..=K.
        h: usize,
    },
    /// Alg. 1.
    MaxRank {
        /// Max rank M: cached experts among the top M are promoted.
        m: usize,
        /// Top J always kept.
        j: usize,
    },
    /// Alg. 2.
    Cumsum {
        /// Cumulative probability threshold, in [0, 1].
        p: f64,
        /// Top J always kept.
        j: usize,
    },
    /// Eqs. (9)-(10).
    CachePrior {
        /// Weight of the cache bias, >= 0 (the paper sweeps [0, 1]).
        lambda: f64,
        /// Top J added to the boosted mask.
        j: usize,
        /// How delta_avg is estimated.
        delta: DeltaEstimate,
    },
}

impl RouterSpec {
    /// The router family: `top-k`, `pruning`, `max-rank`, `cumsum` or `cache-prior`.
    pub fn family(&self) -> &'static str {
        match self {
            RouterSpec::TopK => "top-k",
            RouterSpec::Pruning { .. } => "pruning",
            RouterSpec::MaxRank { .. } => "max-rank",
            RouterSpec::Cumsum { .. } => "cumsum",
            RouterSpec::CachePrior { .. } => "cache-prior",
        }
    }

    /// The knob's value (h, M, p or lambda; 0 for top-k).
    pub fn knob(&self) -> f64 {
        match *self {
            RouterSpec::TopK => 0.0,
            RouterSpec::Pruning { h } => h as f64,
            RouterSpec::MaxRank { m, .. } => m as f64,
            RouterSpec::Cumsum { p, .. } => p,
            RouterSpec::CachePrior { lambda, .. } => lambda,
        }
    }

    /// Whether the router needs the full ranking over all E experts (the trace's logits).
    pub fn needs_logits(&self) -> bool {
        matches!(
            self,
            RouterSpec::MaxRank { .. } | RouterSpec::Cumsum { .. } | RouterSpec::CachePrior { .. }
        )
    }

    /// Checks the knobs against K; the reason names the knob.
    pub fn check(&self, top_k: usize) -> Result<(), String> {
        let j_ok = |j: usize| {
            if j > top_k {
                Err(format!("j must be at most top_k = {top_k}, got {j}"))
            } else {
                Ok(())
            }
        };
        match *self {
            RouterSpec::TopK => Ok(()),
            RouterSpec::Pruning { h } => {
                if (1..=top_k).contains(&h) {
                    Ok(())
                } else {
                    Err(format!(
                        "h must be in 1..={top_k} (top_k; h = 0 would run no routed expert), got {h}"
                    ))
                }
            }
            RouterSpec::MaxRank { j, .. } => j_ok(j),
            RouterSpec::Cumsum { p, j } => {
                if !(0.0..=1.0).contains(&p) {
                    return Err(format!("p must be in [0, 1], got {p}"));
                }
                j_ok(j)
            }
            RouterSpec::CachePrior { lambda, j, .. } => {
                if !(lambda.is_finite() && lambda >= 0.0) {
                    return Err(format!("lambda must be finite and >= 0, got {lambda}"));
                }
                j_ok(j)
            }
        }
    }
}

impl fmt::Display for RouterSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RouterSpec::TopK => write!(f, "top-k"),
            RouterSpec::Pruning { h } => write!(f, "pruning:h={h}"),
            RouterSpec::MaxRank { m, j } => write!(f, "max-rank:m={m},j={j}"),
            RouterSpec::Cumsum { p, j } => write!(f, "cumsum:p={p},j={j}"),
            RouterSpec::CachePrior { lambda, j, delta } => {
                write!(f, "cache-prior:lambda={lambda},j={j}")?;
                if delta == DeltaEstimate::Trace {
                    write!(f, ",delta=trace")?;
                }
                Ok(())
            }
        }
    }
}

impl FromStr for RouterSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (family, args) = s.split_once(':').unwrap_or((s, ""));
        let mut kv = Vec::new();
        for part in args.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("router {s:?}: knob {part:?} must be name=value"))?;
            kv.push((k.trim(), v.trim()));
        }
        let known: &[&str] = match family {
            "top-k" => &[],
            "pruning" => &["h"],
            "max-rank" => &["m", "j"],
            "cumsum" => &["p", "j"],
            "cache-prior" => &["lambda", "j", "delta"],
            _ => {
                return Err(format!(
                    "unknown router {family:?}; expected top-k, pruning, max-rank, cumsum or cache-prior"
                ))
            }
        };
        if let Some((k, _)) = kv.iter().find(|(k, _)| !known.contains(k)) {
            return Err(format!(
                "router {family}: unknown knob {k:?}; expected {known:?}"
            ));
        }
        let get = |name: &str| kv.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        let need = |name: &str| {
            get(name).ok_or_else(|| format!("router {family}: knob {name} is required"))
        };
        let int = |name: &str| -> Result<usize, String> {
            need(name)?
                .parse()
                .map_err(|e| format!("router {family}: knob {name}: {e}"))
        };
        let float = |name: &str| -> Result<f64, String> {
            need(name)?
                .parse()
                .map_err(|e| format!("router {family}: knob {name}: {e}"))
        };
        Ok(match family {
            "top-k" => RouterSpec::TopK,
            "pruning" => RouterSpec::Pruning { h: int("h")? },
            "max-rank" => RouterSpec::MaxRank {
                m: int("m")?,
                j: int("j")?,
            },
            "cumsum" => RouterSpec::Cumsum {
                p: float("p")?,
                j: int("j")?,
            },
            _ => RouterSpec::CachePrior {
                lambda: float("lambda")?,
                j: int("j")?,
                delta: match get("delta") {
                    None | Some("running") => DeltaEstimate::Running,
                    Some("trace") => DeltaEstimate::Trace,
                    Some(other) => {
                        return Err(format!(
                            "router cache-prior: delta must be running or trace, got {other:?}"
                        ))
                    }
                },
            },
        })
    }
}

/// Writes the row of `routing` into the buffers (resized here): the ranking of the module doc,
/// ranks, probabilities; returns the logit range.
fn fill_row(
    routing: &Routing,
    experts: usize,
    order: &mut Vec<u16>,
    rank_of: &mut Vec<u16>,
    probs: &mut Vec<f32>,
) -> f32 {
    order.clear();
    rank_of.clear();
    rank_of.resize(experts, u16::MAX);
    probs.clear();
    let mut range = 0.0;
    if let Some(z) = &routing.logits {
        let by_logit = |a: &u16, b: &u16| z[*b as usize].total_cmp(&z[*a as usize]);
        order.extend(routing.experts.iter().map(|&e| e as u16));
        order.sort_by(by_logit);
        let selected = order.len();
        order.extend((0..experts as u16).filter(|e| !routing.experts.contains(&(*e as u32))));
        order[selected..].sort_by(|a, b| by_logit(a, b).then(a.cmp(b)));
        let p = formulations::cache::model::softmax(z);
        probs.extend(p.iter().map(|&x| x as f32));
        let (lo, hi) = z
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        range = hi - lo;
    } else {
        order.extend(routing.experts.iter().map(|&e| e as u16));
        if let Some(w) = &routing.weights {
            probs.resize(experts, 0.0);
            for (&e, &x) in routing.experts.iter().zip(w) {
                probs[e as usize] = x;
            }
        }
    }
    for (i, &e) in order.iter().enumerate() {
        rank_of[e as usize] = i as u16;
    }
    range
}

/// Router mass of the top K of `order` (0 without probabilities).
fn top_mass(order: &[u16], probs: &[f32], k: usize) -> f64 {
    if probs.is_empty() {
        return 0.0;
    }
    order[..k].iter().map(|&e| probs[e as usize] as f64).sum()
}

/// A trace's routings in the form routers read, built once and shared by every replay of a
/// sweep: 12 bytes per expert and routing with logits (ranking, ranks, probabilities, logits).
#[derive(Debug, Clone)]
pub struct RankTable {
    experts: usize,
    top_k: usize,
    layers: usize,
    tokens: usize,
    ranked: bool,
    has_logits: bool,
    stride: usize,
    order: Vec<u16>,
    rank_of: Vec<u16>,
    probs: Vec<f32>,
    range: Vec<f32>,
    top_mass: Vec<f64>,
    mean_range: Vec<f64>,
    logits: Vec<f32>,
}

impl RankTable {
    /// Builds the table of a (validated) trace.
    pub fn new(trace: &Trace) -> Self {
        let (e, l) = (trace.experts, trace.layers);
        let has_logits = trace.has_logits();
        let has_probs = has_logits || trace.has_weights();
        let stride = if has_logits { e } else { trace.top_k };
        let rows = trace.tokens.len() * l;
        let mut table = RankTable {
            experts: e,
            top_k: trace.top_k,
            layers: l,
            tokens: trace.tokens.len(),
            ranked: trace.ranked || has_logits,
            has_logits,
            stride,
            order: Vec::with_capacity(rows * stride),
            rank_of: Vec::with_capacity(rows * e),
            probs: Vec::with_capacity(if has_probs { rows * e } else { 0 }),
            range: Vec::with_capacity(rows),
            top_mass: Vec::with_capacity(rows),
            mean_range: vec![0.0; l],
            logits: Vec::new(),
        };
        let (mut order, mut rank_of, mut probs) = (Vec::new(), Vec::new(), Vec::new());
        for token in &trace.tokens {
            for (layer, routing) in token.layers.iter().enumerate() {
                let range = fill_row(routing, e, &mut order, &mut rank_of, &mut probs);
                table.order.extend_from_slice(&order[..stride]);
                table.rank_of.extend_from_slice(&rank_of);
                if has_probs {
                    table.probs.extend_from_slice(&probs);
                }
                table.top_mass.push(top_mass(&order, &probs, trace.top_k));
                table.range.push(range);
                table.mean_range[layer] += range as f64;
            }
        }
        for m in &mut table.mean_range {
            *m /= trace.tokens.len() as f64;
        }
        if has_logits {
            table.logits.reserve_exact(rows * e);
            for r in trace.routings() {
                table
                    .logits
                    .extend_from_slice(r.logits.as_deref().unwrap_or_default());
            }
        }
        table
    }

    /// E.
    pub fn experts(&self) -> usize {
        self.experts
    }

    /// K.
    pub fn top_k(&self) -> usize {
        self.top_k
    }

    /// MoE layers.
    pub fn layers(&self) -> usize {
        self.layers
    }

    /// Tokens.
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// Whether every routing has logits (the full ranking).
    pub fn has_logits(&self) -> bool {
        self.has_logits
    }

    /// Whether router probabilities are known (logits or weights everywhere).
    pub fn has_probs(&self) -> bool {
        !self.probs.is_empty()
    }

    /// Whether ranks are known (a ranked trace, or logits).
    pub fn ranked(&self) -> bool {
        self.ranked
    }

    /// The mean logit range of a layer over the trace (eq. (10) offline).
    pub fn mean_range(&self, layer: usize) -> f64 {
        self.mean_range[layer]
    }

    /// The row of token `t` at `layer`.
    pub fn row(&self, t: usize, layer: usize) -> Row<'_> {
        let i = t * self.layers + layer;
        let e = self.experts;
        Row {
            top_k: self.top_k,
            order: &self.order[i * self.stride..(i + 1) * self.stride],
            rank_of: &self.rank_of[i * e..(i + 1) * e],
            probs: if self.probs.is_empty() {
                &[]
            } else {
                &self.probs[i * e..(i + 1) * e]
            },
            logits: self.has_logits.then(|| &self.logits[i * e..(i + 1) * e]),
            range: self.range[i],
            top_mass: self.top_mass[i],
        }
    }

    /// Whether `spec` can run on this table; the reason says what the trace lacks.
    pub fn supports(&self, spec: &RouterSpec) -> Result<(), String> {
        spec.check(self.top_k)?;
        if spec.needs_logits() && !self.has_logits {
            return Err(format!(
                "{} needs the router's logits over all {} experts (the full ranking); this \
                 trace has only the selected experts (real token logs carry no logits)",
                spec.family(),
                self.experts
            ));
        }
        if matches!(spec, RouterSpec::Pruning { .. }) && !self.ranked {
            return Err(
                "pruning needs the rank order of the selected experts; this trace lists them \
                 by id (ranked = false) and has no logits"
                    .into(),
            );
        }
        Ok(())
    }
}

/// A router's running state: its spec and, for Cache-Prior, the running logit range per layer.
#[derive(Debug, Clone)]
pub struct RouterState {
    spec: RouterSpec,
    range_sum: Vec<f64>,
    range_count: Vec<u64>,
    trace_delta: Vec<f64>,
    best: Vec<(f32, u32)>,
}

impl RouterState {
    /// A fresh state for `layers` layers; `trace_delta` is the per-layer mean logit range used
    /// by [`DeltaEstimate::Trace`] (ignored otherwise).
    pub fn new(spec: RouterSpec, layers: usize, trace_delta: Vec<f64>) -> Self {
        RouterState {
            spec,
            range_sum: vec![0.0; layers],
            range_count: vec![0; layers],
            trace_delta,
            best: Vec::with_capacity(64),
        }
    }

    /// The spec.
    pub fn spec(&self) -> &RouterSpec {
        &self.spec
    }

    /// Chooses the experts of `row` at `layer` into `chosen` (cleared first), best first in the
    /// new ranking. The row must support the spec ([`RankTable::supports`]).
    pub fn route_row(
        &mut self,
        layer: usize,
        row: &Row,
        cache: &impl CacheView,
        chosen: &mut Vec<u32>,
    ) {
        let k = row.top_k;
        match self.spec {
            RouterSpec::TopK => {
                chosen.clear();
                chosen.extend(row.order[..k].iter().map(|&e| e as u32));
            }
            RouterSpec::Pruning { h } => {
                chosen.clear();
                chosen.extend(row.order[..h.min(k)].iter().map(|&e| e as u32));
            }
            RouterSpec::MaxRank { m, j } => max_rank_select(row.order, k, m, j, cache, chosen),
            RouterSpec::Cumsum { p, j } => {
                let m = cumsum_max_rank(row.order, row.probs, p);
                max_rank_select(row.order, k, m, j, cache, chosen)
            }
            RouterSpec::CachePrior { lambda, j, delta } => {
                self.range_sum[layer] += row.range as f64;
                self.range_count[layer] += 1;
                let delta = match delta {
                    DeltaEstimate::Running => {
                        self.range_sum[layer] / self.range_count[layer] as f64
                    }
                    DeltaEstimate::Trace => self.trace_delta[layer],
                };
                let z = row
                    .logits
                    .expect("cache-prior needs logits (checked by supports)");
                cache_prior_select(row, z, (lambda * delta) as f32, j, cache, &mut self.best);
                chosen.clear();
                chosen.extend(self.best.iter().map(|&(_, e)| e));
            }
        }
    }
}

/// The top K of `z' = z + bias * m~` (eq. (9)), `m~` = cached or among the top J; ties by the
/// original rank. Scans experts in rank order into `best` (sorted by z', best first) and stops
/// once no later expert can enter (z only decreases along r, and the bias is bounded).
fn cache_prior_select(
    row: &Row,
    z: &[f32],
    bias: f32,
    j: usize,
    cache: &impl CacheView,
    best: &mut Vec<(f32, u32)>,
) {
    let k = row.top_k;
    best.clear();
    for (i, &e) in row.order.iter().enumerate() {
        let raw = z[e as usize];
        if best.len() == k && raw + bias.max(0.0) <= best[k - 1].0 {
            break;
        }
        let boosted = if i < j || cache.is_cached(e as u32) {
            raw + bias
        } else {
            raw
        };
        if best.len() == k {
            if boosted <= best[k - 1].0 {
                continue;
            }
            best.pop();
        }
        let mut pos = best.len();
        best.push((boosted, e as u32));
        while pos > 0 && best[pos - 1].0 < boosted {
            best.swap(pos - 1, pos);
            pos -= 1;
        }
    }
}

/// A [`CacheView`] over a policy's contents: expert `e` of the current layer is id
/// `offset + e` in the policy (offset `l * E` in a pool across layers, 0 per layer).
pub struct PolicyView<'a, P: ?Sized> {
    /// The cache.
    pub policy: &'a P,
    /// Id of the layer's expert 0 in the policy's universe.
    pub offset: u32,
}

impl<P: Policy + ?Sized> CacheView for PolicyView<'_, P> {
    fn is_cached(&self, e: u32) -> bool {
        self.policy.contains(self.offset + e)
    }
}

/// A [`Router`] (the shared trait) for any [`RouterSpec`]: builds the ranking of each routing
/// from its logits on the fly (one sort per call), so it is slower than the replay's shared
/// [`RankTable`] but needs no trace.
#[derive(Debug, Clone)]
pub struct SpecRouter {
    state: RouterState,
    order: Vec<u16>,
    rank_of: Vec<u16>,
    probs: Vec<f32>,
}

impl SpecRouter {
    /// A router for `layers` layers. [`DeltaEstimate::Trace`] is refused here (it needs the
    /// whole trace): use [`replay_routed`].
    pub fn new(spec: RouterSpec, layers: usize) -> Result<Self, String> {
        if matches!(
            spec,
            RouterSpec::CachePrior {
                delta: DeltaEstimate::Trace,
                ..
            }
        ) {
            return Err(
                "cache-prior with delta=trace needs the whole trace; use delta=running".into(),
            );
        }
        Ok(SpecRouter {
            state: RouterState::new(spec, layers, vec![0.0; layers]),
            order: Vec::new(),
            rank_of: Vec::new(),
            probs: Vec::new(),
        })
    }
}

struct DynView<'a>(&'a dyn CacheView);

impl CacheView for DynView<'_> {
    fn is_cached(&self, e: u32) -> bool {
        self.0.is_cached(e)
    }
}

impl Router for SpecRouter {
    fn name(&self) -> String {
        self.state.spec.to_string()
    }

    /// Panics when the routing lacks the logits a cache-aware router needs.
    fn route(
        &mut self,
        layer: usize,
        routing: &Routing,
        cache: &dyn CacheView,
        chosen: &mut Vec<u32>,
    ) {
        let experts = routing.logits.as_ref().map_or_else(
            || {
                routing
                    .experts
                    .iter()
                    .map(|&e| e as usize + 1)
                    .max()
                    .unwrap_or(0)
            },
            |z| z.len(),
        );
        assert!(
            !self.state.spec.needs_logits() || routing.logits.is_some(),
            "{} needs logits",
            self.state.spec.family()
        );
        let range = fill_row(
            routing,
            experts,
            &mut self.order,
            &mut self.rank_of,
            &mut self.probs,
        );
        let top_k = routing.experts.len();
        let row = Row {
            top_mass: top_mass(&self.order, &self.probs, top_k),
            top_k,
            order: &self.order,
            rank_of: &self.rank_of,
            probs: &self.probs,
            logits: routing.logits.as_deref(),
            range,
        };
        self.state.route_row(layer, &row, &DynView(cache), chosen);
    }
}

/// Options of [`replay_routed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReplayOptions {
    /// Per-layer caches or one pool.
    pub layout: Scope,
    /// Hand a step's experts to the policy in original rank (router weight) order, so LRU
    /// evicts the highest-weight one first (paper 002 Sec. 4.2); false: in the new ranking.
    pub order_by_weight: bool,
    /// Keep the statistics of every layer's cache (per-layer layout only).
    pub per_layer_stats: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            layout: Scope::PerLayer,
            order_by_weight: true,
            per_layer_stats: true,
        }
    }
}

/// The outcome of one routed replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoutedReplay {
    /// The router with its knob.
    pub router: String,
    /// Capacity of each cache (per layer, or of the pool).
    pub capacity: usize,
    /// Steps (tokens x layers).
    pub steps: u64,
    /// Experts loaded (misses).
    pub loads: u64,
    /// loads / (K x steps): eq. (4) normalised by K for every router, which for pruning is the
    /// paper's "normalized using k" (Sec. 4.2) and otherwise equals eq. (4).
    pub miss_rate: f64,
    /// Totals over all caches (eq. (4) over the experts actually requested; residency lengths
    /// of every cache pooled).
    pub total: CacheStats,
    /// Each layer's cache (per-layer layout with `per_layer_stats`; empty otherwise).
    pub per_layer: Vec<CacheStats>,
    /// The quality proxies of the chosen experts.
    pub quality: Quality,
}

fn layout_error(reason: String) -> Error {
    Error::command_line("--methods", reason)
}

/// Replays the trace behind `table`: per token (in order) and layer, the router chooses
/// experts looking at that layer's cache, then the cache loads its misses. `make_policy(C,
/// universe)` builds each cache (one per layer, universe E; or one pool, universe L x E).
/// Allocation-free per step once the buffers are warm (apart from the simulation's amortised
/// lifetime log).
pub fn replay_routed<P: Policy>(
    table: &RankTable,
    spec: &RouterSpec,
    capacity: usize,
    options: &ReplayOptions,
    make_policy: impl FnMut(usize, usize) -> P,
) -> Result<RoutedReplay, Error> {
    replay_routed_observed(table, spec, capacity, options, make_policy, |_, _, _| {})
}

/// [`replay_routed`], calling `observe(layer, chosen, cache)` after each step with the chosen
/// expert ids (0..E, in the order handed to the cache) and the cache after its loads: how
/// [`super::bounds`] records a router's schedule.
pub fn replay_routed_observed<P: Policy>(
    table: &RankTable,
    spec: &RouterSpec,
    capacity: usize,
    options: &ReplayOptions,
    mut make_policy: impl FnMut(usize, usize) -> P,
    mut observe: impl FnMut(usize, &[u32], &P),
) -> Result<RoutedReplay, Error> {
    table.supports(spec).map_err(layout_error)?;
    let (e, k, layers) = (table.experts, table.top_k, table.layers);
    if capacity < k {
        return Err(Error::command_line(
            "--capacity",
            format!(
                "must be at least top_k = {k} (the experts of a step are resident together), got {capacity}"
            ),
        ));
    }
    let pool = options.layout == Scope::Pool;
    // As `replay`: a cache larger than what it can hold would never evict.
    let (universe, what) = if pool {
        (e * layers, "the experts of all layers")
    } else {
        (e, "the experts of a layer")
    };
    if capacity > universe {
        return Err(Error::command_line(
            "--capacity",
            format!("must be at most {universe} ({what}), got {capacity}"),
        ));
    }
    let mut sims: Vec<Simulation<P>> = if pool {
        vec![Simulation::new(
            make_policy(capacity, e * layers),
            e * layers,
        )]
    } else {
        (0..layers)
            .map(|_| Simulation::new(make_policy(capacity, e), e))
            .collect()
    };
    let mut state = RouterState::new(*spec, layers, table.mean_range.clone());
    let mut quality = QualityAccumulator::new(k, table.has_probs(), table.ranked);
    let mut chosen = Vec::with_capacity(k);
    let mut ids = Vec::with_capacity(k);
    for t in 0..table.tokens {
        for l in 0..layers {
            let row = table.row(t, l);
            let (s, offset) = if pool { (0, (l * e) as u32) } else { (l, 0) };
            let view = PolicyView {
                policy: sims[s].policy(),
                offset,
            };
            state.route_row(l, &row, &view, &mut chosen);
            quality.add(&row, &chosen);
            if options.order_by_weight {
                chosen.sort_unstable_by_key(|&x| row.rank_of[x as usize]);
            }
            ids.clear();
            ids.extend(chosen.iter().map(|&x| x + offset));
            let scores = (!row.probs.is_empty()).then_some(Scores {
                first: offset,
                values: row.probs,
            });
            sims[s].step(&ids, scores);
            observe(l, &chosen, sims[s].policy());
        }
    }
    let stats: Vec<(CacheStats, usize)> = sims
        .iter()
        .map(|sim| (sim.stats(), sim.policy().resident().len()))
        .collect();
    let total = combine(&stats);
    let steps = (table.tokens * layers) as u64;
    Ok(RoutedReplay {
        router: spec.to_string(),
        capacity,
        steps,
        loads: total.loads,
        miss_rate: total.loads as f64 / (k as u64 * steps) as f64,
        total,
        per_layer: if !pool && options.per_layer_stats {
            stats.into_iter().map(|(s, _)| s).collect()
        } else {
            Vec::new()
        },
        quality: quality.finish(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Set(Vec<u32>);

    impl CacheView for Set {
        fn is_cached(&self, e: u32) -> bool {
            self.0.contains(&e)
        }
    }

    #[test]
    fn appendix_b_worked_example() {
        // Appendix B: r = [E1..E6], C = {E3, E4, E6}, M = 4, K = 2, J = 1. r[:4] ∩ C = [E3, E4];
        // promote gives [E3, E4, E1, E2, E5, E6]; promoting the top-1 gives
        // [E1, E3, E4, E2, E5, E6]; the top-2 are E1 and E3. Experts E1..E6 are ids 1..6.
        let cache = Set(vec![3, 4, 6]);
        let r = [1, 2, 3, 4, 5, 6];
        assert_eq!(
            promote(&[3, 4], &r),
            vec![3, 4, 1, 2, 5, 6],
            "the first promotion of the text"
        );
        assert_eq!(
            max_rank_ranking(&r, 4, 1, |e| cache.is_cached(e)),
            vec![1, 3, 4, 2, 5, 6]
        );
        let mut chosen = Vec::new();
        max_rank_select(&[1, 2, 3, 4, 5, 6], 2, 4, 1, &cache, &mut chosen);
        assert_eq!(chosen, vec![1, 3]);
    }

    #[test]
    fn router_names_round_trip_and_bad_knobs_are_refused() {
        for s in [
            "top-k",
            "pruning:h=2",
            "max-rank:m=4,j=1",
            "cumsum:p=0.6,j=1",
            "cache-prior:lambda=0.5,j=1",
            "cache-prior:lambda=0.25,j=2,delta=trace",
        ] {
            let spec: RouterSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
        }
        assert!("max-rank:m=4"
            .parse::<RouterSpec>()
            .unwrap_err()
            .contains("j"));
        assert!("lru".parse::<RouterSpec>().is_err());
        assert!("cumsum:p=0.5,j=1,q=2".parse::<RouterSpec>().is_err());
        assert!(RouterSpec::Pruning { h: 0 }.check(2).is_err());
        assert!(RouterSpec::Cumsum { p: 1.5, j: 1 }.check(2).is_err());
        assert!(RouterSpec::MaxRank { m: 3, j: 3 }.check(2).is_err());
    }

    #[test]
    fn cumsum_m_is_the_least_prefix_reaching_p() {
        // Probabilities by id [0.1, 0.4, 0.3, 0.2]: r = [1, 2, 3, 0], prefix sums 0.4, 0.7,
        // 0.9, 1.0. p = 0 -> M = 0; p = 0.5 -> 2; p = 0.7 -> 2 (0.4 + 0.3 in f64 of the f32
        // values is 0.70000001..., >= 0.7); p = 0.95 -> 4; p = 1 -> 4 (capped at E).
        let probs = [0.1f32, 0.4, 0.3, 0.2];
        let order = [1u16, 2, 3, 0];
        let m = |p| cumsum_max_rank(&order, &probs, p);
        assert_eq!((m(0.0), m(0.5), m(0.95), m(1.0)), (0, 2, 4, 4));
        assert_eq!(m(0.3), 1);
    }

    #[test]
    fn cache_prior_boosts_cached_and_top_j_and_breaks_ties_by_rank() {
        // z = [3, 2, 1, 0] (r = [0, 1, 2, 3]), K = 2, J = 1, cached {3}. Bias b:
        // b = 0: z' = z -> {0, 1}. b = 1.5: z' = [4.5, 2, 1, 1.5] -> {0, 1}.
        // b = 2: z' = [5, 2, 1, 2]: tie between 1 and 3 at 2, rank breaks it -> {0, 1}.
        // b = 2.5: z' = [5.5, 2, 1, 2.5] -> [0, 3].
        let z = [3.0f32, 2.0, 1.0, 0.0];
        let order = [0u16, 1, 2, 3];
        let rank_of = [0u16, 1, 2, 3];
        let row = Row {
            top_k: 2,
            order: &order,
            rank_of: &rank_of,
            probs: &[],
            logits: Some(&z),
            range: 3.0,
            top_mass: 0.0,
        };
        let cache = Set(vec![3]);
        let mut best = Vec::new();
        let mut pick = |b: f32| {
            cache_prior_select(&row, &z, b, 1, &cache, &mut best);
            best.iter().map(|&(_, e)| e).collect::<Vec<_>>()
        };
        assert_eq!(pick(0.0), vec![0, 1]);
        assert_eq!(pick(1.5), vec![0, 1]);
        assert_eq!(pick(2.0), vec![0, 1]);
        assert_eq!(pick(2.5), vec![0, 3]);
    }
}
