//! The command line for the problems after SlimCaching: Prism (paper 001) and ZipMoE (paper
//! 003, a layer's reconstruction schedule and the cache-pool plan). Each command calls the
//! problem's `commands` module and prints its report as text or JSON; `--csv` writes the
//! report's main table through [`crate::export`].

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::{to_json, CliError};
use crate::export::Table;
use crate::prism;
use crate::registry::Rendered;
use crate::report::VERSION;
use crate::zipmoe;

/// Prints a report as JSON or text.
pub(super) fn emit<R: Serialize>(
    report: &R,
    json: bool,
    text: impl FnOnce(&R) -> String,
) -> Result<(), CliError> {
    if json {
        outln!("{}", to_json(report));
    } else {
        out!("{}", text(report));
    }
    Ok(())
}

/// An import configuration: the file's, or the default.
fn import_config<C: DeserializeOwned + Default>(config: Option<&Path>) -> Result<C, CliError> {
    Ok(match config {
        Some(path) => formulations::error::read_json(path)?,
        None => C::default(),
    })
}

/// What `moe-opt plan` plans from.
pub(super) enum PlanSource {
    /// A planning instance file.
    File(PathBuf),
    /// Activation counts, with the header flags of a bare file.
    Counts(PathBuf, crate::counts::Header),
    /// Synthetic counts at a seed.
    Generated(u64),
}

/// `plan`: the cache-pool plan of ZipMoE's App. C (Alg. 4 over Alg. 3's estimate).
pub(super) fn zipmoe_plan(source: PlanSource, config: Option<&Path>) -> Result<Rendered, CliError> {
    use zipmoe::planning::commands as plan;
    // Errors of the configuration (`<config>`) name its file.
    let named = |e: formulations::Error| e.with_file_if(config);
    let report = match source {
        PlanSource::File(path) => plan::plan_file(&path).map_err(|e| e.with_file(&path))?,
        PlanSource::Counts(path, header) => {
            plan::plan_counts(&path, &header, &import_config(config)?).map_err(named)?
        }
        PlanSource::Generated(seed) => {
            plan::plan_generated(&import_config(config)?, seed).map_err(named)?
        }
    };
    let table = plan_table(&report);
    Ok(Rendered::new(&report, report.text()).with_table(table))
}

/// `plan --csv`: a row per activated pool of the chosen split (the report's `pools[]` fields:
/// `pool, letter, ratio` = gamma_p, `experts` = S_p per layer, `bytes_per_layer`), then the
/// Miss Pool (`pool` = `miss`, `letter` = `M`, ratio and bytes empty), so `experts` sums to
/// |N|. Every row repeats the plan's totals: `layers, budget_bytes, expected_makespan_s`.
pub(super) fn plan_table(report: &zipmoe::planning::commands::PlanReport) -> Table {
    let context = vec![
        ("moe_opt_version", Value::from(VERSION)),
        ("instance_name", report.instance_name.clone().into()),
        ("instance_sha256", report.instance_sha256.clone().into()),
        ("layers", report.layers.into()),
        ("budget_bytes", report.budget_bytes.into()),
        ("expected_makespan_s", report.expected_makespan_s.into()),
    ];
    let mut rows: Vec<Value> = report
        .pools
        .iter()
        .map(|p| serde_json::to_value(p).expect("reports serialise"))
        .collect();
    rows.push(
        serde_json::json!({"pool": "miss", "letter": "M", "ratio": null,
        "experts": report.miss_experts, "bytes_per_layer": null}),
    );
    Table::new(context, rows)
}

/// `eplb --csv`: a row per (layer, physical slot): `layer, slot, gpu` (the slot's GPU, slot /
/// slots per GPU), `expert` (the logical expert it holds, `phy2log`), `replica_rank`
/// (`phyrank`), `expert_replicas` (`logcnt` of that expert), `expert_load` (its weight from
/// the file) and `slot_load` = expert_load / expert_replicas (the even split behind
/// `gpu_load` and `balancedness`). Loads are in the weight file's unit (e.g. tokens).
pub(super) fn eplb_table(report: &crate::eplb::EplbReport) -> Table {
    let w = &report.weights;
    let plan = &report.plan;
    let mut rows = Vec::new();
    for (layer, slots) in plan.physical_to_logical.iter().enumerate() {
        for (slot, &expert) in slots.iter().enumerate() {
            let replicas = plan.replica_count[layer][expert];
            let load = w.weight[layer][expert];
            rows.push(serde_json::json!({
                "layer": layer,
                "slot": slot,
                "gpu": plan.gpu_of(slot),
                "expert": expert,
                "replica_rank": plan.physical_rank[layer][slot],
                "expert_replicas": replicas,
                "expert_load": load,
                "slot_load": load / replicas as f64,
            }));
        }
    }
    let context = vec![
        ("moe_opt_version", Value::from(VERSION)),
        ("weights_sha256", report.weights_sha256.clone().into()),
        (
            "policy",
            serde_json::to_value(plan.policy).expect("reports serialise"),
        ),
    ];
    Table::new(context, rows)
}

/// `migrate --csv`: a row per window, the fields of the report's `run.windows[]` (`window,
/// current_cost_s, candidate_cost_s, migration_s, migrated, changed_entries,
/// transferred_bytes, served_proxy_cost, served_cost_s`), each row repeating the planner
/// (`method`) and the conversion of (2) into seconds (`tokens_per_window`,
/// `remote_invocation_s`: served_cost_s = served_proxy_cost x both).
pub(super) fn migrate_table(report: &prism::commands::MigrateReport) -> Table {
    let context = vec![
        ("moe_opt_version", Value::from(VERSION)),
        ("instance_name", report.instance.name.clone().into()),
        ("instance_sha256", report.instance.sha256.clone().into()),
        ("method", report.config.method.name().into()),
        ("tokens_per_window", report.config.tokens_per_window.into()),
        ("remote_invocation_s", report.remote_invocation_s.into()),
    ];
    let rows = report
        .run
        .windows
        .iter()
        .map(|w| serde_json::to_value(w).expect("reports serialise"))
        .collect();
    Table::new(context, rows)
}
