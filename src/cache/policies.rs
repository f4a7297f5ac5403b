//! Eviction policies besides LRU, their command-line names, and the replay of a trace through
//! per-layer caches or one pool across layers.
//!
//! Every policy keeps the ids of the current step resident (they are computed together), so
//! victims are chosen among the other resident ids; a capacity below the largest step is
//! refused by [`replay_trace`]. LFU, the SMoE window and ZipMoE's counts are one [`Scanning`]
//! policy each, with its own [`Rank`]: they scan their resident ids for the least key.
//!
//! * [`Lfu`]: least frequently used with counts over the whole stream so far ("perfect" LFU:
//!   an id keeps its count when evicted), optionally warm-started from activation counts
//!   ([`super::import::FrequencyWarmStart`]). Ties: least recently used, with paper 002's
//!   same-step order (the best-ranked id of a step counts as least recent), then lower id.
//! * [`Fifo`]: first in, first out; hits do not refresh. The ids loaded in one step enter in
//!   their listed (rank) order, so the best-ranked leaves first, as paper 002 Sec. 4.2 reads
//!   for LRU.
//! * [`SmoeWindow`]: SMoE's score-window eviction (paper 004, Sec. IV-B, eq. (3)): evict the
//!   resident id with the smallest average router score over the window of the last `n + 1`
//!   iterations of its layer (eq. (3) sums k = max(1, j - n) .. j, current iteration included,
//!   and divides by the number of terms; the prose's "preceding n iterations" is read as that
//!   formula). Scores are the router probabilities softmax(z) over all E experts of the layer,
//!   active or not, as eq. (3) takes S_{i,j} of every expert. "Protection" of experts selected
//!   for computation: the ids of the current step are never evicted. Ties: lower id. Needs
//!   scores (logits) on every step.
//! * [`ZipMoeFreq`]: ZipMoE's frequency-count eviction (paper 003, Sec. 3.3 "Pool
//!   Dispatching": "experts with the lowest activation frequency are evicted"). The paper's
//!   text does not say when counts restart; the authors' public implementation
//!   (npnothard/ZipMoE-ICML26, csrc/memory/cache.cpp, `CachePolicyZipMoE`) sets a slot's count
//!   to 1 when an expert is loaded (miss), adds the token count on a hit (1 here: one token per
//!   step, batch size 1) and evicts the unprotected slot with the smallest count. That is the
//!   behaviour modelled: an in-cache LFU whose count resets on every load. Ties: the source
//!   takes the lowest slot index, which depends on its slot allocator; here the id loaded
//!   earliest, then lower id. ZipMoE's rank-threshold dispatching to compressed pools and its
//!   bypass of rarely used experts are not modelled (every requested id becomes resident).

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

use formulations::cache::model::{softmax, Requests, Trace};
use formulations::Error;
use serde::{Deserialize, Serialize};

use super::belady::Belady;
use super::import::FrequencyWarmStart;
use super::policy::{
    combine, pin, CacheStats, Lru, Policy, Request, Residents, Scores, Simulation,
};

/// How a [`Scanning`] policy ranks its resident ids, and what it records to do so.
pub trait Rank {
    /// The policy's name as on the command line.
    const NAME: &'static str;
    /// The eviction key: the unpinned resident id of least key leaves. Every key ends with the
    /// id, so no two tie.
    type Key: PartialOrd;
    /// Records what a step tells before its lookups (counts, scores).
    fn begin(&mut self, _request: &Request) {}
    /// `id` was requested and resident.
    fn hit(&mut self, _id: u32) {}
    /// `id` was loaded.
    fn loaded(&mut self, _id: u32) {}
    /// `id` was evicted.
    fn evicted(&mut self, _id: u32) {}
    /// The eviction key of the resident `id`.
    fn key(&self, id: u32) -> Self::Key;
}

/// A policy that keeps its resident ids in one array (`Residents`) and evicts, on a miss,
/// the one of least [`Rank::key`] among those the step has not requested: LFU, SMoE's score
/// window and ZipMoE's counts differ only in their [`Rank`].
#[derive(Debug, Clone)]
pub struct Scanning<R> {
    capacity: usize,
    cached: Residents,
    pinned: Vec<bool>,
    rank: R,
}

impl<R> Scanning<R> {
    fn with_rank(capacity: usize, universe: usize, rank: R) -> Self {
        Scanning {
            capacity,
            cached: Residents::new(capacity, universe),
            pinned: vec![false; universe],
            rank,
        }
    }
}

impl<R: Rank> Policy for Scanning<R> {
    fn name(&self) -> &'static str {
        R::NAME
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn is_full(&self) -> bool {
        self.cached.len() == self.capacity
    }
    fn contains(&self, id: u32) -> bool {
        self.cached.contains(id)
    }
    fn resident(&self) -> Vec<u32> {
        self.cached.sorted()
    }
    fn begin(&mut self, request: &Request) {
        self.rank.begin(request);
        pin(&mut self.pinned, request.ids, true);
    }
    fn find(&mut self, id: u32) -> bool {
        let hit = self.cached.contains(id);
        if hit {
            self.rank.hit(id);
        }
        hit
    }
    fn to_evict(&self, _request: &Request) -> u32 {
        self.cached.min_unpinned(&self.pinned, |r| self.rank.key(r))
    }
    fn remove(&mut self, id: u32) {
        self.cached.remove(id);
        self.rank.evicted(id);
    }
    fn insert(&mut self, id: u32, _request: &Request) {
        self.rank.loaded(id);
        self.cached.insert(id);
    }
    fn end(&mut self, request: &Request) {
        pin(&mut self.pinned, request.ids, false);
    }
}

/// Least frequently used over the whole stream (see the module doc).
pub type Lfu = Scanning<LfuRank>;

/// LFU's counts over the whole stream and its recency stamps.
#[derive(Debug, Clone)]
pub struct LfuRank {
    count: Vec<u64>,
    stamp: Vec<u64>,
    clock: u64,
}

impl Lfu {
    /// An empty cache of `capacity` ids over `universe` ids, all counts 0.
    pub fn new(capacity: usize, universe: usize) -> Self {
        Self::with_counts(capacity, vec![0; universe])
    }

    /// An empty cache whose counts start at `counts` (one per id: a frequency warm start).
    pub fn with_counts(capacity: usize, counts: Vec<u64>) -> Self {
        let universe = counts.len();
        let rank = LfuRank {
            count: counts,
            stamp: vec![0; universe],
            clock: 0,
        };
        Scanning::with_rank(capacity, universe, rank)
    }
}

impl Rank for LfuRank {
    const NAME: &'static str = "lfu";
    type Key = (u64, u64, u32);
    /// Counts every id of the step and stamps them in listed order (the best-ranked the
    /// least recent).
    fn begin(&mut self, request: &Request) {
        let base = self.clock;
        for (i, &id) in request.ids.iter().enumerate() {
            self.count[id as usize] += 1;
            self.stamp[id as usize] = base + 1 + i as u64;
        }
        self.clock = base + request.ids.len() as u64;
    }
    fn key(&self, id: u32) -> Self::Key {
        (self.count[id as usize], self.stamp[id as usize], id)
    }
}

/// First in, first out (see the module doc).
#[derive(Debug, Clone)]
pub struct Fifo {
    capacity: usize,
    in_cache: Vec<bool>,
    pinned: Vec<bool>,
    queue: VecDeque<u32>,
}

impl Fifo {
    /// An empty cache of `capacity` ids over `universe` ids.
    pub fn new(capacity: usize, universe: usize) -> Self {
        Fifo {
            capacity,
            in_cache: vec![false; universe],
            pinned: vec![false; universe],
            queue: VecDeque::with_capacity(capacity + 1),
        }
    }
}

impl Policy for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn is_full(&self) -> bool {
        self.queue.len() == self.capacity
    }
    fn contains(&self, id: u32) -> bool {
        self.in_cache[id as usize]
    }
    fn resident(&self) -> Vec<u32> {
        let mut r: Vec<u32> = self.queue.iter().copied().collect();
        r.sort_unstable();
        r
    }
    fn begin(&mut self, request: &Request) {
        pin(&mut self.pinned, request.ids, true);
    }
    /// The first in that is not pinned.
    fn to_evict(&self, _request: &Request) -> u32 {
        *self
            .queue
            .iter()
            .find(|&&r| !self.pinned[r as usize])
            .expect("capacity >= step size leaves an unpinned resident id")
    }
    /// The victim stands behind at most the step's pinned ids, so the search is short.
    fn remove(&mut self, id: u32) {
        let pos = self
            .queue
            .iter()
            .position(|&r| r == id)
            .expect("only resident ids are removed");
        self.queue.remove(pos);
        self.in_cache[id as usize] = false;
    }
    fn insert(&mut self, id: u32, _request: &Request) {
        self.in_cache[id as usize] = true;
        self.queue.push_back(id);
    }
    fn end(&mut self, request: &Request) {
        pin(&mut self.pinned, request.ids, false);
    }
}

/// SMoE's score-window eviction, paper 004 eq. (3) (see the module doc).
pub type SmoeWindow = Scanning<SmoeWindowRank>;

/// The scores of every id over its window of eq. (3).
#[derive(Debug, Clone)]
pub struct SmoeWindowRank {
    /// Window length n + 1 (eq. (3)'s terms).
    len: usize,
    /// `ring[id * len + i]`: the scores of `id`'s last iterations.
    ring: Vec<f32>,
    /// Per id: next ring slot and number of scores seen (capped at `len`).
    head: Vec<u32>,
    seen: Vec<u32>,
}

impl SmoeWindow {
    /// An empty cache of `capacity` ids over `universe` ids, window parameter `n` of eq. (3).
    pub fn new(capacity: usize, universe: usize, n: usize) -> Self {
        let len = n + 1;
        let rank = SmoeWindowRank {
            len,
            ring: vec![0.0; universe * len],
            head: vec![0; universe],
            seen: vec![0; universe],
        };
        Scanning::with_rank(capacity, universe, rank)
    }

    /// The average score of `id` over its window (eq. (3)); 0 before any score.
    pub fn average(&self, id: u32) -> f64 {
        self.rank.average(id)
    }
}

impl SmoeWindowRank {
    fn average(&self, id: u32) -> f64 {
        let id = id as usize;
        let seen = self.seen[id] as usize;
        if seen == 0 {
            return 0.0;
        }
        let window = &self.ring[id * self.len..(id + 1) * self.len];
        window[..seen].iter().map(|&s| s as f64).sum::<f64>() / seen as f64
    }
}

impl Rank for SmoeWindowRank {
    const NAME: &'static str = "smoe-window";
    type Key = (f64, u32);
    /// Without scores the windows stay as they are ([`replay_trace`] refuses such replays).
    fn begin(&mut self, request: &Request) {
        let Some(scores) = &request.scores else {
            return;
        };
        for (e, &s) in scores.values.iter().enumerate() {
            let id = scores.first as usize + e;
            let h = self.head[id] as usize;
            self.ring[id * self.len + h] = s;
            self.head[id] = ((h + 1) % self.len) as u32;
            self.seen[id] = (self.seen[id] + 1).min(self.len as u32);
        }
    }
    fn key(&self, id: u32) -> Self::Key {
        (self.average(id), id)
    }
}

/// ZipMoE's frequency-count eviction (see the module doc).
pub type ZipMoeFreq = Scanning<ZipMoeFreqRank>;

/// ZipMoE's in-cache counts and load order.
#[derive(Debug, Clone)]
pub struct ZipMoeFreqRank {
    count: Vec<u64>,
    loaded_at: Vec<u64>,
    clock: u64,
}

impl ZipMoeFreq {
    /// An empty cache of `capacity` ids over `universe` ids.
    pub fn new(capacity: usize, universe: usize) -> Self {
        let rank = ZipMoeFreqRank {
            count: vec![0; universe],
            loaded_at: vec![0; universe],
            clock: 0,
        };
        Scanning::with_rank(capacity, universe, rank)
    }

    /// The in-cache count of `id` (0 when absent).
    pub fn count(&self, id: u32) -> u64 {
        self.rank.count[id as usize]
    }
}

impl Rank for ZipMoeFreqRank {
    const NAME: &'static str = "zipmoe-freq";
    type Key = (u64, u64, u32);
    /// on_hit: adds the step's tokens (one).
    fn hit(&mut self, id: u32) {
        self.count[id as usize] += 1;
    }
    /// on_miss: the count restarts at 1.
    fn loaded(&mut self, id: u32) {
        self.count[id as usize] = 1;
        self.loaded_at[id as usize] = self.clock;
        self.clock += 1;
    }
    fn evicted(&mut self, id: u32) {
        self.count[id as usize] = 0;
    }
    fn key(&self, id: u32) -> Self::Key {
        (self.count[id as usize], self.loaded_at[id as usize], id)
    }
}

/// Longest SMoE score window `n` (`smoe-window:n=...`): the policy keeps n + 1 scores per
/// expert id (eq. (3) averages a few recent iterations; the paper's default is 4).
pub const MAX_SMOE_WINDOW: usize = 1024;

/// A policy as named on the command line: `lru`, `lfu`, `fifo`, `smoe-window:n=4`,
/// `zipmoe-freq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum PolicySpec {
    /// [`Lru`].
    Lru,
    /// [`Lfu`].
    Lfu,
    /// [`Fifo`].
    Fifo,
    /// [`SmoeWindow`] with eq. (3)'s n.
    SmoeWindow {
        /// n of eq. (3).
        n: usize,
    },
    /// [`ZipMoeFreq`].
    ZipMoeFreq,
    /// [`Belady`]: the offline optimum, built from the stream it replays.
    Belady,
}

/// Default n of the SMoE window. The paper's Fig. 6 looks at reuse "in the next 3 iterations"
/// but does not state its n; 4 is this project's default.
pub const SMOE_DEFAULT_N: usize = 4;

impl PolicySpec {
    /// Every policy this module builds, with the default knobs.
    pub fn all() -> Vec<PolicySpec> {
        vec![
            PolicySpec::Lru,
            PolicySpec::Lfu,
            PolicySpec::Fifo,
            PolicySpec::SmoeWindow { n: SMOE_DEFAULT_N },
            PolicySpec::ZipMoeFreq,
            PolicySpec::Belady,
        ]
    }

    /// Whether the policy needs router scores over all experts (logits) on every step.
    pub fn needs_scores(self) -> bool {
        matches!(self, PolicySpec::SmoeWindow { .. })
    }

    /// The policy, empty, for `capacity` ids over the ids of `requests`, the stream it will
    /// replay (only Belady looks ahead in it).
    pub fn build(self, capacity: usize, requests: &Requests) -> Box<dyn Policy> {
        let universe = requests.universe;
        match self {
            PolicySpec::Belady => Box::new(Belady::new(capacity, requests)),
            PolicySpec::Lru => Box::new(Lru::new(capacity, universe)),
            PolicySpec::Lfu => Box::new(Lfu::new(capacity, universe)),
            PolicySpec::Fifo => Box::new(Fifo::new(capacity, universe)),
            PolicySpec::SmoeWindow { n } => Box::new(SmoeWindow::new(capacity, universe, n)),
            PolicySpec::ZipMoeFreq => Box::new(ZipMoeFreq::new(capacity, universe)),
        }
    }
}

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicySpec::Lru => write!(f, "lru"),
            PolicySpec::Lfu => write!(f, "lfu"),
            PolicySpec::Fifo => write!(f, "fifo"),
            PolicySpec::SmoeWindow { n } => write!(f, "smoe-window:n={n}"),
            PolicySpec::ZipMoeFreq => write!(f, "zipmoe-freq"),
            PolicySpec::Belady => write!(f, "belady"),
        }
    }
}

impl From<PolicySpec> for String {
    fn from(p: PolicySpec) -> String {
        p.to_string()
    }
}

impl TryFrom<String> for PolicySpec {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl FromStr for PolicySpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (head, knobs) = s.split_once(':').unwrap_or((s, ""));
        let no_knobs = |p: PolicySpec| {
            if knobs.is_empty() {
                Ok(p)
            } else {
                Err(format!("policy `{head}` takes no knob, got `{knobs}`"))
            }
        };
        match head {
            "lru" => no_knobs(PolicySpec::Lru),
            "lfu" => no_knobs(PolicySpec::Lfu),
            "fifo" => no_knobs(PolicySpec::Fifo),
            "zipmoe-freq" => no_knobs(PolicySpec::ZipMoeFreq),
            "belady" => no_knobs(PolicySpec::Belady),
            "smoe-window" => {
                let mut n = SMOE_DEFAULT_N;
                for knob in knobs.split(',').filter(|k| !k.is_empty()) {
                    match knob.split_once('=') {
                        Some(("n", v)) => {
                            n = v.parse().map_err(|_| {
                                format!("smoe-window: n must be a whole number, got `{v}`")
                            })?;
                            if n > MAX_SMOE_WINDOW {
                                return Err(format!(
                                    "smoe-window: n = {n} exceeds the limit of {MAX_SMOE_WINDOW} \
                                     (moe_opt::cache::policies::MAX_SMOE_WINDOW)"
                                ));
                            }
                        }
                        _ => return Err(format!("smoe-window: unknown knob `{knob}` (use n=4)")),
                    }
                }
                Ok(PolicySpec::SmoeWindow { n })
            }
            _ => Err(format!(
                "unknown policy `{s}` (use lru, lfu, fifo, smoe-window:n=4, zipmoe-freq)"
            )),
        }
    }
}

/// One cache per layer (capacity C each) or one pool across layers (capacity C in all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// L caches of C experts, one per MoE layer.
    PerLayer,
    /// One cache of C experts over all layers (ids `l * E + e`), requests token-major.
    Pool,
}

impl Scope {
    /// The caches in words: `per-layer caches` or `pooled cache`.
    pub fn caches(self) -> &'static str {
        match self {
            Scope::PerLayer => "per-layer caches",
            Scope::Pool => "pooled cache",
        }
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "per-layer" => Ok(Scope::PerLayer),
            "pool" => Ok(Scope::Pool),
            _ => Err(format!("unknown cache scope `{s}` (use per-layer or pool)")),
        }
    }
}

/// Requests and loads of one layer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerStats {
    /// MoE layer.
    pub layer: usize,
    /// Expert requests at this layer.
    pub requests: u64,
    /// Loads (misses) at this layer.
    pub loads: u64,
    /// loads / requests.
    pub miss_rate: f64,
    /// Mean residency length in steps of this layer's cache (per-layer scope only).
    pub lifetime_mean_steps: Option<f64>,
    /// Standard deviation of the same (per-layer scope only).
    pub lifetime_std_steps: Option<f64>,
}

impl LayerStats {
    /// One layer's statistics from its own cache's replay (per-layer scope).
    pub(crate) fn of_cache(layer: usize, s: &CacheStats) -> Self {
        LayerStats {
            layer,
            requests: s.requests,
            loads: s.loads,
            miss_rate: s.miss_rate,
            lifetime_mean_steps: Some(s.lifetime_mean_steps),
            lifetime_std_steps: Some(s.lifetime_std_steps),
        }
    }

    /// One layer's share of a pooled cache: its requests and loads (no lifetimes).
    pub(crate) fn of_pool(layer: usize, requests: u64, loads: u64) -> Self {
        LayerStats {
            layer,
            requests,
            loads,
            miss_rate: ratio(loads, requests),
            lifetime_mean_steps: None,
            lifetime_std_steps: None,
        }
    }
}

/// The result of replaying a trace through one policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceReplay {
    /// The policy.
    pub policy: PolicySpec,
    /// Per-layer caches or a pool.
    pub scope: Scope,
    /// C: per layer, or of the pool.
    pub capacity: usize,
    /// Per-layer requests and loads.
    pub layers: Vec<LayerStats>,
    /// All layers together: the pool's statistics, or the per-layer caches' summed (lifetimes
    /// pooled over every layer's residencies).
    pub total: CacheStats,
}

/// Replays `trace` under its original routing through `policy` with capacity `capacity`
/// (per layer, or of the pool). `warm_start` seeds LFU's counts (other policies ignore it; it
/// must match the trace's E and L). Errors: a capacity below K (a step must fit), a policy that
/// needs scores on a trace without logits, a warm start of another shape.
///
/// # Complexity
/// T tokens, L layers, K experts per step, E experts per layer, c_P the policy's cost per
/// access (e.g. O(1) for LRU, O(log C) for Belady). Time: O(T L (K c_P + E)), the E for policies
/// that read the router scores (copied once per step), plus Belady's next-use table, O(T L K).
/// Memory: O(E) per layer's cache (O(E L) for the pool) and O(T K) for Belady's requests.
///
/// # Examples
/// ```
/// use formulations::cache::model::{Phase, Routing, Token, Trace};
/// use formulations::ProblemKind;
/// use moe_opt::cache::policies::{replay_trace, PolicySpec, Scope};
///
/// // One layer, E = 4, K = 2: steps [0, 1], [2, 3], [0, 1], [0, 2].
/// let token = |token: u32, experts: Vec<u32>| Token {
///     seq: 0,
///     token,
///     phase: Phase::Decode,
///     layers: vec![Routing { experts, weights: None, logits: None }],
/// };
/// let trace = Trace {
///     problem: ProblemKind::CacheTrace,
///     name: "hand".into(),
///     model: "hand".into(),
///     experts: 4,
///     top_k: 2,
///     shared_experts: 0,
///     layers: 1,
///     ranked: true,
///     tokens: vec![
///         token(0, vec![0, 1]),
///         token(1, vec![2, 3]),
///         token(2, vec![0, 1]),
///         token(3, vec![0, 2]),
///     ],
/// };
/// // With room for all 4 experts only the first request of each misses.
/// let all = replay_trace(&trace, PolicySpec::Lru, 4, Scope::PerLayer, None)?;
/// assert_eq!((all.total.requests, all.total.loads), (8, 4));
/// // At C = K every step evicts; Belady's offline choice never loads more than LRU.
/// let lru = replay_trace(&trace, PolicySpec::Lru, 2, Scope::PerLayer, None)?;
/// let belady = replay_trace(&trace, PolicySpec::Belady, 2, Scope::PerLayer, None)?;
/// assert!(belady.total.loads <= lru.total.loads);
/// # Ok::<(), formulations::Error>(())
/// ```
pub fn replay_trace(
    trace: &Trace,
    policy: PolicySpec,
    capacity: usize,
    scope: Scope,
    warm_start: Option<&FrequencyWarmStart>,
) -> Result<TraceReplay, Error> {
    check_replay(
        &ReplayShape {
            name: &trace.name,
            experts: trace.experts,
            top_k: trace.top_k,
            layers: trace.layers,
        },
        || trace.has_logits(),
        policy,
        capacity,
        scope,
        warm_start,
    )?;
    let (e, l) = (trace.experts, trace.layers);
    let build = |requests: Requests, counts: Option<Vec<u64>>| -> Box<dyn Policy> {
        match (policy, counts) {
            (PolicySpec::Lfu, Some(c)) => Box::new(Lfu::with_counts(capacity, c)),
            _ => policy.build(capacity, &requests),
        }
    };
    let mut scores_buf: Vec<f32> = Vec::new();
    let needs_scores = policy.needs_scores();
    Ok(replay_caches(policy, capacity, scope, l, |layer, per| {
        let counts = warm_start.map(|w| w.cache_counts(layer));
        match layer {
            Some(layer) => {
                let requests = if policy == PolicySpec::Belady {
                    trace.layer_requests(layer)
                } else {
                    Requests::new(e)
                };
                let mut sim = Simulation::new(build(requests, counts), e);
                for token in &trace.tokens {
                    let r = &token.layers[layer];
                    let has = needs_scores && fill_scores(&mut scores_buf, r.logits.as_deref());
                    let scores = has.then_some(Scores {
                        first: 0,
                        values: &scores_buf,
                    });
                    sim.step(&r.experts, scores);
                }
                (sim.stats(), sim.policy().resident().len())
            }
            None => {
                let requests = if policy == PolicySpec::Belady {
                    trace.pooled_requests()
                } else {
                    Requests::new(e * l)
                };
                let mut sim = Simulation::new(build(requests, counts), e * l);
                let mut ids = Vec::with_capacity(trace.top_k);
                for token in &trace.tokens {
                    for (layer, r) in token.layers.iter().enumerate() {
                        ids.clear();
                        ids.extend(r.experts.iter().map(|&x| (layer * e) as u32 + x));
                        let has = needs_scores && fill_scores(&mut scores_buf, r.logits.as_deref());
                        let scores = has.then_some(Scores {
                            first: (layer * e) as u32,
                            values: &scores_buf,
                        });
                        let loads = sim.step(&ids, scores).len() as u64;
                        per[layer].0 += ids.len() as u64;
                        per[layer].1 += loads;
                    }
                }
                (sim.stats(), 0)
            }
        }
    }))
}

/// The frame both replays share (this module's [`replay_trace`] and
/// [`super::fast::replay_packed`], which differ only in how one cache runs): one cache per
/// layer with their statistics combined, or one pool whose requests and loads are told apart by
/// layer. `run(layer, per)` replays one cache, layer `Some(l)`'s or the pool (`None`, adding
/// each layer's requests and loads to `per[layer]`), and returns its statistics and how many
/// ids it holds at the end (a layer's cache; unused for the pool).
pub(crate) fn replay_caches(
    policy: PolicySpec,
    capacity: usize,
    scope: Scope,
    layer_count: usize,
    mut run: impl FnMut(Option<usize>, &mut [(u64, u64)]) -> (CacheStats, usize),
) -> TraceReplay {
    let mut layers = Vec::with_capacity(layer_count);
    let total = match scope {
        Scope::PerLayer => {
            let mut all: Vec<(CacheStats, usize)> = Vec::with_capacity(layer_count);
            for layer in 0..layer_count {
                let (s, open) = run(Some(layer), &mut []);
                layers.push(LayerStats::of_cache(layer, &s));
                all.push((s, open));
            }
            combine(&all)
        }
        Scope::Pool => {
            let mut per = vec![(0u64, 0u64); layer_count];
            let (s, _) = run(None, &mut per);
            for (layer, (requests, loads)) in per.into_iter().enumerate() {
                layers.push(LayerStats::of_pool(layer, requests, loads));
            }
            s
        }
    };
    TraceReplay {
        policy,
        scope,
        capacity,
        layers,
        total,
    }
}

/// What the checks of a replay need of its trace.
pub(crate) struct ReplayShape<'a> {
    /// The trace's name.
    pub name: &'a str,
    /// E.
    pub experts: usize,
    /// K.
    pub top_k: usize,
    /// L.
    pub layers: usize,
}

/// The refusals of [`replay_trace`], shared with the replay of a trace held in columns
/// ([`super::fast`]); `has_logits` is asked only of a policy that needs scores.
pub(crate) fn check_replay(
    shape: &ReplayShape,
    has_logits: impl FnOnce() -> bool,
    policy: PolicySpec,
    capacity: usize,
    scope: Scope,
    warm_start: Option<&FrequencyWarmStart>,
) -> Result<(), Error> {
    let fail = |field: &str, reason: String| Error::Invalid {
        path: "<replay>".into(),
        field: field.into(),
        reason,
    };
    if capacity < shape.top_k {
        return Err(fail(
            "capacity",
            format!(
                "must be at least top_k = {} (the experts of a token are resident together), got {capacity}",
                shape.top_k
            ),
        ));
    }
    let (universe, what) = match scope {
        Scope::PerLayer => (shape.experts, "the experts of a layer"),
        Scope::Pool => (shape.experts * shape.layers, "the experts of all layers"),
    };
    if capacity > universe {
        return Err(fail(
            "capacity",
            format!("must be at most {universe} ({what}), got {capacity}"),
        ));
    }
    if policy.needs_scores() && !has_logits() {
        return Err(fail(
            "policy",
            format!(
                "{policy} needs router scores over all {} experts on every token; trace `{}` has \
                 no logits (real token logs carry only the selected experts): use lru, lfu, fifo, \
                 zipmoe-freq or belady, or a generated trace",
                shape.experts, shape.name
            ),
        ));
    }
    if let Some(w) = warm_start {
        if w.experts != shape.experts || w.counts.len() != shape.layers {
            return Err(fail(
                "warm_start",
                format!(
                    "counts of {} ({} layers x {} experts) do not match the trace ({} layers x {} experts)",
                    w.model,
                    w.counts.len(),
                    w.experts,
                    shape.layers,
                    shape.experts
                ),
            ));
        }
    }
    Ok(())
}

/// Writes softmax(logits) into `buf`; false without logits.
pub(crate) fn fill_scores(buf: &mut Vec<f32>, logits: Option<&[f32]>) -> bool {
    match logits {
        Some(z) => {
            buf.clear();
            buf.extend(softmax(z).into_iter().map(|p| p as f32));
            true
        }
        None => false,
    }
}

pub(crate) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::policy::replay;
    use crate::cache::policy::tests::{evictions, stream};
    use formulations::cache::model::Requests;

    #[test]
    fn fifo_ignores_hits_and_evicts_in_load_order() {
        // C = 2. [0,1] loads 0 then 1. [0] hit (no refresh). [2] evicts 0 (first in).
        // [0] evicts 1. [1] evicts 2. Loads 0,1,2,0,1 = 5 of 6 requests.
        let steps: &[&[u32]] = &[&[0, 1], &[0], &[2], &[0], &[1]];
        assert_eq!(
            evictions(Fifo::new(2, 3), steps),
            vec![vec![], vec![], vec![0], vec![1], vec![2]]
        );
        let s = replay(Fifo::new(2, 3), &stream(steps, 3));
        assert_eq!((s.requests, s.loads), (6, 5));
    }

    #[test]
    fn fifo_never_evicts_an_id_of_the_current_step() {
        // C = 2: [0,1]; [0,2] must keep 0 (requested) although it is first in: evicts 1.
        assert_eq!(
            evictions(Fifo::new(2, 3), &[&[0, 1], &[0, 2]]),
            vec![vec![], vec![1]]
        );
    }

    #[test]
    fn lfu_counts_survive_eviction_and_ties_go_to_the_least_recent() {
        // C = 2. [0] c0=1. [0] c0=2. [1] c1=1. [2] c2=1: victims {0 (2), 1 (1)} -> evict 1.
        // [1] c1=2: victims {0 (2), 2 (1)} -> evict 2. [2] c2=2: victims 0 (2, last used at
        // step 1) and 1 (2, step 4): tie on count, 0 is least recent -> evict 0.
        let steps: &[&[u32]] = &[&[0], &[0], &[1], &[2], &[1], &[2]];
        assert_eq!(
            evictions(Lfu::new(2, 3), steps),
            vec![vec![], vec![], vec![], vec![1], vec![2], vec![0]]
        );
        // Warm start (1, 0, 5), C = 2: [0] c0 = 2; [1] c1 = 1; [2] c2 = 6: victims 0 (2) and
        // 1 (1) -> evict 1.
        let lfu = Lfu::with_counts(2, vec![1, 0, 5]);
        assert_eq!(
            evictions(lfu, &[&[0], &[1], &[2]]),
            vec![vec![], vec![], vec![1]]
        );
    }

    #[test]
    fn zipmoe_count_resets_on_miss_and_grows_on_hit() {
        // C = 2. [0] c0 = 1; [0] c0 = 2; [0] c0 = 3; [1] c1 = 1 (free slot). [2]: victims
        // 0 (3), 1 (1) -> evict 1, c2 = 1. [1]: victims 0 (3), 2 (1) -> evict 2, c1 = 1 again
        // (reset on load). [2]: victims 0 (3), 1 (1) -> evict 1.
        let steps: &[&[u32]] = &[&[0], &[0], &[0], &[1], &[2], &[1], &[2]];
        assert_eq!(
            evictions(ZipMoeFreq::new(2, 3), steps),
            vec![vec![], vec![], vec![], vec![], vec![1], vec![2], vec![1]]
        );
    }

    #[test]
    fn zipmoe_resets_where_lfu_keeps_counts() {
        // [0] x3 then [1], [2] alternating, C = 2.
        // ZipMoE: 1 and 2 restart at count 1 on every load, 0 stays at 3: they thrash and 0
        // stays. Loads at steps 0, 3, 4, 5, 6, 7, 8 = 7; residents at the end {0, 2}.
        // LFU (counts kept): step 4 ([2], c2 = 1) evicts 1 (c1 = 1); step 5 ([1], c1 = 2)
        // evicts 2 (1); step 6 ([2], c2 = 2) evicts 1 (2); step 7 ([1], c1 = 3) evicts 2 (2);
        // step 8 ([2], c2 = 3): 0 (3, last used at step 2) ties 1 (3, step 7): the least
        // recent, 0, leaves. Also 7 loads; residents at the end {1, 2}.
        let steps: &[&[u32]] = &[&[0], &[0], &[0], &[1], &[2], &[1], &[2], &[1], &[2]];
        let mut lfu = Simulation::new(Lfu::new(2, 3), 3);
        let mut zip = Simulation::new(ZipMoeFreq::new(2, 3), 3);
        for s in steps {
            lfu.step(s, None);
            zip.step(s, None);
        }
        assert_eq!((lfu.stats().loads, zip.stats().loads), (7, 7));
        assert_eq!(lfu.policy().resident(), vec![1, 2]);
        assert_eq!(zip.policy().resident(), vec![0, 2]);
    }

    #[test]
    fn smoe_window_evicts_the_lowest_windowed_average_score() {
        // One layer of 3 experts, C = 2, n = 1 (window of 2 iterations: j-1 and j).
        // t0: scores (0.5, 0.4, 0.1), request [0]: load 0.
        // t1: scores (0.1, 0.2, 0.7), request [1]: load 1.
        // t2: scores (0.1, 0.2, 0.7), request [2]: averages over t1, t2: 0 -> 0.1, 1 -> 0.2:
        //     evict 0 (LRU would evict 0 as well).
        // t3: scores (0.6, 0.1, 0.3), request [0]: averages over t2, t3: 1 -> 0.15, 2 -> 0.5:
        //     evict 1 (LRU would evict 1 too: used at t1 vs t2).
        // t4: scores (0.3, 0.6, 0.1), request [1]: averages over t3, t4: 0 -> (0.6+0.3)/2 =
        //     0.45, 2 -> (0.3+0.1)/2 = 0.2: evict 2.
        // t5: scores (0.2, 0.3, 0.5), request [2]: averages over t4, t5: 0 -> 0.25, 1 -> 0.45:
        //     evict 0; expert 1's average is (0.6 + 0.3) / 2 = 0.45.
        let scores: [[f32; 3]; 6] = [
            [0.5, 0.4, 0.1],
            [0.1, 0.2, 0.7],
            [0.1, 0.2, 0.7],
            [0.6, 0.1, 0.3],
            [0.3, 0.6, 0.1],
            [0.2, 0.3, 0.5],
        ];
        let req: [u32; 6] = [0, 1, 2, 0, 1, 2];
        let mut p = SmoeWindow::new(2, 3, 1);
        let mut victims = Vec::new();
        for t in 0..6 {
            let (mut l, mut e) = (Vec::new(), Vec::new());
            p.access(
                &Request {
                    time: t,
                    ids: &req[t..t + 1],
                    scores: Some(Scores {
                        first: 0,
                        values: &scores[t],
                    }),
                },
                &mut l,
                &mut e,
            );
            victims.push(e);
        }
        assert_eq!(
            victims,
            vec![vec![], vec![], vec![0], vec![1], vec![2], vec![0]]
        );
        assert!((p.average(1) - 0.45).abs() < 1e-6);
    }

    #[test]
    fn smoe_window_keeps_a_high_scoring_inactive_expert_that_lru_drops() {
        // C = 2, n = 2 (window of 3). Expert 0 is requested at t0 only but keeps a high score;
        // expert 1 is requested at t1 with low scores. t2 requests 2: LRU evicts 0 (older),
        // the window evicts 1 (average (0.1 + 0.1 + 0.1)/3 < expert 0's (0.8+0.6+0.6)/3).
        let scores: [[f32; 3]; 3] = [[0.8, 0.1, 0.1], [0.6, 0.1, 0.3], [0.6, 0.1, 0.3]];
        let req: [u32; 3] = [0, 1, 2];
        let mut p = SmoeWindow::new(2, 3, 2);
        let mut lru = Lru::new(2, 3);
        let mut last = (Vec::new(), Vec::new());
        for t in 0..3 {
            let r = Request {
                time: t,
                ids: &req[t..t + 1],
                scores: Some(Scores {
                    first: 0,
                    values: &scores[t],
                }),
            };
            let (mut l, mut e) = (Vec::new(), Vec::new());
            p.access(&r, &mut l, &mut e);
            let (mut l2, mut e2) = (Vec::new(), Vec::new());
            lru.access(&r, &mut l2, &mut e2);
            last = (e, e2);
        }
        assert_eq!(last, (vec![1], vec![0]));
    }

    #[test]
    fn policy_names_round_trip() {
        for p in PolicySpec::all() {
            assert_eq!(p.to_string().parse::<PolicySpec>(), Ok(p));
            assert_eq!(
                p.build(4, &Requests::new(8)).name(),
                p.to_string().split(':').next().unwrap()
            );
        }
        assert_eq!(
            "smoe-window:n=7".parse(),
            Ok(PolicySpec::SmoeWindow { n: 7 })
        );
        assert!("lru:n=2".parse::<PolicySpec>().is_err());
        assert!("mru".parse::<PolicySpec>().is_err());
    }
}
