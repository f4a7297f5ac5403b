//! The claims registry: every claim of the papers that moe-opt checks, as a hypothesis with
//! an id, its place in the paper, what is measured and the bound, and the outcome of checking
//! it on one instance. The verdict of a claim comes only from these per-instance outcomes: a
//! claim is `violated` when some instance fails it, `holds` when it was checked on at least
//! one instance and none failed, and `inconclusive` otherwise.
//!
//! A ratio claim's outcome on an instance rests on a [`Certificate`]: the optimum OPT is known
//! to lie in `[lower, upper]` (a proved optimum: both equal; a solver stopped by a limit: its
//! best bound on one side, its incumbent re-evaluated by the problem's one evaluator on the
//! other). For `ALG >= b OPT` (maximisation) the check passes when `ALG >= b upper` (then it
//! holds whatever OPT is), fails when `ALG < b lower` (a feasible solution beats ALG by more
//! than the ratio allows), and is inconclusive in between; minimisation claims the mirror.

use formulations::milp::SolveOptions;
use serde::{Deserialize, Serialize};

/// A claim of a paper, as moe-opt states and checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ClaimInfo {
    /// Stable id, `<problem>/<place>-<what>`, e.g. `slimcaching/prop3-greedy-ratio`.
    pub id: &'static str,
    /// Paper file in ../shared/papers/.
    pub paper: &'static str,
    /// Where the paper states it (Prop., Thm., Lemma, eq.).
    pub place: &'static str,
    /// The statement in words.
    pub statement: &'static str,
    /// What moe-opt measures on an instance.
    pub measured: &'static str,
    /// The bound or property claimed, in words (e.g. `ratio >= 1 - 1/e = 0.632`).
    pub bound: &'static str,
    /// The instances it is checked on.
    pub family: &'static str,
}

/// A registered claim of one problem: what is claimed, the instance family it is checked on
/// and the check, for instances of type `I`.
pub struct Claim<I> {
    /// What is claimed, where, and what is measured.
    pub info: ClaimInfo,
    /// The instance family: a deterministic instance for each seed.
    pub family: fn(seed: u64) -> I,
    /// Checks the claim on one instance.
    pub check: fn(&I, &CheckOptions) -> Check,
}

impl<I> Clone for Claim<I> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I> Copy for Claim<I> {}

impl<I> std::fmt::Debug for Claim<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim").field("info", &self.info).finish()
    }
}

/// Options of the checks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckOptions {
    /// Options of every HiGHS solve (time limit, gap, threads).
    pub solve: SolveOptions,
}

impl Default for CheckOptions {
    /// A 60 s time limit per solve, gap 0, one thread.
    fn default() -> Self {
        CheckOptions {
            solve: SolveOptions {
                time_limit_s: Some(60.0),
                ..SolveOptions::default()
            },
        }
    }
}

/// The outcome of checking a claim on one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The claim holds on this instance (ratio claims: against a proved optimum).
    Pass,
    /// The claim fails on this instance; the check's witness says how.
    Fail,
    /// Nothing can be concluded (no proved optimum, the property is undefined here, ...).
    Inconclusive,
}

/// Whether a ratio claim's reference value is a proved optimum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceKind {
    /// Exhaustive search, or a MILP solved with status optimal.
    Optimum,
    /// Only a bound (a MILP stopped by a limit).
    Bound,
    /// No reference (property claims, or no solver result).
    None,
}

/// What decided a ratio check's pass or fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Certificate {
    /// A proved optimum (exhaustive search, closed form, or a MILP solved to optimality).
    Optimum,
    /// A proved bound on OPT on the claim's side: the claim holds for every OPT it allows.
    Bound,
    /// A feasible solution's value: OPT is at least as good, and ALG misses the ratio to it.
    Incumbent,
}

/// What checking a claim on one instance found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Pass, fail or inconclusive.
    pub outcome: Outcome,
    /// The algorithm's value (ratio claims), or the measured quantity (e.g. a curvature).
    pub value: Option<f64>,
    /// The optimum (or bound) the value is compared with.
    pub reference: Option<f64>,
    /// Whether `reference` is a proved optimum.
    pub reference_kind: ReferenceKind,
    /// The exact solver's status when one was used (`optimal`, `time_limit`, `exhaustive`).
    pub solver_status: Option<String>,
    /// value / reference where both exist and reference != 0.
    pub ratio: Option<f64>,
    /// The bound the ratio must respect on this instance (constant, or e.g. (1 - kappa)/2
    /// computed on the instance).
    pub bound: Option<f64>,
    /// One line for humans: why it passed, failed or was inconclusive.
    pub note: String,
    /// On failure: the evidence (sets, element and marginal gains, or the placements and
    /// values), re-checkable by anyone.
    pub witness: Option<serde_json::Value>,
    /// Signed slack of the claim on this instance, in the claim's own units, for the
    /// worst-case search to drive down: >= 0 when it holds (how far from failing), < 0 when it
    /// fails (how badly). `None` when undefined (inconclusive instances). Each claim defines
    /// it so that, with the same tolerance as its outcome, a margin is < 0 exactly when the
    /// outcome is a fail (and a fail always has one); a pass may lack one where the claim's
    /// quantity is undefined (e.g. a ratio against an optimum of 0), and existence claims have
    /// none (nothing to drive down). Journals written before the field read as `None`.
    #[serde(default)]
    pub margin: Option<f64>,
    /// Ratio claims: a proved lower bound on the reference OPT (its value where proved
    /// optimal; for a maximisation, a feasible solution's value).
    #[serde(default)]
    pub lower: Option<f64>,
    /// Ratio claims: a proved upper bound on OPT (for a maximisation, the solver's best bound).
    #[serde(default)]
    pub upper: Option<f64>,
    /// What decided the outcome of a ratio claim (none when inconclusive).
    #[serde(default)]
    pub certificate: Option<Certificate>,
}

impl Outcome {
    /// `Fail` when `fail`, else `Pass`.
    pub fn fail_if(fail: bool) -> Self {
        if fail {
            Outcome::Fail
        } else {
            Outcome::Pass
        }
    }
}

impl Check {
    /// An outcome and the note that says why, nothing measured: no value, reference, ratio,
    /// bound, witness or margin. A check that measures more sets those fields by struct update
    /// over it (`Check { margin: Some(m), ..Check::new(outcome, note) }`).
    pub fn new(outcome: Outcome, note: impl Into<String>) -> Self {
        Check {
            outcome,
            value: None,
            reference: None,
            reference_kind: ReferenceKind::None,
            solver_status: None,
            ratio: None,
            bound: None,
            note: note.into(),
            witness: None,
            margin: None,
            lower: None,
            upper: None,
            certificate: None,
        }
    }

    /// Nothing can be concluded on this instance; `note` says why.
    pub fn inconclusive(note: impl Into<String>) -> Self {
        Check::new(Outcome::Inconclusive, note)
    }

    /// A property claim's check, compared with no reference: the measured quantity where
    /// there is one, the evidence (`witness`) and the margin.
    pub fn property(
        outcome: Outcome,
        value: Option<f64>,
        note: impl Into<String>,
        witness: Option<serde_json::Value>,
        margin: Option<f64>,
    ) -> Self {
        Check {
            value,
            witness,
            margin,
            ..Check::new(outcome, note)
        }
    }

    /// `value` compared with a proved `optimum`, found as `status` says (exhaustive search,
    /// a MILP's status, a closed form), which certifies a pass or fail; ratio, bound, witness
    /// and margin by struct update.
    pub fn against_optimum(
        outcome: Outcome,
        value: f64,
        optimum: f64,
        status: impl Into<String>,
        note: impl Into<String>,
    ) -> Self {
        Check {
            value: Some(value),
            reference: Some(optimum),
            reference_kind: ReferenceKind::Optimum,
            solver_status: Some(status.into()),
            lower: Some(optimum),
            upper: Some(optimum),
            certificate: (outcome != Outcome::Inconclusive).then_some(Certificate::Optimum),
            ..Check::new(outcome, note)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_journaled_before_margins_read_without_one() {
        // A record's check as journals wrote it before `margin` existed.
        let old = r#"{"outcome":"pass","value":0.5,"reference":null,"reference_kind":"none",
            "solver_status":null,"ratio":null,"bound":null,"note":"kappa_1 = 0.5",
            "witness":null}"#;
        let c: Check = serde_json::from_str(old).unwrap();
        assert_eq!(
            (c.outcome, c.value, c.margin),
            (Outcome::Pass, Some(0.5), None)
        );
        // And a margin round-trips.
        let with = Check {
            margin: Some(-0.25),
            ..c
        };
        let back: Check = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
        assert_eq!(back.margin, Some(-0.25));
    }
}
