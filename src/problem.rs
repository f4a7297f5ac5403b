//! The problem interface: what a problem with methods to compare (an exact MILP, the paper's
//! algorithms, its baselines) gives once, and the one runner every such problem shares.
//!
//! A problem implements [`Problem`]: its tag, how to load an instance, its methods (a
//! [`Named`] enum), how a method finds a solution ([`Problem::solve`]) and the one evaluator
//! ([`Problem::evaluate`]). [`run`] times a method, evaluates what it found and keeps the
//! solver's account; [`Reference::from_runs`] picks what ratios are taken against (a proved
//! optimum, else the best proved bound, on the side the problem's [`Sense`] says). The command
//! line reaches problems through [`crate::registry`]; docs/adding-a-problem.md is the recipe.

use std::path::Path;
use std::time::Instant;

use formulations::milp::{Milp, MilpSolution, MilpStatus};
use formulations::{Error, ValidationError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::named::Named;

/// Options shared by the methods of every problem.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunOptions {
    /// MILP options (time limit, relative gap, threads).
    pub solve: formulations::milp::SolveOptions,
    /// Seed of the randomised methods.
    pub seed: u64,
}

/// Whether a problem's objective is minimised or maximised: which side a solver's bound is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sense {
    /// Smaller is better; a bound is a lower bound and ratios to the optimum are >= 1.
    Minimize,
    /// Larger is better; a bound is an upper bound and ratios to the optimum are <= 1.
    Maximize,
}

/// A problem with methods to compare against its exact optimum (module doc).
pub trait Problem: Sized + Sync + 'static {
    /// The `problem` tag of its instance files, and its name on the command line.
    const TAG: &'static str;
    /// One line: what the problem is, and its paper.
    const ABOUT: &'static str;
    /// Minimised or maximised.
    const SENSE: Sense;
    /// The objective's name, with its unit (`_s` seconds), as sweeps and exports call it.
    const OBJECTIVE: &'static str;
    /// An instance, as its files hold it.
    type Instance: Serialize + DeserializeOwned + Clone + Send + Sync;
    /// An instance compiled once for the methods and the evaluator (SlimCaching's latency
    /// model; the instance itself where nothing needs compiling).
    type Model: Send + Sync;
    /// A way to solve it.
    type Method: Named + Serialize + Send + Sync;
    /// What a method finds (a placement, a schedule).
    type Solution: Clone + Send + Sync;
    /// The evaluator's account of a solution.
    type Evaluation: Clone + Send + Sync;
    /// What some methods report beside the solution (e.g. subproblem values).
    type Detail: Clone + Default + Send + Sync;

    /// Reads and validates an instance file; errors name the file and the field.
    fn load(path: &Path) -> Result<Self::Instance, Error>;
    /// Compiles an instance.
    fn model(instance: &Self::Instance) -> Self::Model;
    /// The methods whose solution is a proved optimum when they finish.
    const EXACT: &'static [Self::Method];
    /// The methods `compare` runs when none are named: all, exact searches only where their
    /// size limits allow. By default every method ([`Named::ALL`]): those that refuse the
    /// instance's size ([`Error::TooLarge`]) are skipped by `compare`, with the reason; a
    /// problem overrides it to leave a method out before it runs.
    fn default_methods(_instance: &Self::Instance) -> Vec<Self::Method> {
        Self::Method::ALL.to_vec()
    }
    /// True for the methods of [`Problem::EXACT`].
    fn is_exact(method: Self::Method) -> bool {
        Self::EXACT.contains(&method)
    }
    /// Runs one method (without evaluating its solution).
    fn solve(
        model: &Self::Model,
        method: Self::Method,
        options: &RunOptions,
    ) -> Result<Solved<Self>, Error>;
    /// The one evaluator.
    fn evaluate(
        model: &Self::Model,
        solution: &Self::Solution,
    ) -> Result<Self::Evaluation, ValidationError>;
    /// The objective of an evaluation.
    fn objective(evaluation: &Self::Evaluation) -> f64;
    /// The exact MILP, for `write-lp` (the problems without one keep this default).
    fn milp(_model: &Self::Model) -> Result<Milp, Error> {
        Err(Error::command_line(
            "problem",
            format!("{} has no MILP to write", Self::TAG),
        ))
    }
}

/// What a method found, before evaluation.
pub struct Solved<P: Problem> {
    /// The solution; `None` when the method found none (an exact solve without incumbent, an
    /// algorithm that cannot cover the instance).
    pub solution: Option<P::Solution>,
    /// The MILP's status, incumbent, bound and gap.
    pub exact: Option<ExactReport>,
    /// Objective evaluations the method made (greedy and successive algorithms).
    pub evaluations: Option<u64>,
    /// Why there is no solution, or what the method left out.
    pub note: Option<String>,
    /// The problem's extra account.
    pub detail: P::Detail,
}

impl<P: Problem> Solved<P> {
    /// A solution and nothing else.
    pub fn found(solution: P::Solution) -> Self {
        Solved {
            solution: Some(solution),
            exact: None,
            evaluations: None,
            note: None,
            detail: P::Detail::default(),
        }
    }

    /// No solution, and why.
    pub fn none(note: impl Into<String>) -> Self {
        Solved {
            solution: None,
            exact: None,
            evaluations: None,
            note: Some(note.into()),
            detail: P::Detail::default(),
        }
    }

    /// A MILP's solve: its decoded solution (if any) and its account.
    pub fn exact(solution: Option<P::Solution>, milp: &MilpSolution) -> Self {
        Solved {
            solution,
            exact: Some(ExactReport::of(milp)),
            evaluations: None,
            note: None,
            detail: P::Detail::default(),
        }
    }
}

/// The MILP's own account of a solve, in the units of the problem's objective.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExactReport {
    /// How the solve ended.
    pub status: MilpStatus,
    /// The incumbent's objective as the MILP computes it.
    pub objective: Option<f64>,
    /// Best proved bound on the optimum (an upper bound when maximising, lower when
    /// minimising).
    pub best_bound: Option<f64>,
    /// Relative gap between them, as HiGHS reports it.
    pub gap: Option<f64>,
    /// Seconds from the method's start to HiGHS's result (warm start and model building
    /// included).
    pub solve_time_s: f64,
    /// Why the incumbent is the MIP start and there is no bound, when the time limit ran out
    /// before HiGHS had the model or the start; how a method's own bound search ended
    /// (SlimCaching's `lagrangian`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl ExactReport {
    /// The account of a solve.
    pub fn of(s: &MilpSolution) -> Self {
        ExactReport {
            status: s.status,
            objective: s.objective,
            best_bound: s.best_bound,
            gap: s.gap,
            solve_time_s: s.solve_time_s,
            note: s.note.clone(),
        }
    }
}

/// One method's result on one instance.
pub struct MethodRun<P: Problem> {
    /// The method.
    pub method: P::Method,
    /// What it found.
    pub solution: Option<P::Solution>,
    /// The evaluator's account of it.
    pub evaluation: Option<P::Evaluation>,
    /// Wall-clock seconds of the method (MILP: building and solving), without evaluation.
    pub runtime_s: f64,
    /// The MILP's status, incumbent, bound and gap.
    pub exact: Option<ExactReport>,
    /// Objective evaluations the method made.
    pub evaluations: Option<u64>,
    /// Why there is no solution, or what was left out.
    pub note: Option<String>,
    /// The problem's extra account.
    pub detail: P::Detail,
}

impl<P: Problem> Clone for MethodRun<P> {
    fn clone(&self) -> Self {
        MethodRun {
            method: self.method,
            solution: self.solution.clone(),
            evaluation: self.evaluation.clone(),
            runtime_s: self.runtime_s,
            exact: self.exact.clone(),
            evaluations: self.evaluations,
            note: self.note.clone(),
            detail: self.detail.clone(),
        }
    }
}

impl<P: Problem> MethodRun<P> {
    /// The objective of the solution, if there is one.
    pub fn objective(&self) -> Option<f64> {
        self.evaluation.as_ref().map(P::objective)
    }

    /// True when the objective is a proved optimum: an exact method found a solution and, if
    /// it is a MILP, proved it optimal.
    pub fn is_proved_optimal(&self) -> bool {
        P::is_exact(self.method)
            && self.solution.is_some()
            && self
                .exact
                .as_ref()
                .is_none_or(|e| e.status == MilpStatus::Optimal)
    }
}

/// Runs one method: times it, then evaluates its solution with the problem's one evaluator
/// (an evaluator error names the method as the file: `<greedy>: ...`).
pub fn run<P: Problem>(
    model: &P::Model,
    method: P::Method,
    options: &RunOptions,
) -> Result<MethodRun<P>, Error> {
    let began = Instant::now();
    // A MILP's time limit counts from here: its warm start and its model's building count.
    let options = RunOptions {
        solve: options.solve.started_now(),
        ..options.clone()
    };
    let solved = P::solve(model, method, &options)?;
    let runtime_s = began.elapsed().as_secs_f64();
    let evaluation = match &solved.solution {
        Some(s) => {
            Some(P::evaluate(model, s).map_err(|e| e.in_file(format!("<{}>", method.name())))?)
        }
        None => None,
    };
    Ok(MethodRun {
        method,
        solution: solved.solution,
        evaluation,
        runtime_s,
        exact: solved.exact,
        evaluations: solved.evaluations,
        note: solved.note,
        detail: solved.detail,
    })
}

/// The runs of several methods; a method whose size limit refuses the instance
/// ([`Error::TooLarge`]) is listed in `skipped` with the reason, any other error ends the run.
pub struct Runs<P: Problem> {
    /// The methods that ran, in the order asked.
    pub runs: Vec<MethodRun<P>>,
    /// The methods refused by their size limits, with the reason.
    pub skipped: Vec<(P::Method, String)>,
    /// What ratios are taken against.
    pub reference: Reference,
}

/// Runs the methods in order (see [`Runs`]).
pub fn run_all<P: Problem>(
    model: &P::Model,
    methods: &[P::Method],
    options: &RunOptions,
) -> Result<Runs<P>, Error> {
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for &m in methods {
        match run::<P>(model, m, options) {
            Ok(r) => runs.push(r),
            Err(Error::TooLarge(why)) => skipped.push((m, why)),
            Err(e) => return Err(e),
        }
    }
    let reference = Reference::from_runs(&runs);
    Ok(Runs {
        runs,
        skipped,
        reference,
    })
}

/// What a method's objective is compared with, and the method whose run proved it: in JSON
/// `{"kind": "optimum" | "bound", "value": v, "source": method}` or `{"kind": "none"}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Reference {
    /// A proved optimum (an exact method that finished).
    Optimum {
        /// The optimum.
        value: f64,
        /// The method that proved it.
        source: &'static str,
    },
    /// Only a proved bound on the optimum (a MILP stopped early, a relaxation): ratios are
    /// bounds on the ratios to the optimum.
    Bound {
        /// The tightest bound among the runs.
        value: f64,
        /// The method whose run proved it.
        source: &'static str,
    },
    /// Nothing to compare with.
    None,
}

impl Reference {
    /// The first proved optimum among the runs, else the tightest proved bound of any run (the
    /// smallest upper bound when maximising, the largest lower bound when minimising), with
    /// the method it comes from.
    pub fn from_runs<P: Problem>(runs: &[MethodRun<P>]) -> Self {
        if let Some((value, source)) = runs
            .iter()
            .filter(|r| r.is_proved_optimal())
            .find_map(|r| Some((r.objective()?, r.method.name())))
        {
            return Reference::Optimum { value, source };
        }
        let bounds = runs
            .iter()
            .filter_map(|r| Some((r.exact.as_ref()?.best_bound?, r.method.name())));
        let tightest = match P::SENSE {
            Sense::Maximize => bounds.min_by(|a, b| a.0.total_cmp(&b.0)),
            Sense::Minimize => bounds.max_by(|a, b| a.0.total_cmp(&b.0)),
        };
        tightest.map_or(Reference::None, |(value, source)| Reference::Bound {
            value,
            source,
        })
    }

    /// objective / reference, when the reference is positive.
    pub fn ratio(self, objective: f64) -> Option<f64> {
        self.value().filter(|&v| v > 0.0).map(|v| objective / v)
    }

    /// `optimum`, `bound` or `none`.
    pub fn kind(self) -> &'static str {
        match self {
            Reference::Optimum { .. } => "optimum",
            Reference::Bound { .. } => "bound",
            Reference::None => "none",
        }
    }

    /// The value, if any.
    pub fn value(self) -> Option<f64> {
        match self {
            Reference::Optimum { value, .. } | Reference::Bound { value, .. } => Some(value),
            Reference::None => None,
        }
    }

    /// The method the value comes from, if any.
    pub fn source(self) -> Option<&'static str> {
        match self {
            Reference::Optimum { source, .. } | Reference::Bound { source, .. } => Some(source),
            Reference::None => None,
        }
    }
}

/// The methods named on the command line, or the problem's defaults.
pub fn chosen_methods<P: Problem>(
    instance: &P::Instance,
    names: Option<&[String]>,
) -> Result<Vec<P::Method>, Error> {
    match names {
        Some(names) => names
            .iter()
            .map(|n| P::Method::parse_name(n).map_err(|e| Error::command_line("--methods", e)))
            .collect(),
        None => Ok(P::default_methods(instance)),
    }
}
