//! A proved upper bound on OPT of P1 (18) at the paper's sizes: the Lagrangian relaxation of
//! the storage rows (18b), each part solved as an LP whose bound is proved by weak duality.
//!
//! ## The bound
//!
//! For prices mu_n >= 0 (one per server) and every placement X within the storage Q_n,
//!
//! F(X) <= F(X) + sum_n mu_n (Q_n - sum_e b_e x_{n,e}) = sum_n mu_n Q_n + sum_P f_P(X_P; mu),
//!
//! because each added term is non-negative. F of (17) is a sum over the routing demands
//! ([`LatencyModel::demands`]), and a demand's latency depends only on the placement of its own
//! experts R_d, all in one MoE layer (R_d is part of one activated set). So the demands of one
//! layer form a part P whose value f_P(X_P; mu) = sum_{d in P} W_d (G_d(empty) - G_d(X)) -
//! sum_{n, e in P} mu_n b_e x_{n,e} depends only on X_P, the placement of P's experts, and
//! distinct parts share no expert (experts no demand needs add only -mu_n b_e x_{n,e} <= 0 and
//! are left empty). Hence
//!
//! OPT <= L(mu) = sum_n mu_n Q_n + sum_P max_{X_P} f_P(X_P; mu)   for every mu >= 0,
//!
//! with X_P free of (18b). Each max is bounded from above by the LP relaxation of the part's
//! exact MILP ([`SlimCachingMilp::part`]: the model of P1 restricted to P's demands, whose
//! integer optimum is max f_P, see [`super::milp`]), and that LP's optimum by the weak-duality
//! bound of HiGHS's duals ([`Relaxation`]), which holds whatever the solver's tolerances. So
//! every evaluated mu gives a proved bound; the smallest is reported. Nothing here uses a
//! property of F beyond its being a sum over demands: not Prop. 1's submodularity nor any
//! monotonicity, which the claims check.
//!
//! At the best prices L is the LP relaxation of the whole of P1 (the storage rows are the only
//! rows linking parts), which the solver cannot finish at the paper's size (356,394 variables,
//! 652,239 rows) while each part is a few thousand variables.
//!
//! ## The search over prices
//!
//! L is convex and piecewise linear in mu, with the subgradient g_n = Q_n - sum_e b_e x_{n,e}
//! at the parts' LP solutions. Prices are found by a cutting-plane method with a box trust
//! region (Kelley's method stabilised): the next mu minimises the largest of the cuts
//! L(mu_k) + g_k (mu - mu_k) within a box around the best mu so far; the box doubles after a
//! step that gains and halves after one that does not. It stops when the cuts prove that no
//! mu within the box (not limited by the trust region) improves the best bound by more than
//! [`LagrangianOptions::tolerance`] relative, when the bound is within the target gap of the
//! caller's incumbent, at the time limit, or after [`LagrangianOptions::max_iterations`]
//! evaluations. Prices are scaled by the largest storage Q (mu Q_max, in the objective's unit
//! per full server) so that the master LP is well scaled.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::Instant;

use super::evaluate::LatencyModel;
use super::milp::{SlimCachingMilp, OBJECTIVE_SCALE};
use super::model::{ExpertId, ServerId};
use crate::error::Error;
use crate::milp::{Milp, Relaxation, Sense, SolveOptions, VarId};

/// When the search over prices stops.
#[derive(Debug, Clone, PartialEq)]
pub struct LagrangianOptions {
    /// Time limit and clock (only `time_limit_s` and `started` are used).
    pub solve: SolveOptions,
    /// Stop once the bound is within this relative gap of `incumbent` (0: never for that).
    pub gap: f64,
    /// The best known F, seconds (for `gap`).
    pub incumbent: Option<f64>,
    /// Relative improvement of the bound below which the search has converged.
    pub tolerance: f64,
    /// Most evaluations of L.
    pub max_iterations: usize,
}

impl Default for LagrangianOptions {
    fn default() -> Self {
        LagrangianOptions {
            solve: SolveOptions::default(),
            gap: 0.0,
            incumbent: None,
            tolerance: 1e-6,
            max_iterations: 400,
        }
    }
}

/// Why the search over prices stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// No price within the trust region improves the bound by more than the tolerance.
    Converged,
    /// The bound is within the target gap of the incumbent.
    Gap,
    /// The time limit.
    TimeLimit,
    /// [`LagrangianOptions::max_iterations`].
    Iterations,
}

/// One evaluation of L, as reported to the caller's progress.
#[derive(Debug, Clone, PartialEq)]
pub struct Iteration {
    /// 1 for the first evaluation.
    pub number: usize,
    /// L at this iteration's prices, seconds.
    pub value: f64,
    /// The best bound so far, seconds.
    pub best: f64,
}

/// The outcome: the best proved bound and the prices that gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct LagrangianBound {
    /// The smallest L found: an upper bound on OPT of P1, seconds.
    pub bound: f64,
    /// Its prices mu_n, seconds of F per byte.
    pub prices: Vec<f64>,
    /// At those prices, each (server, expert) pair's value in the parts' LP solutions (in
    /// [0, 1]; pairs no demand needs are absent): a guide for rounding to a placement.
    pub fractional: Vec<(ServerId, ExpertId, f64)>,
    /// Evaluations of L.
    pub iterations: usize,
    /// Why the search stopped.
    pub stop: Stop,
}

/// Threads that share the parts (each owns its parts' HiGHS models, which stay on the thread
/// that made them). The split and the order of summation are fixed, so the bound does not
/// depend on scheduling or on the machine.
pub const WORKERS: usize = 2;

/// One part: its LP relaxation, per placement variable (server, expert, bytes, variable), and
/// the capacity-free bound on its value (used for a part the time limit leaves unsolved).
struct Part {
    lp: Relaxation,
    placement: Vec<(ServerId, ExpertId, u64, VarId)>,
    ceiling: f64,
}

impl Part {
    /// The part of the given demands; its ceiling is sum_d W_d (G_d(empty) - least G_d)
    /// ([`LatencyModel::least_latency`]), at least max_X f_P(X; mu) since mu's terms are <= 0.
    fn new(model: &LatencyModel, demands: Vec<usize>) -> Result<Self, Error> {
        let ceiling = demands
            .iter()
            .map(|&d| {
                let d = &model.demands()[d];
                d.weight * (model.cloud_latency(d) - model.least_latency(d))
            })
            .sum::<f64>()
            * OBJECTIVE_SCALE;
        let milp = SlimCachingMilp::part(model, demands);
        let placement = milp
            .placement_vars()
            .map(|(n, e, v)| (n, e, model.expert_bytes(e), v))
            .collect();
        Ok(Part {
            lp: Relaxation::new(&milp.milp)?,
            placement,
            ceiling,
        })
    }
}

/// One worker's share of L at some prices: its parts' bounds, the bytes their LP solutions
/// place per server, the pairs' LP values, and whether every part was solved (else the time
/// limit left some at their ceiling, and the bytes are incomplete).
struct Partial {
    value: f64,
    bytes: Vec<f64>,
    fractional: Vec<(ServerId, ExpertId, f64)>,
    complete: bool,
}

/// Builds the parts of `groups` and answers every price vector received with its [`Partial`]
/// (prices per full server of `unit` bytes), until the prices' channel closes.
fn work(
    model: &LatencyModel,
    groups: Vec<Vec<usize>>,
    unit: f64,
    deadline: Option<Instant>,
    prices: mpsc::Receiver<Vec<f64>>,
    results: mpsc::Sender<Result<Partial, Error>>,
) {
    let built: Result<Vec<Part>, Error> = groups.into_iter().map(|g| Part::new(model, g)).collect();
    let mut parts = match built {
        Ok(parts) => parts,
        Err(e) => {
            let _ = results.send(Err(e));
            return;
        }
    };
    for mu in prices {
        let partial = evaluate(&mut parts, &mu, unit, model.servers(), deadline);
        if results.send(partial).is_err() {
            return;
        }
    }
}

/// The worker's parts at prices `mu` (see [`Partial`]).
fn evaluate(
    parts: &mut [Part],
    mu: &[f64],
    unit: f64,
    servers: usize,
    deadline: Option<Instant>,
) -> Result<Partial, Error> {
    let mut out = Partial {
        value: 0.0,
        bytes: vec![0.0; servers],
        fractional: Vec::new(),
        complete: true,
    };
    for part in parts.iter_mut() {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()).as_secs_f64());
        if left.is_some_and(|t| t <= 0.0) {
            out.value += part.ceiling;
            out.complete = false;
            continue;
        }
        for &(n, _, bytes, v) in &part.placement {
            part.lp.set_cost(v, -mu[n.index()] * bytes as f64 / unit)?;
        }
        let solved = part.lp.solve(left)?;
        out.value += solved.bound.min(part.ceiling);
        for &(n, e, bytes, v) in &part.placement {
            let x = solved.values[v.0].clamp(0.0, 1.0);
            out.bytes[n.index()] += x * bytes as f64;
            out.fractional.push((n, e, x));
        }
    }
    Ok(out)
}

/// The demands grouped by the MoE layer of their experts (the parts), dealt to the
/// [`WORKERS`] largest first, each to the least loaded (by demands; ties to the lower index).
fn shares(model: &LatencyModel) -> Vec<Vec<Vec<usize>>> {
    let catalogue = model.catalogue();
    let mut layers: BTreeMap<(u32, u32), Vec<usize>> = BTreeMap::new();
    for (d, demand) in model.demands().iter().enumerate() {
        if let Some(&e) = demand.missing.first() {
            let r = catalogue.expert_ref(e);
            layers.entry((r.model.0, r.layer.0)).or_default().push(d);
        }
    }
    let mut groups: Vec<Vec<usize>> = layers.into_values().collect();
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    let mut shares = vec![Vec::new(); WORKERS];
    let mut load = [0usize; WORKERS];
    for g in groups {
        let w = (0..WORKERS).min_by_key(|&w| load[w]).unwrap_or(0);
        load[w] += g.len();
        shares[w].push(g);
    }
    shares
}

/// L at some prices (the objective's unit), its subgradient (per full server), the pairs' LP
/// values, and whether every part was solved.
struct Evaluated {
    value: f64,
    subgradient: Vec<f64>,
    fractional: Vec<(ServerId, ExpertId, f64)>,
    complete: bool,
}

/// The Lagrangian bound of P1 (module doc); `progress` hears of every evaluation.
pub fn lagrangian_bound(
    model: &LatencyModel,
    options: &LagrangianOptions,
    progress: impl FnMut(&Iteration),
) -> Result<LagrangianBound, Error> {
    let began = options.solve.started.unwrap_or_else(Instant::now);
    let deadline = options
        .solve
        .time_limit_s
        .map(|limit| began + std::time::Duration::from_secs_f64(limit.max(0.0)));
    let capacity: Vec<f64> = (0..model.servers())
        .map(|n| model.capacity(ServerId(n as u32)) as f64)
        .collect();
    let unit = capacity.iter().copied().fold(1.0, f64::max);
    std::thread::scope(|scope| {
        let mut jobs = Vec::with_capacity(WORKERS);
        let mut results = Vec::with_capacity(WORKERS);
        for share in shares(model) {
            let (job, prices) = mpsc::channel();
            let (result, answers) = mpsc::channel();
            scope.spawn(move || work(model, share, unit, deadline, prices, result));
            jobs.push(job);
            results.push(answers);
        }
        let evaluate = |mu: &[f64]| -> Result<Evaluated, Error> {
            for job in &jobs {
                job.send(mu.to_vec())
                    .map_err(|_| Error::Solver("a Lagrangian worker stopped".into()))?;
            }
            let mut value: f64 = mu.iter().zip(&capacity).map(|(p, q)| p * q / unit).sum();
            let mut subgradient: Vec<f64> = capacity.iter().map(|q| q / unit).collect();
            let mut fractional = Vec::new();
            let mut complete = true;
            for answers in &results {
                let partial = answers
                    .recv()
                    .map_err(|_| Error::Solver("a Lagrangian worker stopped".into()))??;
                value += partial.value;
                for (g, b) in subgradient.iter_mut().zip(&partial.bytes) {
                    *g -= b / unit;
                }
                fractional.extend(partial.fractional);
                complete &= partial.complete;
            }
            Ok(Evaluated {
                value,
                subgradient,
                fractional,
                complete,
            })
        };
        search(model, options, unit, deadline, evaluate, progress)
    })
}

/// The search over prices (module doc) with `evaluate` giving L; prices per full server of
/// `unit` bytes.
fn search(
    model: &LatencyModel,
    options: &LagrangianOptions,
    unit: f64,
    deadline: Option<Instant>,
    mut evaluate: impl FnMut(&[f64]) -> Result<Evaluated, Error>,
    mut progress: impl FnMut(&Iteration),
) -> Result<LagrangianBound, Error> {
    let servers = model.servers();
    // Prices above the most any one byte can earn leave every server empty: L only grows there.
    let mut earning = vec![0.0f64; model.experts()];
    for d in model.demands() {
        for e in &d.missing {
            earning[e.index()] += d.weight * model.cloud_latency(d) * OBJECTIVE_SCALE;
        }
    }
    let ceiling = earning
        .iter()
        .enumerate()
        .map(|(e, &w)| w * unit / model.expert_bytes(ExpertId(e as u32)) as f64)
        .fold(0.0, f64::max);
    let out_of_time = || deadline.is_some_and(|d| Instant::now() >= d);
    let seconds = |v: f64| v / OBJECTIVE_SCALE;
    let within_gap = |bound: f64| {
        options.incumbent.is_some_and(|f| {
            f > 0.0 && options.gap > 0.0 && (seconds(bound) - f) / f <= options.gap
        })
    };
    let mut search = Search {
        cuts: Vec::new(),
        best: None,
        iterations: 0,
    };
    let mut measure = |search: &mut Search, prices: Vec<f64>| -> Result<Option<Stop>, Error> {
        let e = evaluate(&prices)?;
        search.iterations += 1;
        if search.best.as_ref().is_none_or(|b| e.value < b.0) {
            search.best = Some((e.value, prices.clone(), e.fractional));
        }
        let best = search.best.as_ref().map_or(e.value, |b| b.0);
        progress(&Iteration {
            number: search.iterations,
            value: seconds(e.value),
            best: seconds(best),
        });
        if !e.complete {
            return Ok(Some(Stop::TimeLimit));
        }
        search.cuts.push((prices, e.value, e.subgradient));
        Ok(if within_gap(best) {
            Some(Stop::Gap)
        } else if out_of_time() {
            Some(Stop::TimeLimit)
        } else if search.iterations >= options.max_iterations {
            Some(Stop::Iterations)
        } else {
            None
        })
    };
    // Phase 1: one price for every server, from a guess moved by 25 % steps and then bisected
    // on the sign of the subgradient's sum (L's slope along that ray) until bracketed within
    // 10 %.
    let mut bracket: (Option<f64>, Option<f64>) = (None, None);
    let mut price = price_guess(model, unit).min(ceiling);
    let mut stop = None;
    while stop.is_none() {
        stop = measure(&mut search, vec![price; servers])?;
        let overfull = search
            .cuts
            .last()
            .is_some_and(|c| c.2.iter().sum::<f64>() < 0.0);
        if overfull {
            bracket.0 = Some(price);
        } else {
            bracket.1 = Some(price);
        }
        price = match bracket {
            (Some(lo), Some(hi)) if hi - lo <= 0.1 * hi => break,
            (Some(lo), Some(hi)) => (lo + hi) / 2.0,
            (Some(lo), None) if lo >= ceiling => break,
            (Some(lo), None) => (1.25 * lo).max(1e-6 * ceiling).min(ceiling),
            (None, Some(hi)) if hi <= 0.0 => break,
            (None, Some(hi)) => hi / 1.25,
            (None, None) => unreachable!("one side was just set"),
        };
    }
    // Phase 2: cutting planes in a box around the best prices.
    let (mut center, mut center_value) = match &search.best {
        Some(b) => (b.1.clone(), b.0),
        None => unreachable!("phase 1 evaluates at least once"),
    };
    let mut radius = match bracket {
        (Some(lo), Some(hi)) => hi - lo,
        _ => 0.25 * center.iter().copied().fold(0.0, f64::max),
    }
    .max(1e-9 * ceiling);
    while stop.is_none() {
        let lower: Vec<f64> = center.iter().map(|c| (c - radius).max(0.0)).collect();
        let upper: Vec<f64> = center.iter().map(|c| (c + radius).min(ceiling)).collect();
        let (next, model_value) = master(&search.cuts, &lower, &upper)?;
        let predicted = center_value - model_value;
        // A coordinate held by the trust region (not by 0 or the ceiling).
        let slack = 1e-9 * radius;
        let held = next.iter().zip(&lower).zip(&upper).any(|((&p, &lo), &hi)| {
            (p <= lo + slack && lo > 0.0) || (p >= hi - slack && hi < ceiling)
        });
        if predicted <= options.tolerance * center_value.abs() {
            if held {
                radius *= 2.0;
                continue;
            }
            stop = Some(Stop::Converged);
            break;
        }
        stop = measure(&mut search, next.clone())?;
        let value = search.cuts.last().map_or(f64::INFINITY, |c| c.1);
        if value <= center_value - 0.1 * predicted {
            if held {
                radius *= 2.0;
            }
            center = next;
            center_value = value;
        } else {
            radius /= 2.0;
        }
    }
    let Some((bound, prices, fractional)) = search.best else {
        unreachable!("phase 1 evaluates at least once")
    };
    Ok(LagrangianBound {
        bound: seconds(bound),
        prices: prices.iter().map(|p| seconds(p / unit)).collect(),
        fractional,
        iterations: search.iterations,
        stop: stop.unwrap_or(Stop::Converged),
    })
}

/// The parts' LP values x_{n,e} at some prices.
type Fractional = Vec<(ServerId, ExpertId, f64)>;

/// The evaluations so far: the cuts (prices, L, subgradient), the best (L, prices, the parts'
/// LP values there) and their count.
struct Search {
    cuts: Vec<(Vec<f64>, f64, Vec<f64>)>,
    best: Option<(f64, Vec<f64>, Fractional)>,
    iterations: usize,
}

/// A first common price, per full server: each expert credited with its share of the demands
/// that need it (W_d G_d(empty) / |R_d| each), the experts taken densest first into the
/// servers' pooled storage, the price the density of the first that does not fit. Only a
/// starting point: phase 1 brackets the best common price from it.
fn price_guess(model: &LatencyModel, unit: f64) -> f64 {
    let mut credit = vec![0.0f64; model.experts()];
    for d in model.demands() {
        let share = d.weight * model.cloud_latency(d) * OBJECTIVE_SCALE / d.missing.len() as f64;
        for e in &d.missing {
            credit[e.index()] += share;
        }
    }
    let mut items: Vec<(f64, f64)> = credit
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0.0)
        .map(|(e, &c)| (c, model.expert_bytes(ExpertId(e as u32)) as f64))
        .collect();
    items.sort_by(|a, b| (b.0 / b.1).total_cmp(&(a.0 / a.1)));
    let mut room: f64 = (0..model.servers())
        .map(|n| model.capacity(ServerId(n as u32)) as f64)
        .sum();
    for (c, b) in items {
        if b > room {
            return c / b * unit;
        }
        room -= b;
    }
    0.0
}

/// The cutting-plane master: min t with t >= value_k + g_k (mu - mu_k) for every cut, mu in
/// the box; returns (mu, t).
fn master(
    cuts: &[(Vec<f64>, f64, Vec<f64>)],
    lower: &[f64],
    upper: &[f64],
) -> Result<(Vec<f64>, f64), Error> {
    let mut lp = Milp::new("Lagrangian master", Sense::Minimize);
    let mu: Vec<VarId> = lower
        .iter()
        .zip(upper)
        .enumerate()
        .map(|(n, (&lo, &hi))| lp.continuous(format!("mu_{n}"), lo, hi))
        .collect();
    let t = lp.continuous("t", f64::NEG_INFINITY, f64::INFINITY);
    lp.add_objective(t, 1.0);
    for (k, (at, value, g)) in cuts.iter().enumerate() {
        // t - g mu >= value - g at
        let mut terms = vec![(t, 1.0)];
        terms.extend(mu.iter().zip(g).map(|(&v, &gn)| (v, -gn)));
        let rhs = value - g.iter().zip(at).map(|(gn, a)| gn * a).sum::<f64>();
        lp.row(format!("cut{k}"), terms, rhs, f64::INFINITY);
    }
    let solved = lp.solve(&SolveOptions::default(), None)?;
    let values = solved
        .values
        .ok_or_else(|| Error::Solver("the Lagrangian master LP has no solution".into()))?;
    let t_value = values[t.0];
    Ok((mu.iter().map(|v| values[v.0]).collect(), t_value))
}
