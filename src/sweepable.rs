//! What a sweep needs of a problem, and what it gets back: the problem-facing half of
//! [`crate::sweep`]. A [`Sweepable`] problem (a [`Problem`] with a [`Generator`]) gets a
//! [`SweepProblem`] from [`SweepAdapter`], which generates a cell's instance, runs the methods
//! and returns a [`Row`] of `results.csv` per method; the registry hands it to the sweep runner.
//! Kept apart from the runner so that the problem interface (`registry`) needs nothing of the
//! runner, which finds problems through the registry.

use formulations::Error;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::generate::Generator;
use crate::named::Named;
use crate::problem::RunOptions;
use crate::problem::{run_all, MethodRun, Problem};
use crate::report::canonical_sha256;

/// One method's result on one cell: a row of results.csv.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Cell index.
    pub cell: u64,
    /// Generator seed.
    pub seed: u64,
    /// SHA-256 of the cell's instance (canonical JSON).
    pub instance_sha256: String,
    /// Method name.
    pub method: String,
    /// The problem's objective (module doc's table; SlimCaching: F(X) of (17), the latency
    /// reduction, seconds, larger is better; Prism: proxy cost (2) and ZipMoE: makespan,
    /// seconds, smaller is better).
    pub objective: Option<f64>,
    /// Name and unit of `objective` (e.g. `latency_reduction_s`).
    pub objective_name: String,
    /// objective / reference (a ratio to the proved optimum when `reference_kind` is
    /// `optimum`; a bound on it when `bound`).
    pub ratio: Option<f64>,
    /// `optimum`, `bound` or `none`.
    pub reference_kind: String,
    /// The reference value.
    pub reference: Option<f64>,
    /// The placement respects the problem's constraints.
    pub feasible: Option<bool>,
    /// Exact methods: the solver's status (`optimal`, `time_limit`, ..., `too_large` for a
    /// method its size limit refused).
    pub solver_status: Option<String>,
    /// Exact methods: relative gap between incumbent and bound.
    pub gap: Option<f64>,
    /// A second quantity of the problem (SlimCaching: the average per-token latency, seconds;
    /// Prism: the simulated mean latency, seconds; ZipMoE: Lemma B.3's lower bound, seconds).
    pub secondary: Option<f64>,
    /// Name and unit of `secondary`.
    pub secondary_name: String,
    /// Wall-clock seconds of the method, only with `record_runtime = true`.
    pub runtime_s: Option<f64>,
}

/// What a sweep needs of a problem: its registry entry gives one ([`crate::registry::Entry::sweep`]).
pub trait SweepProblem: Sync {
    /// The base configuration of a preset, as JSON.
    fn base_config(&self, preset: &str) -> Result<Value, String>;
    /// Checks that a configuration parses and the methods exist.
    fn check_config(&self, config: &Value, methods: &[String]) -> Result<(), String>;
    /// Generates the cell's instance from the options' seed and runs the methods: a row each,
    /// their `cell` left 0 for the sweep to set.
    fn run_cell(
        &self,
        config: &Value,
        methods: &[String],
        options: &RunOptions,
    ) -> Result<Vec<Row>, Error>;
}

/// A [`Problem`] whose generator a sweep drives: a second quantity for the table beside the
/// objective (module doc's table) and feasibility.
pub trait Sweepable: Problem + Generator<Generated = <Self as Problem>::Instance> {
    /// Name and unit of [`Sweepable::secondary`].
    const SECONDARY: &'static str;
    /// The solution respects the problem's constraints.
    fn feasible(evaluation: &Self::Evaluation) -> bool;
    /// The second quantity of a run (seeded by the run options' seed where it samples).
    fn secondary(instance: &Self::Instance, run: &MethodRun<Self>, seed: u64) -> Option<f64>;
}

/// The sweep adapter of any [`Sweepable`] problem.
pub struct SweepAdapter<P>(std::marker::PhantomData<P>);

impl<P> SweepAdapter<P> {
    /// The adapter.
    pub fn new() -> Self {
        SweepAdapter(std::marker::PhantomData)
    }
}

impl<P> Default for SweepAdapter<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Sweepable> SweepProblem for SweepAdapter<P> {
    fn base_config(&self, preset: &str) -> Result<Value, String> {
        let preset = P::Preset::parse_name(preset)?;
        Ok(serde_json::to_value(P::preset_config(preset)).expect("configurations serialise"))
    }

    fn check_config(&self, config: &Value, methods: &[String]) -> Result<(), String> {
        let config: P::Config =
            serde_json::from_value(config.clone()).map_err(|e| e.to_string())?;
        P::check(&config).map_err(|e| e.to_string())?;
        for m in methods {
            P::Method::parse_name(m)?;
        }
        Ok(())
    }

    /// Exact methods refused by their size limits (`Error::TooLarge`) leave a `too_large` row.
    fn run_cell(
        &self,
        config: &Value,
        methods: &[String],
        options: &RunOptions,
    ) -> Result<Vec<Row>, Error> {
        let config: P::Config = serde_json::from_value(config.clone())
            .map_err(|e| cell_invalid("config", e.to_string()))?;
        let seed = options.seed;
        let instance = P::generate_instance(&config, seed)?;
        let sha = canonical_sha256(&instance);
        let model = P::model(&instance);
        let chosen = methods
            .iter()
            .map(|m| P::Method::parse_name(m).map_err(|r| cell_invalid("methods", r)))
            .collect::<Result<Vec<_>, _>>()?;
        let runs = run_all::<P>(&model, &chosen, options)?;
        let reference = runs.reference;
        // A placement holding everything everywhere costs -0.0 (a sum of negated zeros): the
        // table says 0. (x + 0.0 is +0.0 for x = -0.0 and x otherwise.)
        let reference_value = reference.value().map(|v| v + 0.0);
        let mut done = runs.runs.iter();
        let rows = chosen
            .iter()
            .map(|&m| {
                if runs.skipped.iter().any(|(s, _)| *s == m) {
                    return too_large_row(seed, &sha, m.name(), P::OBJECTIVE, P::SECONDARY);
                }
                let r = done.next().expect("a run per method not skipped");
                let e = r.evaluation.as_ref();
                let objective = r.objective().map(|o| o + 0.0);
                Row {
                    cell: 0,
                    seed,
                    instance_sha256: sha.clone(),
                    method: m.name().into(),
                    objective,
                    objective_name: P::OBJECTIVE.into(),
                    ratio: r.objective().and_then(|o| reference.ratio(o)),
                    reference_kind: reference.kind().into(),
                    reference: reference_value,
                    feasible: e.map(P::feasible),
                    solver_status: r.exact.as_ref().map(|x| x.status.name().to_string()),
                    gap: r.exact.as_ref().and_then(|x| x.gap),
                    secondary: P::secondary(&instance, r, seed),
                    secondary_name: P::SECONDARY.into(),
                    runtime_s: Some(r.runtime_s),
                }
            })
            .collect();
        Ok(rows)
    }
}

fn cell_invalid(field: &str, reason: String) -> Error {
    Error::Invalid {
        path: "<sweep cell>".into(),
        field: field.into(),
        reason,
    }
}

/// The row of a method an exact method's size limit refused (`Error::TooLarge`): no objective,
/// `solver_status = too_large`, so every cell keeps a row per method.
fn too_large_row(seed: u64, sha: &str, method: &str, objective: &str, secondary: &str) -> Row {
    Row {
        cell: 0,
        seed,
        instance_sha256: sha.into(),
        method: method.into(),
        objective: None,
        objective_name: objective.into(),
        ratio: None,
        reference_kind: String::new(),
        reference: None,
        feasible: None,
        solver_status: Some("too_large".into()),
        gap: None,
        secondary: None,
        secondary_name: secondary.into(),
        runtime_s: None,
    }
}
