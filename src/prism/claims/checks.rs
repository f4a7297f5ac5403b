//! The claims' checks: each derives its outcome from measurements (Alg. 1-2 against
//! enumeration and bounds, the MILP's proved status, simulated latencies).

use formulations::prism::bounds::{local_capacity_bound, local_capacity_placement};
use formulations::prism::Instance;

use crate::claims::{decide, Check, CheckOptions, Outcome, ReferenceKind};
use crate::prism::algorithms::{self, entropy_bits, RepairOrder};
use crate::prism::latency::{latency_of, sampled_batch};
use crate::prism::methods::{self, Method, RunOptions};

use super::*;

/// The best value of at most `b` items of `values` (non-negative): the sum of the `b` largest,
/// or, with `enumerate`, the maximum over every subset of at most `b` items.
pub fn best_of_size(values: &[f64], b: usize, enumerate: bool) -> f64 {
    if enumerate {
        let n = values.len();
        (0u32..1 << n)
            .filter(|m| m.count_ones() as usize <= b)
            .map(|m| (0..n).filter(|&i| m >> i & 1 == 1).map(|i| values[i]).sum())
            .fold(0.0, f64::max)
    } else {
        let mut v = values.to_vec();
        v.sort_by(|a, b| b.total_cmp(a));
        v.iter().take(b).sum()
    }
}

/// Alg. 1's counts and Alg. 2's assignment (default repair order), or the inconclusive check of
/// an instance Alg. 1 cannot place.
pub(super) fn alg12(
    instance: &Instance,
) -> Result<(algorithms::CountAllocation, algorithms::Assignment), Box<Check>> {
    let allocation = algorithms::alg1_counts(instance)
        .map_err(|e| Box::new(Check::inconclusive(format!("no assignment: {e}"))))?;
    let assignment = algorithms::alg2_assign(instance, &allocation.counts, RepairOrder::default());
    Ok((allocation, assignment))
}

/// Theorem 1 (module doc).
pub fn check_thm1(instance: &Instance, _: &CheckOptions) -> Check {
    let (allocation, assignment) = match alg12(instance) {
        Ok(a) => a,
        Err(check) => return *check,
    };
    let enumerate = instance.expert_count() <= ENUMERATION_LIMIT;
    let bound = 1.0 - (-1.0f64).exp();
    let mut worst: Option<(usize, f64, f64, f64)> = None; // (server, U, U*, margin)
    for n in 0..instance.servers.len() {
        let b: usize = allocation.counts[n].iter().sum();
        let values: Vec<f64> = instance.servers[n]
            .frequencies
            .iter()
            .flatten()
            .copied()
            .collect();
        let opt = best_of_size(&values, b, enumerate);
        let u = assignment.utility(instance, n);
        // The tolerance is part of the margin: < 0 exactly on a fail.
        let margin = u - bound * opt + 1e-12;
        if worst.is_none_or(|w| margin < w.3) {
            worst = Some((n, u, opt, margin));
        }
    }
    let (n, u, opt, margin) = worst.expect("N >= 1");
    let ratio = (opt > 0.0).then(|| u / opt);
    let outcome = decide(margin - 1e-12, 1e-12, false);
    let fail = outcome == Outcome::Fail;
    let status = if enumerate {
        "exhaustive"
    } else {
        "top-b (modular)"
    };
    let note = format!(
        "server {n}: U(A) = {u:.6}, U(A*) = {opt:.6} with B = {}",
        allocation.counts[n].iter().sum::<usize>()
    );
    Check {
        ratio,
        bound: Some(bound),
        witness: fail.then(|| {
            serde_json::json!({
                "server": n,
                "counts": allocation.counts[n],
                "assignment": assignment.sets[n],
                "repairs": assignment.repairs,
                "utility": u,
                "optimum": opt,
            })
        }),
        margin: Some(margin),
        ..Check::against_optimum(outcome, u, opt, status, note)
    }
}

/// The repaired Theorem 1 (module doc, claim 5): per server, Alg. 2's sets before the
/// coverage repair against the best sets with Alg. 1's layer counts N_{n,l}.
pub fn check_thm1_repaired(instance: &Instance, _: &CheckOptions) -> Check {
    let (allocation, assignment) = match alg12(instance) {
        Ok(a) => a,
        Err(check) => return *check,
    };
    let enumerate = instance.experts_per_layer() <= ENUMERATION_LIMIT;
    let mut worst: Option<(usize, f64, f64, f64)> = None; // (server, U before repair, U*, margin)
    for (n, server) in instance.servers.iter().enumerate() {
        let f = &server.frequencies;
        // Undo the repairs of server n (line 12 swaps e_rep for e in place).
        let repaired: f64 = assignment
            .repairs
            .iter()
            .filter(|r| r.server == n)
            .map(|r| f[r.layer][r.added] - f[r.layer][r.removed])
            .sum();
        let u = assignment.utility(instance, n) - repaired;
        let opt: f64 = f
            .iter()
            .zip(&allocation.counts[n])
            .map(|(row, &k)| best_of_size(row, k, enumerate))
            .sum();
        let margin = u - opt + 1e-12;
        if worst.is_none_or(|w| margin < w.3) {
            worst = Some((n, u, opt, margin));
        }
    }
    let (n, u, opt, margin) = worst.expect("N >= 1");
    let outcome = decide(margin - 1e-12, 1e-12, false);
    let status = if enumerate {
        "exhaustive"
    } else {
        "top-k (modular)"
    };
    Check {
        ratio: (opt > 0.0).then(|| u / opt),
        bound: Some(1.0),
        witness: (outcome == Outcome::Fail).then(|| {
            serde_json::json!({"server": n, "counts": allocation.counts[n], "utility_before_repair": u, "optimum": opt})
        }),
        margin: Some(margin),
        ..Check::against_optimum(
            outcome,
            u,
            opt,
            status,
            format!(
                "server {n}: U(A before repair) = {u:.6}, best with counts {:?} = {opt:.6}",
                allocation.counts[n]
            ),
        )
    }
}

/// Which bound on k_delta: the paper's Lemma 1 or moe-opt's repair of it (module doc, claim 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lemma1Form {
    /// k_delta >= 2^(H - delta log2 E), as printed.
    Stated,
    /// k_delta >= 2^(H - h+(delta) - delta log2 E), h+(delta) = h(min(delta, 1/2)), h the
    /// binary entropy: the Fano-type term the printed lemma drops.
    Repaired,
}

impl Lemma1Form {
    /// The exponent of the bound on k_delta at `delta`, for a row of entropy `h` bits over
    /// 2^`log_e` experts. Both forms fall with delta (h+ never decreases), which is what
    /// [`lemma1_worst`] needs.
    pub fn exponent(self, h: f64, delta: f64, log_e: f64) -> f64 {
        match self {
            Lemma1Form::Stated => h - delta * log_e,
            Lemma1Form::Repaired => h - binary_entropy_capped(delta) - delta * log_e,
        }
    }
}

/// h(min(delta, 1/2)) in bits, h(x) = -x log2 x - (1 - x) log2(1 - x): non-decreasing on
/// [0, 1], 0 at 0 and 1 from 1/2 on.
pub fn binary_entropy_capped(delta: f64) -> f64 {
    let x = delta.clamp(0.0, 0.5);
    if x == 0.0 {
        0.0
    } else {
        -x * x.log2() - (1.0 - x) * (1.0 - x).log2()
    }
}

/// Where Lemma 1 is tightest on one row, over the whole open interval delta in (0, 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lemma1Worst {
    /// The worst delta (its infimum 0, not attained, on the last step).
    pub delta: f64,
    /// k_delta there.
    pub k: usize,
    /// log2 k - (H - delta log2 E), bits: the raw slack (an infimum on the last step).
    pub slack: f64,
    /// H(p), bits.
    pub entropy_bits: f64,
}

/// Lemma 1's worst delta on one (non-zero) row, exactly: with the masses sorted p_1 >= p_2 >=
/// ... and S_k = p_1 + ... + p_k, k_delta = k on the step 1 - S_k <= delta < 1 - S_{k-1}. The
/// bound 2^(H - delta log2 E) falls with delta, so on each step the worst delta is its left end
/// 1 - S_k (attained, and > 0 while k is below the support size m); on the last step (k = m,
/// delta in (0, 1 - S_{m-1})) the infimum of the slack is log2 m - H at delta -> 0, not
/// attained, and >= 0 since H <= log2 m. So the minimum over these m values is the slack's
/// infimum over every delta in (0, 1): no grid.
pub fn lemma1_worst(row: &[f64], form: Lemma1Form) -> Lemma1Worst {
    let total: f64 = row.iter().sum();
    let mut p: Vec<f64> = row.iter().map(|x| x / total).filter(|&x| x > 0.0).collect();
    p.sort_by(|a, b| b.total_cmp(a));
    let h = entropy_bits(row);
    let log_e = (row.len() as f64).log2();
    let m = p.len();
    let mut worst = Lemma1Worst {
        delta: 0.0,
        k: m,
        slack: (m as f64).log2() - h,
        entropy_bits: h,
    };
    let mut covered = 0.0;
    for (i, x) in p.iter().take(m - 1).enumerate() {
        covered += x;
        let delta = 1.0 - covered;
        let k = i + 1;
        let slack = (k as f64).log2() - form.exponent(h, delta, log_e);
        if delta > 0.0 && slack < worst.slack {
            worst = Lemma1Worst {
                delta,
                k,
                slack,
                entropy_bits: h,
            };
        }
    }
    worst
}

/// Lemma 1 (in `form`) on arbitrary rows (each a distribution over the same E experts, any
/// scale; all-zero rows are skipped), over every delta in (0, 1) ([`lemma1_worst`]); a miss
/// of at most 1e-9 bits passes (the inequality is closed).
pub fn lemma1_rows(rows: &[Vec<f64>], form: Lemma1Form) -> Check {
    let worst = rows
        .iter()
        .enumerate()
        .filter(|(_, row)| row.iter().sum::<f64>() > 0.0)
        .map(|(i, row)| (i, lemma1_worst(row, form)))
        .min_by(|a, b| a.1.slack.total_cmp(&b.1.slack).then(a.0.cmp(&b.0)));
    let Some((i, w)) = worst else {
        return Check::inconclusive("no non-zero row");
    };
    let e = rows[i].len() as f64;
    let (delta, k, h) = (w.delta, w.k, w.entropy_bits);
    let bound = 2f64.powf(form.exponent(h, delta, e.log2()));
    let outcome = decide(w.slack, 1e-9, false);
    let at = if delta > 0.0 {
        format!("delta {delta:.6}")
    } else {
        "delta -> 0 (infimum)".to_string()
    };
    Check {
        bound: Some(bound),
        ..Check::property(
            outcome,
            Some(k as f64),
            format!(
                "worst row {i}, {at}: k = {k}, bound {bound:.4} (H = {h:.4} bits)"
            ),
            (outcome != Outcome::Pass).then(|| serde_json::json!({"row": rows[i], "delta": delta, "k": k, "entropy_bits": h, "bound": bound})),
            Some(w.slack + 1e-9),
        )
    }
}

/// Lemma 1 on every server's layer rows.
pub fn check_lemma1(instance: &Instance, _: &CheckOptions) -> Check {
    lemma1_rows(&layer_rows(instance), Lemma1Form::Stated)
}

/// The repaired Lemma 1 (module doc, claim 2) on every server's layer rows.
pub fn check_lemma1_repaired(instance: &Instance, _: &CheckOptions) -> Check {
    lemma1_rows(&layer_rows(instance), Lemma1Form::Repaired)
}

pub(super) fn layer_rows(instance: &Instance) -> Vec<Vec<f64>> {
    instance
        .servers
        .iter()
        .flat_map(|s| s.frequencies.iter().cloned())
        .collect()
}

pub(super) fn run_options(options: &CheckOptions) -> RunOptions {
    RunOptions {
        solve: options.solve.clone(),
        seed: 0,
    }
}

/// The Alg. 1 + 2 gap to the MILP optimum (module doc): against the proved optimum, or, where
/// the MILP stops at its limit, against bounds on both sides of OPT ([`gap_between`]).
pub fn check_gap(instance: &Instance, options: &CheckOptions) -> Check {
    let run_opts = run_options(options);
    let prism = match methods::run(Method::Prism, instance, &run_opts) {
        Ok(r) => r,
        Err(e) => return Check::inconclusive(e.to_string()),
    };
    let Some(cost) = prism.objective().filter(|_| feasible(&prism)) else {
        return Check::inconclusive(format!(
            "Prism has no feasible placement: {}",
            prism.note.unwrap_or_default()
        ));
    };
    let relaxed = local_capacity_bound(instance);
    // A placement of cost LB proves OPT = LB with no MILP (formulations::prism::bounds).
    let attained = local_capacity_placement(instance)
        .and_then(|p| formulations::prism::evaluate(instance, &p).ok())
        .filter(|e| e.feasible && e.proxy_cost <= relaxed + 1e-9 * relaxed.max(1.0));
    if let Some(e) = attained {
        return gap_to_optimum(cost, e.proxy_cost, "local-capacity bound attained");
    }
    let milp = match methods::run(Method::Milp, instance, &run_opts) {
        Ok(r) => r,
        Err(e) => return Check::inconclusive(format!("MILP: {e}")),
    };
    let status = milp.exact.as_ref().map(|e| e.status.name().to_string());
    let incumbent = milp.objective().filter(|_| feasible(&milp));
    match incumbent.filter(|_| milp.is_proved_optimal()) {
        Some(opt) => gap_to_optimum(cost, opt, status.as_deref().unwrap_or("optimal")),
        None => {
            // OPT >= the MILP's best bound and the local-capacity bound; OPT <= any feasible
            // placement's cost, re-evaluated: the MILP's incumbent and Prism's own.
            let best_bound = milp.exact.as_ref().and_then(|e| e.best_bound);
            let lower = best_bound.map_or(relaxed, |b| b.max(relaxed));
            let upper = incumbent.map_or(cost, |v| v.min(cost));
            gap_between(cost, lower, upper, status)
        }
    }
}

/// The measured gap of a Prism cost `cost` to a proved optimum `opt` (found as `status` says).
pub(super) fn gap_to_optimum(cost: f64, opt: f64, status: &str) -> Check {
    let note = format!(
        "no bound is claimed; C(Prism) = {cost:.6}, OPT = {opt:.6}, gap {:.6}",
        cost - opt
    );
    Check {
        value: Some(cost),
        reference: Some(opt),
        reference_kind: ReferenceKind::Optimum,
        solver_status: Some(status.to_string()),
        ratio: (opt > 0.0).then(|| cost / opt),
        ..Check::new(Outcome::Measured, note)
    }
}

/// The measured gap of a Prism cost `cost` when OPT is only known to lie in `[lower, upper]`
/// (a proved lower bound, a feasible placement's cost): C / OPT lies in [C / upper, C /
/// lower]. The reference is the lower bound (kind `bound`), so the ratio reported is the
/// interval's upper end, a bound on the true ratio; the note gives both ends.
pub fn gap_between(cost: f64, lower: f64, upper: f64, status: Option<String>) -> Check {
    // A solver's bound may pass its incumbent by its tolerance; OPT <= upper regardless.
    let lower = lower.min(upper);
    let at = |x: f64| {
        if x > 0.0 {
            format!("{:.6}", cost / x)
        } else {
            "inf".to_string()
        }
    };
    let note = format!(
        "no bound is claimed; C(Prism) = {cost:.6}, OPT in [{lower:.6}, {upper:.6}] (no proved \
         optimum), C / OPT in [{}, {}]",
        at(upper),
        at(lower)
    );
    Check {
        value: Some(cost),
        reference: Some(lower),
        reference_kind: ReferenceKind::Bound,
        solver_status: status,
        ratio: (lower > 0.0).then(|| cost / lower),
        ratio_interval: (lower > 0.0).then(|| [cost / upper, cost / lower]),
        lower: Some(lower),
        upper: Some(upper),
        ..Check::new(Outcome::Measured, note)
    }
}

/// The repaired evaluation claim (module doc, claim 6): [`check_beats_baselines`] on the
/// instances inside the evaluation's regime (every premise of `eval-beats-baselines`); the
/// others are outside the repaired statement, not applicable.
pub fn check_beats_baselines_in_regime(instance: &Instance, options: &CheckOptions) -> Check {
    let c = crate::tier::classify(
        &crate::prism::premises::premises(),
        "prism/eval-beats-baselines",
        instance,
    );
    if c.tier != crate::tier::Tier::Regime {
        return Check::not_applicable(format!(
            "outside the testbed's regime: {}",
            c.broken.join("; ")
        ));
    }
    beats_baselines(instance, options, true)
}

/// Prism against the baselines (module doc).
pub fn check_beats_baselines(instance: &Instance, options: &CheckOptions) -> Check {
    beats_baselines(instance, options, false)
}

/// Claims 4 and 6: Prism against every feasible baseline; `repaired` (claim 6): the
/// measurement, and an instance where Prism's Alg. 1-2 find no feasible placement is outside
/// it (not applicable) instead of a fail.
pub(super) fn beats_baselines(
    instance: &Instance,
    options: &CheckOptions,
    repaired: bool,
) -> Check {
    let run_opts = run_options(options);
    let batch = sampled_batch(instance, run_opts.seed);
    let measure = |method: Method| -> Result<Option<(f64, f64)>, String> {
        let run = methods::run(method, instance, &run_opts).map_err(|e| e.to_string())?;
        let (Some(p), true) = (run.solution.as_ref(), feasible(&run)) else {
            return Ok(None);
        };
        let lat = latency_of(instance, p, batch.as_deref(), run_opts.seed)
            .ok_or("eq. (1) needs the instance's network and workload")?;
        Ok(Some((run.objective().expect("evaluated"), lat.eq1_total_s)))
    };
    let prism = match measure(Method::Prism) {
        Ok(p) => p,
        Err(e) => return Check::inconclusive(e),
    };
    let mut skipped = Vec::new();
    // Every feasible baseline: (baseline, proxy cost (2), eq. (1)).
    let mut fastest: Vec<(Method, f64, f64)> = Vec::new();
    let mut worst: Option<(Method, &str, f64, f64, f64)> = None; // (baseline, metric, b, p, margin)
    let rel = |b: f64, p: f64| {
        let scale = b.max(p);
        if scale > 0.0 {
            (b - p) / scale
        } else {
            0.0
        }
    };
    for m in Method::BASELINES {
        let base = match measure(m) {
            Ok(Some(b)) => b,
            Ok(None) => {
                skipped.push(m.name());
                continue;
            }
            Err(e) => return Check::inconclusive(e),
        };
        let Some(p) = prism else {
            if repaired {
                return Check::not_applicable(format!(
                    "Prism has no feasible placement, {m} has one: outside the repaired \
                     statement, a fail of prism/eval-beats-baselines"
                ));
            }
            return Check {
                margin: Some(-1.0),
                ..Check::new(
                    Outcome::Fail,
                    format!("Prism has no feasible placement, {m} has one"),
                )
            };
        };
        fastest.push((m, base.0, base.1));
        for (metric, b, q) in [("proxy cost (2)", base.0, p.0), ("eq. (1)", base.1, p.1)] {
            let margin = rel(b, q) + 1e-9;
            if worst.is_none_or(|w| margin < w.4) {
                worst = Some((m, metric, b, q, margin));
            }
        }
    }
    let Some((m, metric, b, q, margin)) = worst else {
        return Check::inconclusive(format!(
            "no feasible baseline (skipped: {})",
            skipped.join(", ")
        ));
    };
    if repaired {
        let p = prism.expect("a baseline was compared");
        let fastest = |i: usize| {
            fastest
                .iter()
                .map(|f: &(Method, f64, f64)| (f.0, if i == 0 { f.1 } else { f.2 }))
                .min_by(|x, y| x.1.total_cmp(&y.1))
                .expect("a feasible baseline")
        };
        let (lat_m, lat) = fastest(1);
        let (cost_m, cost) = fastest(0);
        return Check {
            value: Some(p.1),
            reference: Some(lat),
            ratio: (lat > 0.0).then(|| p.1 / lat),
            ..Check::new(
                Outcome::Measured,
                format!(
                    "eq. (1): Prism {:.6} vs the fastest baseline, {lat_m}, {lat:.6}; proxy cost \
                     (2): Prism {:.6} vs the least, {cost_m}, {cost:.6}",
                    p.1, p.0
                ),
            )
        };
    }
    let outcome = decide(margin - 1e-9, 1e-9, false);
    let fail = outcome == Outcome::Fail;
    let skipped_note = if skipped.is_empty() {
        String::new()
    } else {
        format!("; skipped (infeasible or none): {}", skipped.join(", "))
    };
    let note = format!("closest: {m} on {metric}: baseline {b:.6} vs Prism {q:.6}{skipped_note}");
    Check {
        reference: Some(b),
        ratio: (b > 0.0).then(|| q / b),
        ..Check::property(
            outcome,
            Some(q),
            note,
            fail.then(|| serde_json::json!({"baseline": m.name(), "metric": metric, "baseline_value": b, "prism_value": q})),
            Some(margin),
        )
    }
}

/// The run's placement covers every expert and fits every GPU.
pub(super) fn feasible(run: &methods::MethodRun) -> bool {
    run.evaluation.as_ref().is_some_and(|e| e.feasible)
}
