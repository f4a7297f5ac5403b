//! The ZipMoE scheduling claims (paper 003, App. B) as hypotheses checked layer by layer.
//!
//! ## Optima
//! OPT comes from [`algorithms::exhaustive`] when the layer has at most
//! [`algorithms::EXHAUSTIVE_MAX_PAIRS`] (I/O order, decompression order) pairs (status
//! `exhaustive`), otherwise from the MILP (a proved optimum with status `optimal`). When the
//! MILP stops at its limit, OPT lies between its best bound and its incumbent's makespan
//! (re-evaluated by the simulator), and both claims, `a <= b OPT`, are judged from those
//! ([`crate::claims::Certificate`]): a pass when `a <= b` x the lower bound, a fail when
//! `a > b` x the incumbent, inconclusive in between.
//!
//! ## The claims (ids `zipmoe/...`)
//! 1. `thm31-ratio`, Thm. 3.1 / B.7: the makespan of Alg. 1 (App. A; [`algorithms::cache_affinity`]
//!    with U = (sigma_II, sigma_I), executed by the evaluator) is at most (3 - 1/L) OPT.
//! 2. `lemmab3-lower-bound`, Lemma B.3 (4): max{I, C/L, P, Z} <= OPT, with Z the longest
//!    critical path of Def. B.2 (3) (see formulations::zipmoe::bounds: (3) can exceed the true
//!    shortest completion of a task when L < K, so this may fail). The note names the terms
//!    above OPT.
//!
//! 3. `lemmab3-repaired` (kind `repaired`): Lemma B.3 with Z replaced by the chunk-level
//!    critical path Z' (formulations::zipmoe::bounds, which proves it and that Thm. B.7's
//!    proof goes through with it): max{I, C/L, P, Z'} <= OPT. Same optima, family and margin;
//!    the bound is tight on many layers (LB = OPT), and a search of 1,000 neighbours drifts to
//!    layers whose exhaustive optimum takes seconds, so its searches stop at 100.
//!
//! ## Margins
//! Both claims are inequalities a <= b judged with the tolerance t = 1e-12 + 1e-9 max(a, b):
//! raw slack r = b - a, a fail exactly when r + t < 0 ([`decide`]). The margin is (r + t) / OPT on a fail,
//! (r - t) / OPT when r > t, and none inside the band [-t, t] (equality within tolerance) or
//! when OPT <= 1e-12. For `thm31-ratio` (a = ALG, b = (3 - 1/L) OPT) it is the bound minus the
//! ratio, moved towards 0 by t / OPT; for `lemmab3-lower-bound` (a = LB, b = OPT) it is
//! 1 - LB / OPT moved the same way.

use formulations::milp::MilpStatus;
use formulations::zipmoe::{
    lower_bound, repaired_lower_bound, Instance, LowerBound, Schedule, Simulator, ZipMoeMilp,
};
use formulations::Error;
use serde_json::json;

use super::algorithms::{self, Candidates};
use super::generate::{generate, GeneratorConfig, Preset};
use crate::claims::{
    decide, Certificate, Check, CheckOptions, Claim, ClaimInfo, ClaimKind, Outcome, Quantifier,
    ReferenceKind,
};

/// The paper's file.
pub const PAPER: &str = "003_f13bf7f446ba8bd3.txt";

/// One registered ZipMoE claim.
pub type ZipClaim = Claim<Instance>;

const TINY: &str = "tiny: tiny preset (1-3 selected experts of 3, N = 1, K in 1..2, L in 1..2, \
    random states, rho in [0.3, 0.7], u in [1, 2], c in [1, 3] u / K, p = 0.5 + 0.5 tokens)";

/// The paper's sentence of `zipmoe/lemmab3-lower-bound`, which its repaired claim corrects.
const LEMMAB3_QUOTE: &str =
    "and $Z := \\max_{j \\in \\mathcal{Q}} \\{z_j\\}$ be the longest single-job \
    critical path. We have $$OPT \\geq \\max \\left\\{ I, \\frac{C}{L}, P, Z \
    \\right\\}. \\quad (4)$$";

/// Every ZipMoE scheduling claim.
pub fn registry() -> Vec<ZipClaim> {
    vec![
        ZipClaim {
            info: ClaimInfo {
                id: "zipmoe/thm31-ratio",
                paper: PAPER,
                place: "Thm. 3.1 (Sec. 3.3), restated and proved as Thm. B.7 (App. B)",
                statement: "The makespan of ZipMoE's cache-affinity scheduler satisfies \
                    ALG <= (3 - 1/L) OPT",
                measured: "makespan of Alg. 1's blocks executed work-conservingly / optimal \
                    makespan (exhaustive search or the MILP)",
                bound: "ratio <= 3 - 1/L",
                family: TINY,
                quote: "Let ALG be the makespan achieved by ZIPMOE’s scheduler and OPT be the \
                    optimal value. It holds that: $ALG \\leq (3 - \\frac{1}{L}) \\cdot OPT$, \
                    where L is the number of decompression threads.",
                kind: ClaimKind::Stated,
                quantifier: Quantifier::Universal,
                repairs: None,
                search_limit: None,
            },
            family: family_tiny,
            check: check_thm31,
        },
        ZipClaim {
            info: ClaimInfo {
                id: "zipmoe/lemmab3-lower-bound",
                paper: PAPER,
                place: "Lemma B.3 (4), with Def. B.2 (3)",
                statement: "OPT >= max{I, C/L, P, Z}: total I/O, decompression work per \
                    thread, GPU work and the longest single-task critical path",
                measured: "max{I, C/L, P, Z} / optimal makespan",
                bound: "<= 1",
                family: TINY,
                quote: LEMMAB3_QUOTE,
                kind: ClaimKind::Stated,
                quantifier: Quantifier::Universal,
                repairs: None,
                search_limit: None,
            },
            family: family_tiny,
            check: check_lemma_b3,
        },
        ZipClaim {
            info: ClaimInfo {
                id: "zipmoe/lemmab3-repaired",
                paper: PAPER,
                place: "Lemma B.3 (4), repaired by moe-opt",
                statement: "OPT >= max{I, C/L, P, Z'}, Z' the longest chunk-level critical \
                    path of an expert (E-chunk reads one at a time, each decompression after \
                    its own read, L threads)",
                measured: "max{I, C/L, P, Z'} / optimal makespan",
                bound: "<= 1",
                family: TINY,
                quote: LEMMAB3_QUOTE,
                kind: ClaimKind::Repaired,
                quantifier: Quantifier::Universal,
                repairs: Some("zipmoe/lemmab3-lower-bound"),
                search_limit: Some(100),
            },
            family: family_tiny,
            check: check_lemma_b3_repaired,
        },
    ]
}

/// The `tiny` family: the tiny preset at `seed`.
pub fn family_tiny(seed: u64) -> Instance {
    generate(&GeneratorConfig::preset(Preset::Tiny), seed)
}

/// A proved optimum: its makespan, schedule and how it was proved.
#[derive(Debug, Clone)]
pub struct Optimum {
    /// The optimal makespan, seconds.
    pub makespan_s: f64,
    /// An optimal schedule.
    pub schedule: Schedule,
    /// `exhaustive` or `optimal` (MILP).
    pub status: String,
}

/// What a MILP stopped by a limit proved about OPT.
#[derive(Debug, Clone)]
pub struct Bounded {
    /// The solver's best bound: OPT >= it, seconds.
    pub lower_s: Option<f64>,
    /// The incumbent, re-evaluated by the simulator: OPT <= its makespan.
    pub incumbent: Option<Schedule>,
    /// The solver's status.
    pub status: String,
}

/// OPT by exhaustive search within its limit, else by the MILP. `Ok(Err(bounds))` when the
/// MILP stopped without proving optimality.
pub fn optimum(
    instance: &Instance,
    options: &CheckOptions,
) -> Result<Result<Optimum, Bounded>, Error> {
    if algorithms::exhaustive_pairs(instance) <= algorithms::EXHAUSTIVE_MAX_PAIRS {
        let schedule = algorithms::exhaustive(instance)?;
        return Ok(Ok(Optimum {
            makespan_s: schedule.makespan_s,
            schedule,
            status: "exhaustive".into(),
        }));
    }
    let solved = ZipMoeMilp::build(instance)?.solve(instance, &options.solve)?;
    match (solved.solution.status, solved.schedule) {
        (MilpStatus::Optimal, Some(schedule)) => Ok(Ok(Optimum {
            makespan_s: schedule.makespan_s,
            schedule,
            status: "optimal".into(),
        })),
        (status, incumbent) => Ok(Err(Bounded {
            lower_s: solved.solution.best_bound,
            incumbent,
            status: status.to_string(),
        })),
    }
}

/// Outcome and margin of a <= b (module doc).
fn judge(a: f64, b: f64, opt: f64) -> (Outcome, Option<f64>) {
    let t = 1e-12 + 1e-9 * a.abs().max(b.abs());
    let r = b - a;
    let outcome = decide(r, t, false);
    let margin = if opt <= 1e-12 {
        (outcome == Outcome::Fail).then_some((r + t) / 1e-12)
    } else if r + t < 0.0 {
        Some((r + t) / opt)
    } else if r > t {
        Some((r - t) / opt)
    } else {
        None
    };
    (outcome, margin)
}

/// `f` on a proved optimum; otherwise `a <= factor OPT` judged from the MILP's bounds with
/// `bounded(value, factor)` naming a and the claim's factor.
fn with_optimum(
    instance: &Instance,
    options: &CheckOptions,
    f: impl FnOnce(Optimum) -> Check,
    bounded: impl FnOnce(&Bounded) -> Check,
) -> Check {
    match optimum(instance, options) {
        Ok(Ok(opt)) => f(opt),
        Ok(Err(bounds)) => bounded(&bounds),
        Err(e) => Check::inconclusive(format!("no optimum: {e}")),
    }
}

/// `a <= factor OPT` with OPT in [bounds.lower_s, incumbent makespan] (module doc): a pass the
/// lower bound certifies, a fail the incumbent certifies, or inconclusive. Margins as against
/// an optimum, over the value that decided.
fn judge_bounded(a: f64, factor: f64, bounds: &Bounded, note: &str) -> Check {
    let lower = bounds.lower_s;
    let upper = bounds.incumbent.as_ref().map(|s| s.makespan_s);
    let decided = match (upper, lower) {
        (Some(u), _) if judge(a, factor * u, u).0 == Outcome::Fail => Some((
            Outcome::Fail,
            judge(a, factor * u, u).1,
            Certificate::Incumbent,
        )),
        (_, Some(l)) if judge(a, factor * l, l).0 == Outcome::Pass => {
            Some((Outcome::Pass, judge(a, factor * l, l).1, Certificate::Bound))
        }
        _ => None,
    };
    let fmt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.6e}"));
    let (outcome, margin, certificate) = match decided {
        Some((o, m, c)) => (o, m, Some(c)),
        None => (Outcome::Inconclusive, None, None),
    };
    let why = match certificate {
        Some(Certificate::Bound) => "certified by the lower bound",
        Some(_) => "certified by the incumbent",
        None => "not decided by either",
    };
    Check {
        value: Some(a),
        reference: lower,
        reference_kind: if lower.is_some() {
            ReferenceKind::Bound
        } else {
            ReferenceKind::None
        },
        solver_status: Some(bounds.status.clone()),
        ratio: lower.filter(|&l| l > 1e-12).map(|l| a / l),
        bound: Some(factor),
        lower,
        upper,
        certificate,
        margin,
        ..Check::new(
            outcome,
            format!(
                "{note}; the MILP stopped ({}): OPT in [{}, {}] s, {why}",
                bounds.status,
                fmt(lower),
                fmt(upper)
            ),
        )
    }
}

fn check_thm31(instance: &Instance, options: &CheckOptions) -> Check {
    let blocks = algorithms::cache_affinity(instance, Candidates::Algorithm1);
    let alg = match Simulator::new(instance).run(&blocks.priority) {
        Ok(s) => s,
        Err(e) => return Check::inconclusive(format!("evaluator refused Alg. 1's order: {e}")),
    };
    let bound = 3.0 - 1.0 / f64::from(instance.threads);
    let about = format!(
        "ALG {:.6e} s, bound 3 - 1/{} = {bound:.4}, {} blocks",
        alg.makespan_s,
        instance.threads,
        blocks.blocks.len()
    );
    with_optimum(
        instance,
        options,
        |opt| {
            let (outcome, margin) = judge(alg.makespan_s, bound * opt.makespan_s, opt.makespan_s);
            let ratio = (opt.makespan_s > 1e-12).then(|| alg.makespan_s / opt.makespan_s);
            let note = format!(
                "ALG {:.6e} s, OPT {:.6e} s, ratio {}, bound 3 - 1/{} = {bound:.4}, {} blocks",
                alg.makespan_s,
                opt.makespan_s,
                ratio.map_or("-".into(), |r| format!("{r:.4}")),
                instance.threads,
                blocks.blocks.len()
            );
            Check {
                ratio,
                bound: Some(bound),
                witness: (outcome == Outcome::Fail).then(|| {
                    json!({ "blocks": blocks.priority.blocks, "alg_gantt": alg.rows,
                            "optimal_gantt": opt.schedule.rows })
                }),
                margin,
                ..Check::against_optimum(
                    outcome,
                    alg.makespan_s,
                    opt.makespan_s,
                    &*opt.status,
                    note,
                )
            }
        },
        |bounds| {
            let check = judge_bounded(alg.makespan_s, bound, bounds, &about);
            Check {
                witness: (check.outcome == Outcome::Fail).then(|| {
                    json!({ "blocks": blocks.priority.blocks, "alg_gantt": alg.rows,
                            "incumbent_gantt": bounds.incumbent.as_ref().map(|s| &s.rows) })
                }),
                ..check
            }
        },
    )
}

fn check_lemma_b3(instance: &Instance, options: &CheckOptions) -> Check {
    lower_bound_check(instance, options, lower_bound(instance))
}

/// Claim `lemmab3-repaired`: the chunk-level critical path (formulations::zipmoe::bounds).
fn check_lemma_b3_repaired(instance: &Instance, options: &CheckOptions) -> Check {
    lower_bound_check(instance, options, repaired_lower_bound(instance))
}

/// `lb.value_s <= OPT`, the terms above OPT named.
fn lower_bound_check(instance: &Instance, options: &CheckOptions, lb: LowerBound) -> Check {
    let terms = format!(
        "LB {:.6e} s (I {:.3e}, C/L {:.3e}, P {:.3e}, Z {:.3e})",
        lb.value_s, lb.io_s, lb.compute_per_thread_s, lb.token_s, lb.critical_path_s,
    );
    with_optimum(
        instance,
        options,
        |opt| {
            let (outcome, margin) = judge(lb.value_s, opt.makespan_s, opt.makespan_s);
            let o = opt.makespan_s;
            let over: Vec<&str> = [
                ("I", lb.io_s),
                ("C/L", lb.compute_per_thread_s),
                ("P", lb.token_s),
                ("Z", lb.critical_path_s),
            ]
            .iter()
            .filter(|(_, v)| judge(*v, o, o).0 == Outcome::Fail)
            .map(|(n, _)| *n)
            .collect();
            let note = format!(
                "{terms}, OPT {o:.6e} s{}",
                if over.is_empty() {
                    String::new()
                } else {
                    format!("; above OPT: {}", over.join(", "))
                }
            );
            Check {
                ratio: (o > 1e-12).then(|| lb.value_s / o),
                bound: Some(1.0),
                witness: (outcome == Outcome::Fail)
                    .then(|| json!({ "lower_bound": lb, "optimal_gantt": opt.schedule.rows })),
                margin,
                ..Check::against_optimum(outcome, lb.value_s, o, &*opt.status, note)
            }
        },
        |bounds| {
            let check = judge_bounded(lb.value_s, 1.0, bounds, &terms);
            Check {
                witness: (check.outcome == Outcome::Fail).then(|| {
                    json!({ "lower_bound": lb,
                            "incumbent_gantt": bounds.incumbent.as_ref().map(|s| &s.rows) })
                }),
                ..check
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Judge-level fail branch of `thm31-ratio` (Thm. 3.1 / B.7 is proved, so no layer fails
    /// it): the abc layer of tests/zipmoe_claims.rs (ALG 8, L = 2, bound 2.5) against a
    /// deliberately perturbed OPT of 3 instead of 7: 8 > 2.5 x 3 = 7.5, a fail with margin
    /// (7.5 - 8 + t) / 3, t = 1e-12 + 8e-9. The true OPT 7 passes with (17.5 - 8 - t') / 7,
    /// t' = 1e-12 + 17.5e-9; at ALG = 2.5 x OPT exactly the closed inequality passes with no
    /// margin (inside the band).
    #[test]
    fn thm31_judge_fails_against_a_perturbed_optimum() {
        let (outcome, margin) = judge(8.0, 2.5 * 3.0, 3.0);
        assert_eq!(outcome, Outcome::Fail);
        let t = 1e-12 + 8e-9;
        assert!(
            (margin.unwrap() - (-0.5 + t) / 3.0).abs() < 1e-15,
            "{margin:?}"
        );
        let (outcome, margin) = judge(8.0, 2.5 * 7.0, 7.0);
        assert_eq!(outcome, Outcome::Pass);
        let t = 1e-12 + 17.5e-9;
        assert!(
            (margin.unwrap() - (9.5 - t) / 7.0).abs() < 1e-15,
            "{margin:?}"
        );
        assert_eq!(judge(7.5, 2.5 * 3.0, 3.0), (Outcome::Pass, None));
    }

    /// `a <= 2 OPT` with OPT in [1, 3] s (hand numbers): 1.9 <= 2 x 1 passes whatever OPT is;
    /// 6.5 > 2 x 3 fails against the incumbent; 4 lies between 2 and 6: inconclusive.
    #[test]
    fn bounds_on_both_sides_certify_a_pass_or_a_fail() {
        let incumbent = Schedule {
            makespan_s: 3.0,
            io_end_s: 1.0,
            decompress_end_s: 2.0,
            charge_s: 0.0,
            rows: Vec::new(),
        };
        let bounds = Bounded {
            lower_s: Some(1.0),
            incumbent: Some(incumbent),
            status: "time_limit".into(),
        };
        let decided = |a: f64, b: &Bounded| {
            let c = judge_bounded(a, 2.0, b, "test");
            (c.outcome, c.certificate, c.lower, c.upper)
        };
        let (l, u) = (Some(1.0), Some(3.0));
        assert_eq!(
            decided(1.9, &bounds),
            (Outcome::Pass, Some(Certificate::Bound), l, u)
        );
        assert_eq!(
            decided(6.5, &bounds),
            (Outcome::Fail, Some(Certificate::Incumbent), l, u)
        );
        assert_eq!(decided(4.0, &bounds), (Outcome::Inconclusive, None, l, u));
        // A pass's margin is as against an optimum of 1: (2 - 1.9 - t) / 1.
        let m = judge_bounded(1.9, 2.0, &bounds, "test").margin.unwrap();
        assert!((m - (0.1 - 1e-12 - 2e-9)).abs() < 1e-12, "{m}");
        // Without an incumbent nothing can fail; without a bound nothing can pass.
        let no_incumbent = Bounded {
            incumbent: None,
            ..bounds.clone()
        };
        assert_eq!(decided(6.5, &no_incumbent).0, Outcome::Inconclusive);
        let no_bound = Bounded {
            lower_s: None,
            ..bounds
        };
        assert_eq!(decided(1.9, &no_bound).0, Outcome::Inconclusive);
        assert_eq!(decided(6.5, &no_bound).1, Some(Certificate::Incumbent));
    }
}
