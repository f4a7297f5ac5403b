//! The ratio claims against a reference (an optimum of P1 or P2_n by exhaustive search or the
//! MILP, or, when the MILP stops at a limit, its best bound and its incumbent): the
//! references, the judging of value >= bound x reference on both sides (see
//! [`crate::claims::Certificate`]), and the claims that need no curvature: Prop. 3, Remark 2
//! and Alg. 3 = Alg. 2 (two optima compared).

use formulations::milp::MilpStatus;
use formulations::slimcaching::lagrangian::{lagrangian_bound, LagrangianOptions};
use formulations::slimcaching::milp::p1_variables;
use formulations::slimcaching::{
    ExpertId, IncrementalObjective, Instance, LatencyModel, Placement, Scope, ServerId,
    SlimCachingMilp,
};
use serde_json::{json, Value};
use verification::SetFunction;

use super::bounds::{p1_relaxation_bound, p2_modular_bound};
use super::set_functions::{eid, prefix, server_ground, sid, PlacementFunction};
use super::witnesses::placement_json;
use super::{
    compile, compile_top_k, fmt_opt, normalised, LAGRANGIAN_STATUS, P2_ENUMERATION_LIMIT,
    PAPER_SIZED_VARIABLES, RELAXATION_STATUS, TOLERANCE,
};
use crate::claims::{decide, Certificate, Check, CheckOptions, Outcome, ReferenceKind};
use crate::slimcaching::algorithms;

/// A reference value for a ratio claim: OPT (maximised) where proved, else an upper bound.
#[derive(Debug, Clone)]
pub(super) struct Reference {
    /// OPT, or an upper bound on it (`kind`).
    pub(super) value: Option<f64>,
    pub(super) kind: ReferenceKind,
    pub(super) status: Option<String>,
    /// The optimum's placement, or the solver's incumbent.
    pub(super) placement: Option<Placement>,
    /// A lower bound on OPT: `placement`'s value by the evaluator (`F`, minus the offset).
    pub(super) incumbent: Option<f64>,
}

impl Reference {
    /// `value` compared with this reference: its value, kind, solver status and the bounds
    /// on OPT, the certificate of the outcome, and the ratio where defined; bound, witness
    /// and margin by struct update.
    pub(super) fn check(&self, judged: Judged, value: f64, note: String) -> Check {
        let (lower, upper) = match self.kind {
            ReferenceKind::Optimum => (self.value, self.value),
            ReferenceKind::Bound => (self.incumbent, self.value),
            ReferenceKind::Baseline | ReferenceKind::None => (self.incumbent, None),
        };
        // OPT only bracketed: the ratio to it is the interval between the two ends.
        let ratio_interval = match (self.kind, lower, upper) {
            (ReferenceKind::Bound, Some(l), Some(u)) => ratio_of(value, Some(l))
                .zip(ratio_of(value, Some(u)))
                .map(|(a, b)| [a.min(b), a.max(b)]),
            _ => None,
        };
        Check {
            ratio_interval,
            value: Some(value),
            reference: self.value,
            reference_kind: self.kind,
            solver_status: self.status.clone(),
            ratio: ratio_of(value, self.value),
            lower,
            upper,
            certificate: judged.certificate,
            margin: judged.margin,
            ..Check::new(judged.outcome, note)
        }
    }
}

/// A ratio check's outcome, its margin and what certified it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Judged {
    pub(super) outcome: Outcome,
    pub(super) margin: Option<f64>,
    pub(super) certificate: Option<Certificate>,
}

fn status_name(s: MilpStatus) -> String {
    match s {
        MilpStatus::Optimal => "optimal",
        MilpStatus::GapLimit => "gap_limit",
        MilpStatus::TimeLimit => "time_limit",
        MilpStatus::Infeasible => "infeasible",
        MilpStatus::Unbounded => "unbounded",
    }
    .to_string()
}

/// Solves a SlimCaching MILP; the reference is its objective minus `offset` when proved
/// optimal, its best bound minus `offset` otherwise.
fn milp_reference(
    model: &LatencyModel,
    milp: &SlimCachingMilp,
    options: &CheckOptions,
    start: Option<&Placement>,
    offset: f64,
) -> Reference {
    match milp.solve(model, &options.solve, start) {
        Ok(sol) => {
            let s = &sol.solution;
            let (value, kind) = if s.is_optimal() && s.objective.is_some() {
                (s.objective.map(|o| o - offset), ReferenceKind::Optimum)
            } else if let Some(b) = s.best_bound {
                (Some(b - offset), ReferenceKind::Bound)
            } else {
                (None, ReferenceKind::None)
            };
            Reference {
                value,
                kind,
                status: Some(status_name(s.status)),
                incumbent: sol.placement.as_ref().map(|x| model.objective(x) - offset),
                placement: sol.placement,
            }
        }
        Err(e) => Reference {
            value: None,
            kind: ReferenceKind::None,
            status: Some(format!("error: {e}")),
            placement: None,
            incumbent: None,
        },
    }
}

/// Whether `model` is of the paper's size: its P1 MILP has more than
/// [`PAPER_SIZED_VARIABLES`] variables ([`p1_variables`]). There the ratio checks try a
/// one-pass bound ([`super::bounds`]) before the MILP; smaller instances go straight to the
/// exact solvers, which prove their optima in seconds.
fn paper_sized(model: &LatencyModel) -> bool {
    p1_variables(model) > PAPER_SIZED_VARIABLES
}

/// A one-pass upper bound `upper` on OPT (minus `offset`) as a reference, with `start`'s value
/// as the lower bound, when it certifies `value >= bound * OPT`; `None` when it does not.
fn bound_reference(
    model: &LatencyModel,
    upper: f64,
    start: Option<&Placement>,
    offset: f64,
    value: f64,
    bound: Option<f64>,
) -> Option<Reference> {
    let reference = Reference {
        value: Some(upper),
        kind: ReferenceKind::Bound,
        status: Some(RELAXATION_STATUS.into()),
        placement: start.cloned(),
        incumbent: start.map(|x| model.objective(x) - offset),
    };
    matches!(
        judge(value, &reference, bound).outcome,
        Outcome::Pass | Outcome::Vacuous
    )
    .then_some(reference)
}

/// P1's Lagrangian bound (within the solves' time limit) as a reference, with `start`'s value
/// as the lower bound, when it decides `value >= bound * OPT` (pass, vacuous or fail); `None`
/// when it does not or cannot be computed.
fn lagrangian_reference(
    model: &LatencyModel,
    options: &CheckOptions,
    start: Option<&Placement>,
    value: f64,
    bound: Option<f64>,
) -> Option<Reference> {
    let incumbent = start.map(|x| model.objective(x));
    let settings = LagrangianOptions {
        solve: options.solve.started_now(),
        incumbent,
        ..LagrangianOptions::default()
    };
    let upper = lagrangian_bound(model, &settings, |_| {}).ok()?.bound;
    let reference = Reference {
        value: Some(upper),
        kind: ReferenceKind::Bound,
        status: Some(LAGRANGIAN_STATUS.into()),
        placement: start.cloned(),
        incumbent,
    };
    (judge(value, &reference, bound).outcome != Outcome::Inconclusive).then_some(reference)
}

/// OPT of P1 for judging `value >= bound * OPT`: exhaustive search when small enough; on an
/// instance of the paper's size ([`paper_sized`]) the relaxation bound
/// [`p1_relaxation_bound`] when it certifies a pass, else the Lagrangian bound when it decides
/// the claim ([`lagrangian_reference`]); otherwise the MILP (started from `start`).
pub(super) fn p1_reference(
    model: &LatencyModel,
    options: &CheckOptions,
    start: Option<&Placement>,
    value: f64,
    bound: Option<f64>,
) -> Reference {
    match algorithms::exhaustive(model) {
        Ok((placement, value)) => Reference {
            value: Some(value),
            kind: ReferenceKind::Optimum,
            status: Some("exhaustive".into()),
            placement: Some(placement),
            incumbent: Some(value),
        },
        Err(_) => paper_sized(model)
            .then(|| {
                bound_reference(model, p1_relaxation_bound(model), start, 0.0, value, bound)
                    .or_else(|| lagrangian_reference(model, options, start, value, bound))
            })
            .flatten()
            .unwrap_or_else(|| {
                milp_reference(model, &SlimCachingMilp::p1(model), options, start, 0.0)
            }),
    }
}

/// max F~_n(S) over S within Q_n on server n, given `base` = X_{<n} (server n and later
/// empty): enumeration of server n's relevant experts when at most [`P2_ENUMERATION_LIMIT`]
/// (unless `force_milp`); else, on an instance of the paper's size, the bound
/// [`p2_modular_bound`] when it certifies `judged` = (value, bound) as a pass; else the MILP
/// of P2_n. The value is F~_n, i.e. minus F(base).
pub(super) fn p2_reference(
    model: &LatencyModel,
    base: &Placement,
    n: usize,
    options: &CheckOptions,
    start: Option<&Placement>,
    force_milp: bool,
    judged: (f64, Option<f64>),
) -> Reference {
    let q = model.capacity(sid(n));
    let ground: Vec<(ServerId, ExpertId)> = server_ground(model, n)
        .into_iter()
        .filter(|&(_, e)| model.expert_bytes(e) <= q)
        .collect();
    if ground.len() <= P2_ENUMERATION_LIMIT && !force_milp {
        let f = PlacementFunction::new(model, base, ground, |_| true);
        let sizes: Vec<u64> = f
            .ground
            .iter()
            .map(|&(_, e)| model.expert_bytes(e))
            .collect();
        let mut flags = vec![false; f.ground.len()];
        let mut best: (f64, Vec<bool>) = (f.value(&flags), flags.clone());
        enumerate_within(&f, &sizes, 0, q, &mut flags, &mut best);
        let mut placement = base.clone();
        for (i, &on) in best.1.iter().enumerate() {
            if on {
                placement.insert(f.ground[i].0, f.ground[i].1);
            }
        }
        return Reference {
            value: Some(best.0),
            kind: ReferenceKind::Optimum,
            status: Some("exhaustive".into()),
            placement: Some(placement),
            incumbent: Some(best.0),
        };
    }
    let offset = model.objective(base);
    if paper_sized(model) && !force_milp {
        let upper = p2_modular_bound(model, base, n);
        if let Some(r) = bound_reference(model, upper, start, offset, judged.0, judged.1) {
            return r;
        }
    }
    let scopes: Vec<Scope> = (0..model.servers())
        .map(|s| match s.cmp(&n) {
            std::cmp::Ordering::Less => Scope::Fixed(base.experts_on(sid(s)).collect()),
            std::cmp::Ordering::Equal => Scope::Free,
            std::cmp::Ordering::Greater => Scope::Fixed(Vec::new()),
        })
        .collect();
    let milp = SlimCachingMilp::build(model, &scopes);
    milp_reference(model, &milp, options, start, offset)
}

/// Depth-first enumeration of the subsets within capacity `room`; keeps the best value (the
/// first found on ties, exclusion before inclusion).
fn enumerate_within(
    f: &PlacementFunction,
    sizes: &[u64],
    k: usize,
    room: u64,
    flags: &mut Vec<bool>,
    best: &mut (f64, Vec<bool>),
) {
    if k == sizes.len() {
        let v = f.value(flags);
        if v > best.0 {
            *best = (v, flags.clone());
        }
        return;
    }
    enumerate_within(f, sizes, k + 1, room, flags, best);
    if sizes[k] <= room {
        flags[k] = true;
        enumerate_within(f, sizes, k + 1, room - sizes[k], flags, best);
        flags[k] = false;
    }
}

/// Pass / fail of `value >= bound * OPT` from the bounds on OPT (see
/// [`crate::claims::Certificate`]): a pass when it holds against the reference, OPT where
/// proved or else the solver's upper bound; a fail when it fails against OPT, or else against
/// the incumbent (a lower bound); inconclusive in between ([`decide`]: a closed inequality,
/// met within the tolerance is met). A pass whose target b x OPT is 0 (a bound of 0, or OPT = 0:
/// nothing to gain) is [`Outcome::Vacuous`], without margin or certificate: it only asks that
/// the algorithm lose nothing. The margin (see the module doc) is
/// taken against the value that decided: the distance of the raw slack v - b r from the
/// tolerance band [-allowance, allowance] over |r|, i.e. ratio - bound moved towards 0 by
/// allowance / r; `None` inside the band (the bound is met with equality) and when the ratio
/// is undefined (|r| <= the absolute tolerance), except on a fail, which keeps its slack over
/// max(|r|, 1e-12) (then a large negative number: the algorithm loses value where nothing is
/// to gain). Negative exactly on a fail.
pub(super) fn judge(value: f64, reference: &Reference, bound: Option<f64>) -> Judged {
    let inconclusive = Judged {
        outcome: Outcome::Inconclusive,
        margin: None,
        certificate: None,
    };
    let Some(b) = bound else {
        return inconclusive;
    };
    let (pass_by, fail_by) = match reference.kind {
        ReferenceKind::Optimum => (reference.value, reference.value),
        ReferenceKind::Bound => (reference.value, reference.incumbent),
        ReferenceKind::Baseline | ReferenceKind::None => (None, reference.incumbent),
    };
    let certificate = |by_optimum: bool, other: Certificate| {
        Some(if by_optimum {
            Certificate::Optimum
        } else {
            other
        })
    };
    let proved = reference.kind == ReferenceKind::Optimum;
    if let Some(r) = fail_by {
        let slack = TOLERANCE.slack(value, b * r);
        if slack < 0.0 {
            return Judged {
                outcome: Outcome::Fail,
                margin: Some(normalised(slack, r.abs())),
                certificate: certificate(proved, Certificate::Incumbent),
            };
        }
    }
    let Some(r) = pass_by else {
        return inconclusive;
    };
    let target = b * r;
    let raw = value - target;
    let allowance = TOLERANCE.abs + TOLERANCE.rel * value.abs().max(target.abs());
    if decide(raw, allowance, false) != Outcome::Pass {
        return inconclusive;
    }
    // A target of 0 (a bound of 0, or nothing to gain: OPT = 0) asks only that the algorithm
    // lose nothing: met here, but no test of the claim's ratio.
    if target <= TOLERANCE.abs {
        return Judged {
            outcome: Outcome::Vacuous,
            margin: None,
            certificate: None,
        };
    }
    Judged {
        outcome: Outcome::Pass,
        margin: (raw > allowance && ratio_of(value, Some(r)).is_some())
            .then(|| normalised(raw - allowance, r.abs())),
        certificate: certificate(proved, Certificate::Bound),
    }
}

/// value / reference, undefined when the reference is within the absolute tolerance of 0
/// (an optimum of rounding noise, e.g. 1e-22 s, would give meaningless ratios, and the
/// worst-case search would chase them).
pub(super) fn ratio_of(value: f64, reference: Option<f64>) -> Option<f64> {
    reference
        .filter(|r| r.abs() > TOLERANCE.abs)
        .map(|r| value / r)
}

/// A ratio claim's check from its numbers; the witness (placements and values) is attached
/// on failure only.
pub(super) fn ratio_check(
    value: f64,
    reference: &Reference,
    bound: Option<f64>,
    note: String,
    witness: impl FnOnce() -> Value,
) -> Check {
    let judged = judge(value, reference, bound);
    Check {
        bound,
        witness: (judged.outcome == Outcome::Fail).then(witness),
        ..reference.check(judged, value, note)
    }
}

/// Why a ratio check is not a pass or fail, for notes.
pub(super) fn reference_note(r: &Reference) -> String {
    match r.kind {
        ReferenceKind::Optimum => String::new(),
        ReferenceKind::Bound => format!(
            "; no proved optimum (solver status {}), only a bound",
            r.status.as_deref().unwrap_or("unknown")
        ),
        ReferenceKind::Baseline | ReferenceKind::None => format!(
            "; no reference ({})",
            r.status.as_deref().unwrap_or("no solver result")
        ),
    }
}

/// Claim `prop3-greedy-ratio`.
pub(super) fn check_prop3(instance: &Instance, options: &CheckOptions) -> Check {
    greedy_ratio(
        instance,
        options,
        "Alg. 1 (greedy)",
        "1 - 1/e = ",
        |model| (algorithms::greedy(model).placement, 1.0 - (-1.0f64).exp()),
    )
}

/// Claim `prop3-repaired` (module doc of `claims`, claim 12): the successive modified greedy
/// [`algorithms::successive_greedy`] against OPT of P1, bound [`prop3_repaired_bound`].
pub(super) fn check_prop3_repaired(instance: &Instance, options: &CheckOptions) -> Check {
    let name = "successive density greedy or best single expert (moe-opt)";
    greedy_ratio(instance, options, name, "", |model| {
        let run = algorithms::successive_greedy(model).placement;
        (run, prop3_repaired_bound(model.servers()))
    })
}

/// A Top-1 greedy's F against OPT of P1: `run` gives its placement and the ratio it claims
/// (`bound_name` precedes its value in the note).
fn greedy_ratio(
    instance: &Instance,
    options: &CheckOptions,
    algorithm: &str,
    bound_name: &str,
    run: impl Fn(&LatencyModel) -> (Placement, f64),
) -> Check {
    let model = match compile_top_k(instance, true) {
        Ok(m) => m,
        Err(check) => return *check,
    };
    let (placement, bound) = run(&model);
    let value = model.objective(&placement);
    let reference = p1_reference(&model, options, Some(&placement), value, Some(bound));
    let cat = model.catalogue();
    let short = algorithm.split(" (").next().unwrap_or(algorithm);
    let note = format!(
        "F({short}) = {value:.6e}, OPT = {}, ratio {} vs {bound_name}{bound:.4}{}",
        fmt_opt(reference.value),
        fmt_opt(ratio_of(value, reference.value)),
        reference_note(&reference)
    );
    ratio_check(value, &reference, Some(bound), note, || {
        json!({
            "algorithm": algorithm,
            "placement": placement_json(cat, &placement),
            "value": value,
            "optimum_placement": reference.placement.as_ref().map(|x| placement_json(cat, x)),
            "optimum": reference.value,
            "optimum_kind": reference.kind,
            "incumbent": reference.incumbent,
            "bound": bound,
        })
    })
}

/// The repaired Prop. 3's ratio on `servers` servers: alpha = (1 - 1/e)/2 per knapsack, and
/// alpha / (1 + alpha) for the successive composition of N >= 2 of them.
pub fn prop3_repaired_bound(servers: usize) -> f64 {
    let alpha = (1.0 - (-1.0f64).exp()) / 2.0;
    if servers <= 1 {
        alpha
    } else {
        alpha / (1.0 + alpha)
    }
}

/// Claim `remark2-half`.
pub(super) fn check_remark2(instance: &Instance, options: &CheckOptions) -> Check {
    let model = match compile_top_k(instance, true) {
        Ok(m) => m,
        Err(check) => return *check,
    };
    let runs = [
        ("Alg. 2", algorithms::successive_dp(&model)),
        ("Alg. 3", algorithms::successive_maxconv(&model)),
    ];
    let mut results = Vec::new();
    for (name, run) in runs {
        match run {
            Ok(s) => {
                let v = model.objective(&s.placement);
                results.push((name, s.placement, v));
            }
            Err(e) => return Check::inconclusive(format!("{name} failed: {e}")),
        }
    }
    let bound = 0.5;
    let worse = results[0].2.min(results[1].2);
    let reference = p1_reference(&model, options, Some(&results[1].1), worse, Some(bound));
    let failing: Vec<&str> = results
        .iter()
        .filter(|r| judge(r.2, &reference, Some(bound)).outcome == Outcome::Fail)
        .map(|r| r.0)
        .collect();
    // The worse algorithm decides value and ratio (Alg. 2 on ties).
    let worst = if results[1].2 < results[0].2 { 1 } else { 0 };
    let value = results[worst].2;
    let note = format!(
        "F(Alg. 2) = {:.6e}, F(Alg. 3) = {:.6e}, OPT = {}, worse ratio {} ({}) vs 1/2{}{}",
        results[0].2,
        results[1].2,
        fmt_opt(reference.value),
        fmt_opt(ratio_of(value, reference.value)),
        results[worst].0,
        if failing.is_empty() {
            String::new()
        } else {
            format!("; below 1/2: {}", failing.join(" and "))
        },
        reference_note(&reference)
    );
    let cat = model.catalogue();
    ratio_check(value, &reference, Some(bound), note, || {
        json!({
            "failing": failing,
            "algorithms": results.iter().map(|(name, x, v)| json!({
                "algorithm": name, "placement": placement_json(cat, x), "value": v,
            })).collect::<Vec<_>>(),
            "optimum_placement": reference.placement.as_ref().map(|x| placement_json(cat, x)),
            "optimum": reference.value,
            "optimum_kind": reference.kind,
            "incumbent": reference.incumbent,
            "bound": bound,
        })
    })
}

/// Claim `alg3-equals-alg2`.
pub(super) fn check_alg3_equals_alg2(instance: &Instance, _options: &CheckOptions) -> Check {
    let model = match compile(instance) {
        Ok(m) => m,
        Err(note) => return Check::inconclusive(note),
    };
    let run = match algorithms::successive_dp(&model) {
        Ok(r) => r,
        Err(e) => return Check::inconclusive(format!("Alg. 2 failed: {e}")),
    };
    let sizes: Vec<u64> = (0..model.experts())
        .map(|e| model.expert_bytes(eid(e)))
        .collect();
    let mut worst = 0.0f64;
    let mut margin = f64::INFINITY;
    let mut rows = Vec::new();
    let mut differing = Vec::new();
    for n in 0..model.servers() {
        let inc = IncrementalObjective::new(&model, prefix(&run.placement, n));
        let values: Vec<f64> = (0..model.experts())
            .map(|e| inc.gain(sid(n), eid(e)))
            .collect();
        let q = model.capacity(sid(n));
        let (dp, mc) = match (
            algorithms::knapsack_dp(&values, &sizes, q),
            algorithms::knapsack_maxconv(&values, &sizes, q),
        ) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                return Check::inconclusive(format!("server {n}: knapsack refused: {e}"))
            }
        };
        let scale = dp.0.abs().max(mc.0.abs());
        let diff = if scale == 0.0 {
            0.0
        } else {
            (dp.0 - mc.0).abs() / scale
        };
        worst = worst.max(diff);
        // Slack of the equality within the tolerance: the smaller of the slacks of >= and <=,
        // i.e. allowance - |dp - mc|; in units of the allowance, the margin.
        let slack = TOLERANCE.slack(dp.0, mc.0).min(TOLERANCE.slack(mc.0, dp.0));
        let allowance = TOLERANCE.abs + TOLERANCE.rel * scale;
        let server_margin = normalised(slack, allowance);
        margin = margin.min(server_margin);
        if server_margin < 0.0 {
            differing.push(n);
        }
        rows.push(json!({
            "server": n,
            "item_values": values,
            "capacity": q,
            "dp_optimum": dp.0, "dp_items": dp.1,
            "maxconv_optimum": mc.0, "maxconv_items": mc.1,
            "margin": server_margin,
        }));
    }
    let fail = margin < 0.0;
    let note = if fail {
        format!(
            "P3_n optima differ on servers {differing:?} (largest relative difference \
                 {worst:.3e}; margin {margin:.3e})"
        )
    } else {
        format!(
            "equal P3_n optima on all {} servers of Alg. 2's run (largest relative \
                 difference {worst:.3e}; margin {margin:.3e})",
            model.servers()
        )
    };
    let witness = fail.then(|| {
        json!({
            "sizes": sizes,
            "alg2_placement": placement_json(model.catalogue(), &run.placement),
            "servers": rows,
        })
    });
    Check {
        bound: Some(TOLERANCE.rel),
        ..Check::property(
            Outcome::fail_if(fail),
            Some(worst),
            note,
            witness,
            margin.is_finite().then_some(margin),
        )
    }
}
