//! Sweeps of the cache-aware routers over their knobs and cache sizes, and the Pareto fronts of
//! miss rate against each quality proxy (paper 002 Sec. 4.1-4.2: "we vary DRAM cache size
//! limits and sweep hyperparameters for each method to generate Pareto fronts").
//!
//! Knob grids (Sec. 4.2): pruning h in 1..=K (h = 0 runs nothing, see
//! [`crate::cache::routers`]); Max-Rank M = K + i for i in 0..=K, capped at E (the paper's
//! "0, 1, ..., K" read as extra ranks, since M <= K is the original routing;
//! [`MaxRankGrid::Full`] takes every M in K..=E); Cumsum threshold p and Cache-Prior lambda at
//! 50 equidistant points of [0, 1], both ends included. J defaults to the paper's choice: 1 for
//! K <= 2 (Mixtral, Phi) and 2 otherwise (Qwen, DeepSeek), capped at K.
//!
//! Every (router, capacity) pair is an independent replay, run in parallel with rayon over one
//! shared [`RankTable`]; results come back in grid order, so a sweep is deterministic.

use std::fmt::Write;

use formulations::cache::model::Trace;
use formulations::Error;
use rayon::prelude::*;
use serde::Serialize;

use super::commands::{lifetime, TraceInfo};
use super::policies::Scope;
use super::policy::{CacheStats, Lru, Policy};
use super::routers::{
    replay_routed, DeltaEstimate, RankTable, ReplayOptions, RoutedReplay, RouterSpec,
};
use crate::render::table;
use crate::report::VERSION;

/// Which Max-Rank values the grid takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MaxRankGrid {
    /// M = K + i, i = 0..=K (capped at E): the paper's "0, 1, ..., K" as extra ranks.
    Offset,
    /// Every M in K..=E.
    Full,
}

/// The knob grids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GridOptions {
    /// J for Max-Rank, Cumsum and Cache-Prior; None: 1 for K <= 2, else 2 (Sec. 4.2).
    pub j: Option<usize>,
    /// Max-Rank values.
    pub max_rank: MaxRankGrid,
    /// Points of the p and lambda grids in [0, 1] (the paper: 50).
    pub points: usize,
    /// delta_avg of Cache-Prior.
    pub delta: DeltaEstimate,
}

impl Default for GridOptions {
    fn default() -> Self {
        GridOptions {
            j: None,
            max_rank: MaxRankGrid::Offset,
            points: 50,
            delta: DeltaEstimate::Running,
        }
    }
}

/// J of Sec. 4.2 for a top-K: 1 for K <= 2, else 2, never above K.
pub fn default_j(top_k: usize) -> usize {
    if top_k <= 2 {
        1.min(top_k)
    } else {
        2
    }
}

/// `n` equidistant points of [0, 1], both ends included (one point: 0).
pub fn unit_grid(n: usize) -> Vec<f64> {
    match n {
        0 => Vec::new(),
        1 => vec![0.0],
        _ => (0..n).map(|i| i as f64 / (n - 1) as f64).collect(),
    }
}

/// The routers of a sweep: top-K, then pruning, Max-Rank, Cumsum and Cache-Prior over their
/// grids (module doc).
pub fn grid(experts: usize, top_k: usize, options: &GridOptions) -> Vec<RouterSpec> {
    let j = options.j.unwrap_or_else(|| default_j(top_k));
    let mut specs = vec![RouterSpec::TopK];
    specs.extend((1..=top_k).map(|h| RouterSpec::Pruning { h }));
    let last_m = match options.max_rank {
        MaxRankGrid::Offset => (2 * top_k).min(experts),
        MaxRankGrid::Full => experts,
    };
    specs.extend((top_k..=last_m).map(|m| RouterSpec::MaxRank { m, j }));
    let unit = unit_grid(options.points);
    specs.extend(unit.iter().map(|&p| RouterSpec::Cumsum { p, j }));
    specs.extend(unit.iter().map(|&lambda| RouterSpec::CachePrior {
        lambda,
        j,
        delta: options.delta,
    }));
    specs
}

/// The default cache sizes: E/4, E/2 (the paper's default) and 3E/4, each at least K, distinct.
pub fn default_capacities(experts: usize, top_k: usize) -> Vec<usize> {
    let mut c: Vec<usize> = [experts / 4, experts / 2, 3 * experts / 4]
        .iter()
        .map(|&c| c.max(top_k))
        .collect();
    c.dedup();
    c
}

/// Indices of the Pareto-optimal points when `x` is minimised and `y` maximised, by increasing
/// x. Of equal points only the first is kept; points with a NaN coordinate are skipped.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..points.len())
        .filter(|&i| !points[i].0.is_nan() && !points[i].1.is_nan())
        .collect();
    idx.sort_by(|&a, &b| {
        let (pa, pb) = (points[a], points[b]);
        pa.0.total_cmp(&pb.0)
            .then(pb.1.total_cmp(&pa.1))
            .then(a.cmp(&b))
    });
    let mut front = Vec::new();
    let mut best = f64::NEG_INFINITY;
    for i in idx {
        if points[i].1 > best {
            best = points[i].1;
            front.push(i);
        }
    }
    front
}

/// One (router, capacity) replay of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    /// The router with its knob (`cumsum:p=0.5,j=1`).
    pub router: String,
    /// Its family (`cumsum`).
    pub family: &'static str,
    /// The knob's value (h, M, p or lambda).
    pub knob: f64,
    /// Cache capacity (per layer, or of the pool).
    pub capacity: usize,
    /// Loads / (K x steps) (eq. (4), normalised by K).
    pub miss_rate: f64,
    /// Experts loaded.
    pub loads: u64,
    /// Share of the original top-K kept.
    pub share_topk_kept: f64,
    /// Mean router mass kept (None without probabilities).
    pub mass_kept: Option<f64>,
    /// Mean 1-based original rank of the chosen experts (None without ranks).
    pub mean_rank: Option<f64>,
    /// Mean cache residency in steps, all caches pooled.
    pub lifetime_mean_steps: f64,
    /// Its standard deviation.
    pub lifetime_std_steps: f64,
}

impl SweepPoint {
    fn new(spec: &RouterSpec, run: &RoutedReplay) -> Self {
        SweepPoint {
            router: run.router.clone(),
            family: spec.family(),
            knob: spec.knob(),
            capacity: run.capacity,
            miss_rate: run.miss_rate,
            loads: run.loads,
            share_topk_kept: run.quality.share_topk_kept,
            mass_kept: run.quality.mass_kept,
            mean_rank: run.quality.mean_rank,
            lifetime_mean_steps: run.total.lifetime_mean_steps,
            lifetime_std_steps: run.total.lifetime_std_steps,
        }
    }

    /// The value of a proxy, oriented so that larger is better (mean rank negated).
    pub fn proxy(&self, proxy: Proxy) -> Option<f64> {
        match proxy {
            Proxy::ShareTopkKept => Some(self.share_topk_kept),
            Proxy::MassKept => self.mass_kept,
            Proxy::MeanRank => self.mean_rank.map(|r| -r),
        }
    }
}

/// A quality proxy a front is drawn against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Proxy {
    /// Share of the original top-K kept (larger is better).
    ShareTopkKept,
    /// Router mass kept (larger is better).
    MassKept,
    /// Mean original rank of the chosen experts (smaller is better).
    MeanRank,
}

impl Proxy {
    /// All proxies.
    pub const ALL: [Proxy; 3] = [Proxy::ShareTopkKept, Proxy::MassKept, Proxy::MeanRank];

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Proxy::ShareTopkKept => "share_topk_kept",
            Proxy::MassKept => "mass_kept",
            Proxy::MeanRank => "mean_rank",
        }
    }
}

/// A Pareto front of miss rate (minimised) against one proxy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Front {
    /// The cache capacity.
    pub capacity: usize,
    /// The proxy.
    pub proxy: Proxy,
    /// A router family, or `all` for the front over every router.
    pub family: &'static str,
    /// Indices into the report's `points`, by increasing miss rate.
    pub points: Vec<usize>,
}

/// Fronts per capacity, proxy and family (and over all families), skipping proxies the trace
/// cannot measure.
pub fn fronts(points: &[SweepPoint], capacities: &[usize]) -> Vec<Front> {
    let mut families: Vec<&'static str> = Vec::new();
    for p in points {
        if !families.contains(&p.family) {
            families.push(p.family);
        }
    }
    let mut out = Vec::new();
    for &capacity in capacities {
        for proxy in Proxy::ALL {
            for family in std::iter::once("all").chain(families.iter().copied()) {
                let members: Vec<usize> = (0..points.len())
                    .filter(|&i| {
                        points[i].capacity == capacity
                            && (family == "all" || points[i].family == family)
                            && points[i].proxy(proxy).is_some()
                    })
                    .collect();
                if members.is_empty() {
                    continue;
                }
                let xy: Vec<(f64, f64)> = members
                    .iter()
                    .map(|&i| (points[i].miss_rate, points[i].proxy(proxy).unwrap_or(0.0)))
                    .collect();
                out.push(Front {
                    capacity,
                    proxy,
                    family,
                    points: pareto_front(&xy).into_iter().map(|i| members[i]).collect(),
                });
            }
        }
    }
    out
}

/// Runs every (router, capacity) replay in parallel (rayon) over one table, in grid order:
/// routers outer, capacities inner. `make_policy(C, universe)` builds each cache.
pub fn sweep<P, F>(
    table: &RankTable,
    routers: &[RouterSpec],
    capacities: &[usize],
    options: &ReplayOptions,
    make_policy: F,
) -> Result<Vec<SweepPoint>, Error>
where
    P: Policy,
    F: Fn(usize, usize) -> P + Sync,
{
    let jobs: Vec<(RouterSpec, usize)> = routers
        .iter()
        .flat_map(|s| capacities.iter().map(move |&c| (*s, c)))
        .collect();
    let options = ReplayOptions {
        per_layer_stats: false,
        ..*options
    };
    jobs.par_iter()
        .map(|(spec, capacity)| {
            replay_routed(table, spec, *capacity, &options, &make_policy)
                .map(|run| SweepPoint::new(spec, &run))
        })
        .collect()
}

/// Options of [`sweep_report`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SweepOptions {
    /// Cache capacities; empty: [`default_capacities`].
    pub capacities: Vec<usize>,
    /// The routers; empty: [`grid`] with `grid`.
    pub routers: Vec<RouterSpec>,
    /// The grid when `routers` is empty.
    pub grid: GridOptions,
    /// Scope and step order.
    pub replay: ReplayOptions,
}

/// Output of a sweep: every point, and the fronts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The trace.
    pub trace: TraceInfo,
    /// The eviction policy (paper 002 uses LRU for every router).
    pub policy: String,
    /// Per-layer caches or a pool.
    pub layout: Scope,
    /// Whether a step's experts reach the cache in router-weight order (Sec. 4.2).
    pub order_by_weight: bool,
    /// The capacities swept.
    pub capacities: Vec<usize>,
    /// Every (router, capacity) replay, routers outer, capacities inner.
    pub points: Vec<SweepPoint>,
    /// Pareto fronts of miss rate against each proxy, per capacity and family.
    pub fronts: Vec<Front>,
}

/// Sweeps a trace with LRU caches (the paper's policy for every router).
pub fn sweep_report(trace: &Trace, options: &SweepOptions) -> Result<SweepReport, Error> {
    sweep_report_with(trace, options, "lru", Lru::new)
}

/// Sweeps a trace with the caches `make_policy(C, universe)` builds, named `policy`.
pub fn sweep_report_with<P, F>(
    trace: &Trace,
    options: &SweepOptions,
    policy: &str,
    make_policy: F,
) -> Result<SweepReport, Error>
where
    P: Policy,
    F: Fn(usize, usize) -> P + Sync,
{
    let table = RankTable::new(trace);
    let routers = if options.routers.is_empty() {
        grid(trace.experts, trace.top_k, &options.grid)
            .into_iter()
            .filter(|s| table.supports(s).is_ok())
            .collect()
    } else {
        options.routers.clone()
    };
    let capacities = if options.capacities.is_empty() {
        default_capacities(trace.experts, trace.top_k)
    } else {
        options.capacities.clone()
    };
    let points = sweep(&table, &routers, &capacities, &options.replay, make_policy)?;
    Ok(SweepReport {
        moe_opt_version: VERSION,
        trace: TraceInfo::new(trace),
        policy: policy.into(),
        layout: options.replay.layout,
        order_by_weight: options.replay.order_by_weight,
        fronts: fronts(&points, &capacities),
        capacities,
        points,
    })
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{x:.4}"))
}

impl SweepReport {
    /// The trace, then one table: per capacity, each family's front of miss rate against
    /// router mass kept (or share of top-K kept when the trace has no probabilities).
    pub fn text(&self) -> String {
        let mut s = String::new();
        self.trace.text(&mut s);
        let _ = writeln!(
            s,
            "{} {}, {} replays",
            self.policy,
            self.layout.caches(),
            self.points.len()
        );
        let proxy = if self.points.iter().all(|p| p.mass_kept.is_some()) {
            Proxy::MassKept
        } else {
            Proxy::ShareTopkKept
        };
        let _ = writeln!(
            s,
            "per capacity, each family's front of miss rate vs {}:",
            proxy.name()
        );
        let mut rows = Vec::new();
        for &c in &self.capacities {
            for f in self
                .fronts
                .iter()
                .filter(|f| f.capacity == c && f.proxy == proxy && f.family != "all")
            {
                rows.extend(f.points.iter().map(|&i| {
                    let p = &self.points[i];
                    vec![
                        p.router.clone(),
                        c.to_string(),
                        format!("{:.4}", p.miss_rate),
                        format!("{:.4}", p.share_topk_kept),
                        opt(p.mass_kept),
                        opt(p.mean_rank),
                    ]
                }));
            }
        }
        s.push_str(&table(
            &[
                "router",
                "capacity",
                "miss rate",
                "top-K kept",
                "mass kept",
                "mean rank",
            ],
            &rows,
            1,
        ));
        s
    }
}

/// Output of [`route`]: one router replayed at one capacity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteReport {
    /// moe-opt version.
    pub moe_opt_version: &'static str,
    /// The trace.
    pub trace: TraceInfo,
    /// The eviction policy.
    pub policy: String,
    /// Per-layer caches or a pool.
    pub layout: Scope,
    /// The replay: totals, per-layer statistics, quality proxies.
    pub result: RoutedReplay,
}

/// Replays a trace with one router (a command-line name such as `cumsum:p=0.6,j=1`) and LRU
/// caches of `capacity`.
pub fn route(
    trace: &Trace,
    router: &str,
    capacity: usize,
    options: &ReplayOptions,
) -> Result<RouteReport, Error> {
    let spec: RouterSpec = router
        .parse()
        .map_err(|reason: String| Error::command_line("--method", reason))?;
    let table = RankTable::new(trace);
    let result = replay_routed(&table, &spec, capacity, options, Lru::new)?;
    Ok(RouteReport {
        moe_opt_version: VERSION,
        trace: TraceInfo::new(trace),
        policy: "lru".into(),
        layout: options.layout,
        result,
    })
}

impl RouteReport {
    /// Per layer and in total: steps, loads, miss rate and lifetime; then the quality proxies.
    pub fn text(&self) -> String {
        let r = &self.result;
        let q = &r.quality;
        let mut s = format!(
            "{} on {} ({} caches of {}; the total's miss rate is loads / (K x steps))\n",
            r.router, self.trace.name, self.policy, r.capacity
        );
        let row = |name: String, steps: u64, loads: u64, miss_rate: f64, st: &CacheStats| {
            vec![
                name,
                steps.to_string(),
                loads.to_string(),
                format!("{miss_rate:.4}"),
                lifetime(st),
            ]
        };
        let mut rows: Vec<Vec<String>> = (r.per_layer.iter().enumerate())
            .map(|(l, st)| row(l.to_string(), st.steps, st.loads, st.miss_rate, st))
            .collect();
        rows.push(row("total".into(), r.steps, r.loads, r.miss_rate, &r.total));
        s.push_str(&table(
            &["layer", "steps", "loads", "miss rate", "lifetime (steps)"],
            &rows,
            1,
        ));
        s.push_str(&table(
            &["top-K kept", "mass kept", "mean rank", "experts per step"],
            &[vec![
                format!("{:.4}", q.share_topk_kept),
                opt(q.mass_kept),
                opt(q.mean_rank),
                format!("{:.2}", q.chosen_per_step),
            ]],
            0,
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_front_of_hand_points() {
        // Sorted by miss rate (then quality, best first): (0.05, 0.2) #4 kept; (0.1, 0.5) #0
        // kept; (0.1, 0.5) #5 equal, dropped; (0.15, 0.4) #2 dominated by #0; (0.2, 0.9) #1
        // kept; (0.3, 0.9) #3 dominated by #1; (0.4, NaN) skipped.
        let pts = [
            (0.1, 0.5),
            (0.2, 0.9),
            (0.15, 0.4),
            (0.3, 0.9),
            (0.05, 0.2),
            (0.1, 0.5),
            (0.4, f64::NAN),
        ];
        assert_eq!(pareto_front(&pts), vec![4, 0, 1]);
    }

    #[test]
    fn paper_grid_sizes() {
        // E = 8, K = 2, J = 1: top-k, pruning h = 1, 2, max-rank M = 2, 3, 4, 50 + 50 points.
        let g = grid(8, 2, &GridOptions::default());
        assert_eq!(g.len(), 1 + 2 + 3 + 50 + 50);
        assert!(g.contains(&RouterSpec::MaxRank { m: 4, j: 1 }));
        assert!(!g.contains(&RouterSpec::MaxRank { m: 5, j: 1 }));
        // E = 64, K = 6: J = 2; the full Max-Rank grid is M = 6..=64, 59 values.
        let full = GridOptions {
            max_rank: MaxRankGrid::Full,
            ..GridOptions::default()
        };
        let g = grid(64, 6, &full);
        assert_eq!(g.iter().filter(|s| s.family() == "max-rank").count(), 59);
        assert!(g.contains(&RouterSpec::Cumsum { p: 1.0, j: 2 }));
        assert_eq!(unit_grid(50)[1], 1.0 / 49.0);
        assert_eq!(default_capacities(8, 2), vec![2, 4, 6]);
        assert_eq!(default_capacities(4, 2), vec![2, 3]);
    }
}
