//! The claims' checks: each derives its outcome from measurements (replays, exhaustive
//! search, the MILPs' proved statuses) and the certificates of [`super`]'s module doc.

use formulations::cache::exhaustive::fits_exhaustive;
use formulations::cache::model::Requests;
use formulations::cache::offline::{CacheInstance, Freedom, Schedule};
use serde_json::json;

use crate::cache::belady::belady_schedule;
use crate::cache::bounds::{layer_trace, run, run_from, OfflineMethod};
use crate::cache::pareto::{default_j, unit_grid};
use crate::cache::policy::Lru;
use crate::cache::routers::{replay_routed, DeltaEstimate, RankTable, ReplayOptions, RouterSpec};
use crate::claims::{Certificate, Check, CheckOptions, Outcome, ReferenceKind};

use super::*;

/// A check's outcome, or the inconclusive check that ended it early (what `?` returns).
pub(super) type Checked = Result<Check, Box<Check>>;

pub(super) fn inconclusive(note: impl Into<String>) -> Box<Check> {
    Box::new(Check::inconclusive(note))
}

/// The check of a [`Checked`] body, ended early or not.
pub(super) fn settle(checked: Checked) -> Check {
    checked.unwrap_or_else(|early| *early)
}

/// What an exact method established about OPT (loads): proved (`lower` = `upper` = OPT), or,
/// when the MILP stopped at its limit, OPT in [`lower`, `upper`].
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Reference {
    /// A proved lower bound: OPT where proved, else the MILP's best bound rounded up (loads
    /// are whole), 0 without one.
    pub(super) lower: u64,
    /// Loads of a feasible schedule, re-evaluated by the evaluator: OPT where proved.
    pub(super) upper: Option<u64>,
    /// How: `exhaustive`, or the MILP's status.
    pub(super) status: String,
    /// Whether `lower` is OPT itself.
    pub(super) proved: bool,
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
pub(super) const SANITY_MILP_SECONDS: f64 = 8.0;

/// `options` with the time limit capped at `SANITY_MILP_SECONDS`.
pub(super) fn sanity_limit(options: &CheckOptions) -> CheckOptions {
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
pub(super) fn forced_lower_bound(instance: &CacheInstance) -> u64 {
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
pub(super) fn optimum(
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

pub(super) fn belady_loads(instance: &CacheInstance) -> Result<u64, Box<Check>> {
    run(instance, OfflineMethod::Belady, &Default::default())
        .ok()
        .and_then(|r| r.report.loads)
        .ok_or_else(|| inconclusive("Belady failed"))
}

/// Inconclusive when the stream is too short for a miss rate, a long-run figure: with fewer
/// than 20 E requests the E compulsory loads alone exceed 5% of them.
pub(super) fn too_short(instance: &CacheInstance) -> Result<(), Box<Check>> {
    let requests = instance.steps() * instance.top_k();
    if requests < 20 * instance.experts() {
        return Err(inconclusive(format!(
            "{requests} requests, fewer than 20 E = {}: too short for a miss rate",
            20 * instance.experts()
        )));
    }
    Ok(())
}

pub(super) fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

/// A proved lower bound on an optimum's loads, at least 1: every schedule loads some expert at
/// its first step, the cache starting empty.
pub(super) fn least(lower: u64) -> f64 {
    lower.max(1) as f64
}

/// `sec48-belady-optimal`: Belady's loads against the fixed-routing optimum, which the MILP
/// (or the exhaustive search) establishes independently of Belady: proved, or when the MILP
/// stops, a pass from its bound (OPT >= lower = Belady, and Belady's schedule is feasible, so
/// Belady = OPT) and a fail from its incumbent (a schedule with fewer loads than Belady).
pub(super) fn check_belady_optimal(instance: &CacheInstance, options: &CheckOptions) -> Checked {
    let opt = optimum(instance, false, options, None)?;
    let belady = belady_loads(instance)?;
    Ok(judge_belady_optimal(instance, belady, &opt))
}

/// The verdict of `sec48-belady-optimal` from Belady's loads and what the MILP established.
pub(super) fn judge_belady_optimal(
    instance: &CacheInstance,
    belady: u64,
    opt: &Reference,
) -> Check {
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
pub(super) fn check_flexible_below_belady(
    instance: &CacheInstance,
    options: &CheckOptions,
) -> Checked {
    let opt = optimum(instance, true, &sanity_limit(options), None)?;
    let belady = belady_loads(instance)?;
    Ok(judge_flexible_below_belady(instance, belady, &opt))
}

/// The verdict of `sec48-flexible-below-belady` from Belady's loads and OPT_flex's bounds.
pub(super) fn judge_flexible_below_belady(
    instance: &CacheInstance,
    belady: u64,
    opt: &Reference,
) -> Check {
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

pub(super) fn check_halves_lru(instance: &CacheInstance, _options: &CheckOptions) -> Checked {
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
pub(super) fn check_belady_below_lru(instance: &CacheInstance, _options: &CheckOptions) -> Checked {
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
pub(super) struct PriorSweep {
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
pub(super) fn replay_cache_prior(
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

pub(super) fn sweep_cache_prior(
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
pub(super) fn prior_mass_check(sweep: &PriorSweep, relation: &str) -> Check {
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
pub(super) fn prior_missed(sweep: &PriorSweep, margin: f64, note: String) -> Check {
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
pub(super) fn check_cache_prior_distance(
    instance: &CacheInstance,
    _options: &CheckOptions,
) -> Checked {
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

pub(super) fn check_cache_prior_below_belady(
    instance: &CacheInstance,
    _options: &CheckOptions,
) -> Checked {
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
pub(super) fn check_router_gap(
    instance: &CacheInstance,
    options: &CheckOptions,
    which: usize,
) -> Checked {
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
pub(super) fn judge_router_gap(
    spec: RouterSpec,
    loads: u64,
    opt: &Reference,
    note: String,
) -> Check {
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
