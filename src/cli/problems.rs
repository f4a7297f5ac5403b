//! The command line for the problems after SlimCaching: Prism (paper 001) and ZipMoE (paper
//! 003, a layer's reconstruction schedule and the cache-pool plan). Each command calls the
//! problem's `commands` module and prints its report as text or JSON; `--csv` writes the
//! report's main table through [`crate::export`].

use std::path::{Path, PathBuf};

use formulations::Error;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::{to_json, write_json, CliError};
use crate::export::{write_csv, Table};
use crate::prism;
use crate::report::{RunOptions, VERSION};
use crate::zipmoe;

/// Prints a report as JSON or text.
pub(super) fn emit<R: Serialize>(report: &R, json: bool, text: impl FnOnce(&R) -> String) {
    if json {
        println!("{}", to_json(report));
    } else {
        print!("{}", text(report));
    }
}

/// `generate` for a problem whose generator has a configuration `C` with presets.
pub(super) fn generate<C: Serialize + DeserializeOwned, I: Serialize>(
    config: Option<&Path>,
    preset: impl FnOnce() -> Result<C, String>,
    print_config: bool,
    output: Option<&Path>,
    generate: impl FnOnce(&C) -> Result<I, Error>,
) -> Result<(), CliError> {
    let config: C = match config {
        Some(path) => formulations::error::read_json(path)?,
        None => preset().map_err(CliError::input)?,
    };
    if print_config {
        println!("{}", to_json(&config));
        return Ok(());
    }
    let Some(output) = output else {
        return Err(CliError::input("--output is required"));
    };
    write_json(output, &generate(&config)?)?;
    eprintln!("wrote {}", output.display());
    Ok(())
}

/// An import configuration: the file's, or the default.
pub(super) fn import_config<C: DeserializeOwned + Default>(
    config: Option<&Path>,
) -> Result<C, CliError> {
    Ok(match config {
        Some(path) => formulations::error::read_json(path)?,
        None => C::default(),
    })
}

/// The table of a compare report: a row per method, with the report's version, instance and
/// reference on every row (the JSON's field names).
fn compare_table(report: &impl Serialize) -> Table {
    let v = serde_json::to_value(report).expect("reports serialise");
    let instance = v.get("instance").or_else(|| v.get("layer"));
    let field = |o: Option<&Value>, k: &str| o.and_then(|o| o.get(k)).cloned();
    let context = vec![
        ("moe_opt_version", Value::from(VERSION)),
        (
            "instance_name",
            field(instance, "name").unwrap_or(Value::Null),
        ),
        (
            "instance_sha256",
            field(instance, "sha256").unwrap_or(Value::Null),
        ),
        (
            "reference_kind",
            field(v.get("reference"), "kind").unwrap_or(Value::Null),
        ),
        (
            "reference_value",
            field(v.get("reference"), "value").unwrap_or(Value::Null),
        ),
    ];
    let rows = v
        .get("methods")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Table::new(context, rows)
}

fn parse_methods<M: std::str::FromStr<Err = String> + Copy>(
    names: Option<&[String]>,
    all: &[M],
) -> Result<Vec<M>, CliError> {
    match names {
        Some(names) => names
            .iter()
            .map(|n| n.parse::<M>().map_err(CliError::input))
            .collect(),
        None => Ok(all.to_vec()),
    }
}

/// `solve` of a Prism instance; `--csv`: a row per (server, GPU, expert) of the placement.
pub(super) fn prism_solve(
    file: &Path,
    method: &str,
    options: &RunOptions,
    json: bool,
    csv: Option<&Path>,
) -> Result<(), CliError> {
    let method: prism::methods::Method = method.parse().map_err(CliError::input)?;
    let report = prism::commands::solve(file, method, options)?;
    if let Some(path) = csv {
        let mut rows = Vec::new();
        for (n, gpus) in report
            .placement
            .iter()
            .flat_map(|p| p.gpus.iter().enumerate())
        {
            for (g, experts) in gpus.iter().enumerate() {
                for e in experts {
                    rows.push(serde_json::json!({"server": n, "gpu": g,
                        "layer": e.layer, "expert": e.expert}));
                }
            }
        }
        let context = vec![
            ("moe_opt_version", VERSION.into()),
            ("instance_name", report.instance.name.clone().into()),
            ("instance_sha256", report.instance.sha256.clone().into()),
            ("method", report.result.method.name().into()),
        ];
        write_csv(path, &Table::new(context, rows))?;
    }
    emit(&report, json, |r| r.text());
    Ok(())
}

/// `compare` of a Prism instance.
pub(super) fn prism_compare(
    file: &Path,
    names: Option<&[String]>,
    options: &RunOptions,
    json: bool,
    csv: Option<&Path>,
) -> Result<(), CliError> {
    use prism::methods::{Method, EXHAUSTIVE_MAX_EXPERTS};
    let mut chosen = parse_methods(names, &Method::ALL)?;
    if names.is_none() {
        // Every method, exhaustive search only where its size limit allows.
        let experts = formulations::prism::load(file)?.expert_count();
        chosen.retain(|m| *m != Method::Exhaustive || experts <= EXHAUSTIVE_MAX_EXPERTS);
    }
    let report = prism::commands::compare(file, &chosen, options)?;
    if let Some(path) = csv {
        write_csv(path, &compare_table(&report))?;
    }
    emit(&report, json, |r| r.text());
    Ok(())
}

/// `solve` of a ZipMoE layer; `--csv`: the Gantt chart (a row per operation).
pub(super) fn zipmoe_solve(
    file: &Path,
    method: &str,
    options: &RunOptions,
    json: bool,
    csv: Option<&Path>,
) -> Result<(), CliError> {
    let method: zipmoe::methods::Method = method.parse().map_err(CliError::input)?;
    let instance = formulations::zipmoe::load(file)?;
    let report = zipmoe::commands::solve(&instance, method, options)?;
    if let Some(path) = csv {
        let rows = report
            .gantt
            .iter()
            .map(|r| serde_json::to_value(r).expect("rows serialise"))
            .collect();
        let context = vec![
            ("moe_opt_version", VERSION.into()),
            ("instance_name", report.layer.name.clone().into()),
            ("instance_sha256", report.layer.sha256.clone().into()),
            ("method", report.result.method.name().into()),
        ];
        write_csv(path, &Table::new(context, rows))?;
    }
    emit(&report, json, |r| r.text());
    Ok(())
}

/// `compare` of a ZipMoE layer.
pub(super) fn zipmoe_compare(
    file: &Path,
    names: Option<&[String]>,
    options: &RunOptions,
    json: bool,
    csv: Option<&Path>,
) -> Result<(), CliError> {
    let chosen = parse_methods(names, &zipmoe::methods::Method::ALL)?;
    let instance = formulations::zipmoe::load(file)?;
    let report = zipmoe::commands::compare(&instance, &chosen, options)?;
    if let Some(path) = csv {
        write_csv(path, &compare_table(&report))?;
    }
    emit(&report, json, |r| r.text());
    Ok(())
}

/// `write-lp` of a ZipMoE layer.
pub(super) fn zipmoe_write_lp(file: &Path, output: &Path) -> Result<(), CliError> {
    let instance = formulations::zipmoe::load(file)?;
    let lp = zipmoe::commands::write_lp(&instance)?;
    super::write_file(output, lp.as_bytes())?;
    eprintln!("wrote {}", output.display());
    Ok(())
}

/// What `moe-opt plan` plans from.
pub(super) enum PlanSource {
    /// A planning instance file.
    File(PathBuf),
    /// An activation-count file.
    Counts(PathBuf),
    /// Synthetic counts at a seed.
    Generated(u64),
}

/// `plan`: the cache-pool plan of ZipMoE's App. C (Alg. 4 over Alg. 3's estimate).
pub(super) fn zipmoe_plan(
    source: PlanSource,
    config: Option<&Path>,
    json: bool,
) -> Result<(), CliError> {
    use zipmoe::planning::commands as plan;
    let report = match source {
        PlanSource::File(path) => plan::plan_file(&path)?,
        PlanSource::Counts(path) => plan::plan_counts(&path, &import_config(config)?)?,
        PlanSource::Generated(seed) => plan::plan_generated(&import_config(config)?, seed)?,
    };
    emit(&report, json, |r| r.text());
    Ok(())
}
