//! Validation of a balance instance; every rule names the field it checks.
//!
//! EPLB's own rules (its asserts): `num_replicas` a multiple of `num_gpus` and at least the
//! experts per layer; with `hierarchical`, experts a multiple of `num_groups` and `num_groups`
//! a multiple of `num_nodes`. Always `num_gpus` a multiple of `num_nodes` (a node holds whole
//! GPUs). Beyond EPLB: loads finite and >= 0, every layer the same experts, at most
//! [`MAX_REPLICAS_PER_EXPERT`] slots per expert, at most [`MAX_LAYERS`] layers and
//! [`MAX_EXPERTS`] experts; an option that no plan can meet is refused here (one replica per
//! GPU needs S <= G E, per node when hierarchical), so every method has a feasible plan to find.
//! `current`, when given, is one `phy2log` per layer of `num_replicas` experts each in range
//! (it need not respect the options: it is the placement in service, whatever made it).

use super::model::Instance;
use crate::error::{at_most, fail, non_negative, Check};
use crate::problem::ProblemKind;

/// Most slots per logical expert (EPLB's port has the same limit).
pub const MAX_REPLICAS_PER_EXPERT: usize = 64;
/// Most layers.
pub const MAX_LAYERS: usize = 4096;
/// Most logical experts per layer.
pub const MAX_EXPERTS: usize = 4096;

fn multiple(field: &str, value: usize, of_name: &str, of: usize) -> Check {
    if value.is_multiple_of(of) {
        Ok(())
    } else {
        fail(
            field,
            format!("{value} is not a multiple of {of_name} = {of}"),
        )
    }
}

/// Checks every rule; the first violation is returned.
pub fn validate(instance: &Instance) -> Check {
    if instance.problem != ProblemKind::Balance {
        return fail(
            "problem",
            format!("must be \"balance\", got \"{}\"", instance.problem.name()),
        );
    }
    for (field, v) in [
        ("num_replicas", instance.num_replicas),
        ("num_gpus", instance.num_gpus),
        ("num_nodes", instance.num_nodes),
        ("num_groups", instance.num_groups),
    ] {
        if v == 0 {
            return fail(field, "must be at least 1");
        }
    }
    if instance.loads.is_empty() || instance.loads[0].is_empty() {
        return fail("loads", "needs at least one layer and one expert per layer");
    }
    at_most(
        "loads",
        "layers",
        instance.loads.len() as u64,
        MAX_LAYERS as u64,
        "formulations::balance::validate::MAX_LAYERS",
    )?;
    let experts = instance.loads[0].len();
    at_most(
        "loads[0]",
        "experts",
        experts as u64,
        MAX_EXPERTS as u64,
        "formulations::balance::validate::MAX_EXPERTS",
    )?;
    for (l, row) in instance.loads.iter().enumerate() {
        if row.len() != experts {
            return fail(
                format!("loads[{l}]"),
                format!("has {} experts, layer 0 has {experts}", row.len()),
            );
        }
        for (e, &w) in row.iter().enumerate() {
            non_negative(&format!("loads[{l}][{e}]"), w)?;
        }
    }
    let (s, g) = (instance.num_replicas, instance.num_gpus);
    at_most(
        "num_replicas",
        "slots",
        s as u64,
        (MAX_REPLICAS_PER_EXPERT * experts) as u64,
        "formulations::balance::validate::MAX_REPLICAS_PER_EXPERT x experts",
    )?;
    multiple("num_replicas", s, "num_gpus", g)?;
    if s < experts {
        return fail(
            "num_replicas",
            format!("{s} is fewer than the {experts} experts per layer"),
        );
    }
    multiple("num_gpus", g, "num_nodes", instance.num_nodes)?;
    if instance.hierarchical {
        multiple("num_groups", experts, "num_groups", instance.num_groups).map_err(|_| {
            crate::error::ValidationError::new(
                "num_groups",
                format!(
                    "the {experts} experts are not a multiple of num_groups = {} (hierarchical)",
                    instance.num_groups
                ),
            )
        })?;
        multiple(
            "num_groups",
            instance.num_groups,
            "num_nodes",
            instance.num_nodes,
        )?;
    }
    if instance.one_replica_per_gpu {
        let (slots, experts, gpus, per) = if instance.hierarchical {
            let n = instance.num_nodes;
            (s / n, experts / n, g / n, "per node ")
        } else {
            (s, experts, g, "")
        };
        if slots > gpus * experts {
            return fail(
                "one_replica_per_gpu",
                format!(
                    "no plan exists: {slots} slots {per}need more than one replica of an expert \
                     on some GPU ({gpus} GPUs x {experts} experts)"
                ),
            );
        }
    }
    if let Some(current) = &instance.current {
        if current.len() != instance.loads.len() {
            return fail(
                "current",
                format!(
                    "has {} layers, loads has {}",
                    current.len(),
                    instance.loads.len()
                ),
            );
        }
        for (l, row) in current.iter().enumerate() {
            if row.len() != s {
                return fail(
                    format!("current[{l}]"),
                    format!("has {} slots, num_replicas is {s}", row.len()),
                );
            }
            if let Some(p) = row.iter().position(|&e| e >= experts) {
                return fail(
                    format!("current[{l}][{p}]"),
                    format!("expert {} is not below {experts}", row[p]),
                );
            }
        }
    }
    Ok(())
}
