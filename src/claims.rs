//! The claims: every claim of the papers that moe-opt checks, as a hypothesis with
//! an id, its place in the paper, the paper's sentence, what is measured and the bound, and the
//! outcome of checking it on one instance. The verdict of a claim comes only from these
//! per-instance outcomes ([`Verdict::of`]), in the vocabulary of its [`Quantifier`]: a
//! universal claim is `violated` when some instance fails it, `holds` when it was checked on at
//! least one instance and none failed, and `inconclusive` otherwise; an existential claim is
//! `witnessed` when some instance passes (exhibits it) and `not witnessed` otherwise (no
//! instance can refute it). A [`ClaimKind::Measurement`] has no bound, hence no verdict: it is
//! `measured`.
//!
//! The numeric tolerance never makes a fail ([`decide`]): a closed inequality met within it
//! passes (equality is allowed), a strict one (an open interval's end point) met within it is
//! a [`Outcome::Boundary`] case, neither pass nor fail. A universal claim with boundary cases
//! and no fail is never `violated`: it `holds` where some instance passes, and is `boundary`
//! where none does. The tolerance is only for values floating point cannot place: a quantity
//! that equals an end point by structure (a marginal gain that is zero because no route
//! changes, an integer count) is decided exactly by the claim's check, and an end point of an
//! open interval it equals is a fail.
//!
//! Two outcomes are apart from the evidence. [`Outcome::Vacuous`]: the claimed bound is
//! trivial on the instance (a ratio bound of 0, an optimum of 0: nothing to reach), so the
//! instance holds but tests nothing; it is counted apart (`holds on 6 (14 vacuous)`) and a
//! claim with no other instance is `vacuous`. [`Outcome::NotApplicable`]: the instance does not
//! meet the claim's own premise (Prop. 1's "every model Top-1"); a claim whose every instance
//! is so is `not applicable`, whatever its quantifier.
//!
//! Where OPT is only bracketed (a certificate other than a proved optimum) a ratio to OPT is
//! an interval ([`Check::ratio_interval`]), and is reported as one.
//!
//! Only [`ClaimKind::Stated`] claims are the paper's: `verify` reports repaired claims (moe-opt's
//! corrections of violated stated ones, each beside the claim it repairs), inferred claims,
//! sanity checks and measurements in sections of their own, so that none reads as a paper's
//! error.
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
    /// The paper's sentence, verbatim from its .txt (whitespace aside; `[...]` marks an
    /// elision): what a stated claim says, or what an inferred claim, a sanity check or a
    /// measurement is read from (a test checks each against the paper file).
    pub quote: &'static str,
    /// Whether the paper states it, moe-opt infers it, or it checks moe-opt itself.
    pub kind: ClaimKind,
    /// Whether it is about every instance of its premise or about some instance.
    pub quantifier: Quantifier,
    /// A [`ClaimKind::Repaired`] claim: the id of the stated claim it corrects; a
    /// [`ClaimKind::Measurement`] that stands in for a repair where the paper gives no number to
    /// correct the statement with (its distribution is then reported beside the stated claim).
    pub repairs: Option<&'static str>,
    /// At most this many neighbours per worst-case search (below `verify --search`), and no
    /// shrinking of its counterexample, for a claim whose every check is costly (a family at
    /// the papers' scale, or one whose search drifts to instances slow to solve exactly).
    #[serde(skip)]
    pub search_limit: Option<usize>,
}

impl ClaimInfo {
    /// What most claims share: stated by the paper, universal, repairing none, searched with
    /// the default budget. A claim table writes its claim's text and ends with
    /// `..ClaimInfo::DEFAULTS`; the text here is empty, and a test refuses a registered claim
    /// with an empty text field (`tests/cli_consistency.rs`).
    pub const DEFAULTS: ClaimInfo = ClaimInfo {
        id: "",
        paper: "",
        place: "",
        statement: "",
        measured: "",
        bound: "",
        family: "",
        quote: "",
        kind: ClaimKind::Stated,
        quantifier: Quantifier::Universal,
        repairs: None,
        search_limit: None,
    };
}

/// What a claim is to its paper. `verify` reports each kind in its own section (in this order),
/// so that only a stated claim's violation reads as the paper's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// The paper states it: a theorem, proposition, lemma, remark, or an explicit empirical
    /// sentence (the quote).
    Stated,
    /// moe-opt's corrected statement of a stated claim found violated (`repairs` names it):
    /// the strongest statement moe-opt can justify, with its proof in the claim's module doc
    /// (or, for an empirical sentence, the weaker reading the paper's own text supports). Its
    /// verdict is reported beside the original's; a violation would be moe-opt's error.
    Repaired,
    /// A property the paper implies but does not state (the quote is the sentence it is read
    /// from; the claim's doc says how). A violation is not the paper's error.
    Inferred,
    /// True by construction of moe-opt's own reference (e.g. an exact optimum is at most what
    /// any method of its feasible set reaches): it checks moe-opt, not the paper.
    Sanity,
    /// A quantity recorded against no bound: it has no verdict. One may stand in for the
    /// repair of a violated empirical sentence whose paper prints no threshold to repair it
    /// with (`repairs` names the sentence's claim).
    Measurement,
}

impl ClaimKind {
    /// The kind's name in claims.csv and the tables.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimKind::Stated => "stated",
            ClaimKind::Repaired => "repaired",
            ClaimKind::Inferred => "inferred",
            ClaimKind::Sanity => "sanity",
            ClaimKind::Measurement => "measurement",
        }
    }
}

/// What a claim quantifies over, which fixes its verdict vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantifier {
    /// Every instance of the premise: `holds` / `violated` / `inconclusive`.
    Universal,
    /// Some instance: `witnessed` (an instance passes) / `not witnessed`. No instance can
    /// fail it, so it is never `violated`.
    Existential,
}

impl Quantifier {
    /// The quantifier's name in claims.csv and the tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Quantifier::Universal => "universal",
            Quantifier::Existential => "existential",
        }
    }
}

/// The verdict of a claim over a run ([`Verdict::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// Universal: checked on some instance, failed on none.
    #[serde(rename = "holds")]
    Holds,
    /// Universal: failed on some instance.
    #[serde(rename = "violated")]
    Violated,
    /// Universal: no instance checked; a measurement: nothing measured.
    #[serde(rename = "inconclusive")]
    Inconclusive,
    /// Universal: no instance fails or passes; some are boundary cases ([`Outcome::Boundary`]).
    #[serde(rename = "boundary")]
    Boundary,
    /// Existential: some instance exhibits it.
    #[serde(rename = "witnessed")]
    Witnessed,
    /// Existential: no instance of the run exhibits it (which refutes nothing).
    #[serde(rename = "not witnessed")]
    NotWitnessed,
    /// A measurement: recorded on some instance, no verdict.
    #[serde(rename = "measured")]
    Measured,
    /// Universal: no instance fails, passes or is a boundary case; some hold only vacuously
    /// ([`Outcome::Vacuous`]): the claim was never put to the test.
    #[serde(rename = "vacuous")]
    Vacuous,
    /// No instance meets the claim's own premise ([`Outcome::NotApplicable`]): the run says
    /// nothing about it.
    #[serde(rename = "not applicable")]
    NotApplicable,
}

impl Verdict {
    /// Every verdict, in the order tables list them.
    pub const ALL: [Verdict; 9] = [
        Verdict::Holds,
        Verdict::Violated,
        Verdict::Inconclusive,
        Verdict::Boundary,
        Verdict::Witnessed,
        Verdict::NotWitnessed,
        Verdict::Measured,
        Verdict::Vacuous,
        Verdict::NotApplicable,
    ];

    /// The verdict's name in claims.csv and the tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Violated => "violated",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Boundary => "boundary",
            Verdict::Witnessed => "witnessed",
            Verdict::NotWitnessed => "not witnessed",
            Verdict::Measured => "measured",
            Verdict::Vacuous => "vacuous",
            Verdict::NotApplicable => "not applicable",
        }
    }

    /// The verdict of `claim` from its instances' outcomes.
    pub fn of(claim: &ClaimInfo, outcomes: impl IntoIterator<Item = Outcome>) -> Verdict {
        let (mut pass, mut fail, mut measured, mut boundary) = (0usize, 0usize, 0usize, 0usize);
        let (mut vacuous, mut applicable, mut any) = (0usize, 0usize, 0usize);
        for o in outcomes {
            any += 1;
            applicable += usize::from(o != Outcome::NotApplicable);
            match o {
                Outcome::Pass => pass += 1,
                Outcome::Fail => fail += 1,
                Outcome::Measured => measured += 1,
                Outcome::Boundary => boundary += 1,
                Outcome::Vacuous => vacuous += 1,
                Outcome::Inconclusive | Outcome::NotApplicable => {}
            }
        }
        match (claim.kind, claim.quantifier) {
            _ if any > 0 && applicable == 0 => Verdict::NotApplicable,
            (ClaimKind::Measurement, _) if measured > 0 => Verdict::Measured,
            (ClaimKind::Measurement, _) => Verdict::Inconclusive,
            (_, Quantifier::Existential) if pass > 0 => Verdict::Witnessed,
            (_, Quantifier::Existential) => Verdict::NotWitnessed,
            _ if fail > 0 => Verdict::Violated,
            _ if pass > 0 => Verdict::Holds,
            _ if boundary > 0 => Verdict::Boundary,
            _ if vacuous > 0 => Verdict::Vacuous,
            _ => Verdict::Inconclusive,
        }
    }
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
    /// The instances at the papers' own scale (`verify --scale paper`), or why there are none.
    pub paper: PaperScale<I>,
}

impl<I> Claim<I> {
    /// The family of instances at `scale`; `None` when the claim has none there.
    pub fn family_at(&self, scale: Scale) -> Option<fn(u64) -> I> {
        match (scale, self.paper) {
            (Scale::Small, _) => Some(self.family),
            (Scale::Paper, PaperScale::Family(_, make)) => Some(make),
            (Scale::Paper, PaperScale::Without(_)) => None,
        }
    }
}

/// Which instances `verify` checks the claims on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// The claims' families, sized so that the exact optimum is proved on nearly all of them.
    #[default]
    Small,
    /// The sizes the papers evaluate (their presets, figures' sweeps and real data), where a
    /// ratio verdict rests on bounds on both sides of OPT more often than on a proved optimum.
    Paper,
}

impl Scale {
    /// The name used by `--scale` and the tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Scale::Small => "small",
            Scale::Paper => "paper",
        }
    }
}

/// A claim's instances at the papers' scale.
pub enum PaperScale<I> {
    /// The family in words, and its generator (a deterministic instance for each seed).
    Family(&'static str, fn(seed: u64) -> I),
    /// Why the claim is not checked at the papers' scale (e.g. its check enumerates subsets).
    Without(&'static str),
}

impl<I> PaperScale<I> {
    /// The family's description, or why there is none.
    pub fn describe(&self) -> Result<&'static str, &'static str> {
        match self {
            PaperScale::Family(what, _) => Ok(what),
            PaperScale::Without(why) => Err(why),
        }
    }
}

impl<I> Clone for PaperScale<I> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I> Copy for PaperScale<I> {}

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
    /// A measurement's quantity, recorded against no bound: neither a pass nor a fail.
    Measured,
    /// A strict inequality met within its numeric tolerance: floating point cannot decide
    /// it, so it is neither a pass nor a fail ([`decide`]).
    Boundary,
    /// The claim holds here only because its bound is trivial on the instance (a ratio bound
    /// of 0, an optimum of 0): not evidence for it. An instance that misses even a trivial
    /// bound is a fail, not vacuous.
    Vacuous,
    /// The instance does not meet the claim's own premise (e.g. Prop. 1's "every model
    /// Top-1"): the claim says nothing about it.
    NotApplicable,
}

/// The outcome of an inequality from its raw slack (the amount by which it holds, negative
/// when it is missed) and its numeric tolerance `allowance`. Below `-allowance` it fails. A
/// closed inequality (`a >= b`) met within the tolerance passes: it allows equality, and two
/// floating-point computations of equal quantities agree only within rounding (Remark 2's
/// exact optima, an algorithm that reaches the optimum). A strict inequality (an open
/// interval's end point, `strict`) met within the tolerance on either side is a
/// [`Outcome::Boundary`] case: there equality is a violation, and floating point cannot tell
/// it from a hair's breadth inside. So the tolerance never makes a fail.
pub fn decide(raw: f64, allowance: f64, strict: bool) -> Outcome {
    if raw < -allowance {
        Outcome::Fail
    } else if strict && raw <= allowance {
        Outcome::Boundary
    } else {
        Outcome::Pass
    }
}

/// Whether a ratio claim's reference value is a proved optimum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceKind {
    /// Exhaustive search, or a MILP solved with status optimal.
    Optimum,
    /// Only a bound (a MILP stopped by a limit).
    Bound,
    /// Another method's value (e.g. LRU's loads), which bounds nothing about OPT.
    Baseline,
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
    /// Pass, fail, inconclusive or measured.
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
    /// Ratio claims whose OPT is only bracketed (a certificate other than a proved optimum):
    /// the interval `[low, high]` the ratio to OPT lies in; `ratio` is then one of its ends
    /// (against `reference`), not a measured ratio. `None` where OPT is proved.
    #[serde(default)]
    pub ratio_interval: Option<[f64; 2]>,
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
            ratio_interval: None,
        }
    }

    /// What contradicts itself in this check, one line each (empty when consistent): an
    /// `optimum` reference without a value or a solver status, or with bounds apart from it;
    /// a ratio that is not value / reference; a margin whose sign does not restate the
    /// outcome (< 0 exactly on a fail); a fail without a margin... where margins exist; a
    /// measurement with a bound; a certificate on an outcome that is no evidence, or an
    /// `optimum` one without an optimum; a ratio interval that is empty, misses the ratio or
    /// stands beside a proved optimum. Every test that produces checks runs it (the golden runs of
    /// `verify` over every paper, the saved counterexamples, the problems' unit tests).
    pub fn inconsistencies(&self) -> Vec<String> {
        // Relative 1e-8: the JSON reports keep 9 significant digits.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-8 * a.abs().max(b.abs()).max(1.0);
        let mut found = Vec::new();
        if self.reference_kind == ReferenceKind::Optimum {
            match self.reference {
                None => found.push("an optimum reference without a value".to_string()),
                Some(r) => {
                    for (side, b) in [("lower", self.lower), ("upper", self.upper)] {
                        if b.is_some_and(|b| !close(b, r)) {
                            found.push(format!("the optimum {r} but the {side} bound {b:?}"));
                        }
                    }
                }
            }
            if self.solver_status.is_none() {
                found.push("an optimum reference without a solver status".into());
            }
        }
        if let (Some(ratio), Some(v), Some(r)) = (self.ratio, self.value, self.reference) {
            if r.abs() > 1e-12 && !close(ratio, v / r) {
                found.push(format!(
                    "ratio {ratio} is not value / reference = {}",
                    v / r
                ));
            }
        }
        if let Some([low, high]) = self.ratio_interval {
            let within = |x: f64| low <= x && x <= high || close(x, low) || close(x, high);
            if low.partial_cmp(&high) == Some(std::cmp::Ordering::Greater) || low.is_nan() {
                found.push(format!("the ratio interval [{low}, {high}] is empty"));
            } else if self.ratio.is_some_and(|r| !within(r)) {
                found.push(format!(
                    "ratio {:?} outside its interval [{low}, {high}]",
                    self.ratio
                ));
            }
            if self.certificate == Some(Certificate::Optimum) {
                found.push("a ratio interval on a proved optimum".into());
            }
        }
        if let Some(m) = self.margin {
            if (m < 0.0) != (self.outcome == Outcome::Fail) {
                found.push(format!("margin {m} with the outcome {:?}", self.outcome));
            }
        }
        if self.outcome == Outcome::Measured && self.bound.is_some() {
            found.push("a measurement with a bound".into());
        }
        match (self.certificate, self.outcome) {
            (
                Some(c),
                Outcome::Inconclusive
                | Outcome::Measured
                | Outcome::Boundary
                | Outcome::Vacuous
                | Outcome::NotApplicable,
            ) => found.push(format!(
                "certificate {c:?} on an outcome that is no evidence"
            )),
            (Some(Certificate::Optimum), _) if self.reference_kind != ReferenceKind::Optimum => {
                found.push("an optimum certificate without an optimum reference".into())
            }
            _ => {}
        }
        found
    }

    /// Nothing can be concluded on this instance; `note` says why.
    pub fn inconclusive(note: impl Into<String>) -> Self {
        Check::new(Outcome::Inconclusive, note)
    }

    /// The instance does not meet the claim's own premise; `note` says which and why.
    pub fn not_applicable(note: impl Into<String>) -> Self {
        Check::new(Outcome::NotApplicable, note)
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
            certificate: matches!(outcome, Outcome::Pass | Outcome::Fail)
                .then_some(Certificate::Optimum),
            ..Check::new(outcome, note)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(kind: ClaimKind, quantifier: Quantifier) -> ClaimInfo {
        ClaimInfo {
            id: "test/claim",
            paper: "test",
            place: "-",
            statement: "-",
            measured: "-",
            bound: "-",
            family: "-",
            quote: "-",
            kind,
            quantifier,
            ..ClaimInfo::DEFAULTS
        }
    }

    #[test]
    fn each_quantifier_and_kind_has_its_own_verdicts() {
        use Outcome::{Fail, Inconclusive as Inc, Measured, Pass};
        use Verdict::*;
        let universal = info(ClaimKind::Stated, Quantifier::Universal);
        let existential = info(ClaimKind::Stated, Quantifier::Existential);
        let sanity = info(ClaimKind::Sanity, Quantifier::Universal);
        let measurement = info(ClaimKind::Measurement, Quantifier::Universal);
        for (claim, outcomes, expected) in [
            // Universal: one fail refutes it, one pass without a fail upholds it.
            (universal, vec![Pass, Fail, Inc], Violated),
            (universal, vec![Pass, Inc], Holds),
            (universal, vec![Inc, Inc], Inconclusive),
            (universal, vec![], Inconclusive),
            // A boundary case refutes nothing; with no clean pass it is the verdict.
            (universal, vec![Outcome::Boundary, Pass], Holds),
            (universal, vec![Outcome::Boundary, Inc], Boundary),
            (universal, vec![Outcome::Boundary, Fail], Violated),
            (existential, vec![Outcome::Boundary], NotWitnessed),
            // Existential: one pass exhibits it; none, whatever else, is no refutation.
            (existential, vec![Inc, Pass, Inc], Witnessed),
            (existential, vec![Inc, Inc], NotWitnessed),
            (existential, vec![], NotWitnessed),
            // A sanity check keeps the universal vocabulary (its section says what it is).
            (sanity, vec![Pass, Pass], Holds),
            (sanity, vec![Pass, Fail], Violated),
            // A measurement has no verdict, only whether anything was measured.
            (measurement, vec![Measured, Inc], Verdict::Measured),
            (measurement, vec![Inc], Inconclusive),
            // A vacuous instance is no evidence: one pass upholds the claim, none leaves it
            // vacuous, and a fail still refutes it.
            (universal, vec![Outcome::Vacuous, Pass], Holds),
            (universal, vec![Outcome::Vacuous, Inc], Vacuous),
            (universal, vec![Outcome::Vacuous, Fail], Violated),
            (
                universal,
                vec![Outcome::Vacuous, Outcome::Boundary],
                Boundary,
            ),
            // Instances outside the claim's premise say nothing; all of them: not applicable,
            // whatever the quantifier or kind.
            (universal, vec![Outcome::NotApplicable, Pass], Holds),
            (universal, vec![Outcome::NotApplicable, Inc], Inconclusive),
            (universal, vec![Outcome::NotApplicable; 3], NotApplicable),
            (existential, vec![Outcome::NotApplicable; 2], NotApplicable),
            (existential, vec![Outcome::NotApplicable, Inc], NotWitnessed),
            (measurement, vec![Outcome::NotApplicable], NotApplicable),
        ] {
            assert_eq!(
                Verdict::of(&claim, outcomes.clone()),
                expected,
                "{:?} {:?} on {outcomes:?}",
                claim.kind,
                claim.quantifier
            );
        }
        // The names claims.csv carries are the serde names.
        for v in Verdict::ALL {
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
        assert_eq!(Verdict::NotWitnessed.as_str(), "not witnessed");
        assert_eq!(Verdict::NotApplicable.as_str(), "not applicable");
    }

    #[test]
    fn the_tolerance_makes_boundary_cases_never_fails() {
        use Outcome::{Boundary, Fail, Pass};
        for (raw, strict, expected) in [
            (0.5, false, Pass),
            (0.0, false, Pass),
            (-1e-9, false, Pass),
            (-1.0000001e-9, false, Fail),
            (0.0, true, Boundary),
            (1e-10, true, Boundary),
            (-1e-9, true, Boundary),
            (1.0000001e-9, true, Pass),
            (-1.0000001e-9, true, Fail),
            (-0.5, true, Fail),
        ] {
            assert_eq!(decide(raw, 1e-9, strict), expected, "{raw} {strict}");
        }
    }

    #[test]
    fn the_consistency_check_names_each_contradiction() {
        let good = Check {
            ratio: Some(0.5),
            bound: Some(0.25),
            margin: Some(0.25),
            ..Check::against_optimum(Outcome::Pass, 1.0, 2.0, "exhaustive", "by hand")
        };
        assert_eq!(good.inconsistencies(), Vec::<String>::new());
        let bad = [
            Check {
                ratio: Some(0.4),
                ..good.clone()
            },
            Check {
                margin: Some(-0.1),
                ..good.clone()
            },
            Check {
                solver_status: None,
                ..good.clone()
            },
            Check {
                upper: Some(3.0),
                ..good.clone()
            },
            Check {
                reference: None,
                ..good.clone()
            },
            Check {
                outcome: Outcome::Boundary,
                margin: None,
                ..good.clone()
            },
            Check {
                outcome: Outcome::Measured,
                margin: None,
                certificate: None,
                ..good.clone()
            },
            Check {
                reference_kind: ReferenceKind::Bound,
                ..good.clone()
            },
            // A vacuous instance is no evidence: no certificate.
            Check {
                outcome: Outcome::Vacuous,
                margin: None,
                ..good.clone()
            },
            // An interval that misses the ratio; one that is empty; one beside an optimum.
            Check {
                ratio_interval: Some([0.6, 0.9]),
                certificate: Some(Certificate::Bound),
                ..good.clone()
            },
            Check {
                ratio_interval: Some([0.5, 0.4]),
                certificate: None,
                ..good.clone()
            },
            Check {
                ratio_interval: Some([0.4, 0.5]),
                ..good.clone()
            },
        ];
        for (k, c) in bad.iter().enumerate() {
            assert_eq!(
                c.inconsistencies().len(),
                1,
                "case {k}: {:?}",
                c.inconsistencies()
            );
        }
    }

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
