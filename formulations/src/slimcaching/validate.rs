//! Validation of a SlimCaching instance. Every rule names the field it checks.
//!
//! Probabilities must lie in [0, 1] and each distribution (p_{u,m} over models, p_{u,S} over
//! sets) must sum to 1 within [`PROBABILITY_TOLERANCE`]. Sizes, capacities, compute and rates
//! must be positive and finite; latencies finite and non-negative. Sets have exactly K_m
//! distinct experts within 0..E_m. Every requested model (p > 0) needs one distribution per
//! MoE layer. Backhaul links are checked for symmetry only when `symmetric` is declared.
//! Limits of the evaluator: at most [`MAX_SERVERS`] servers and K_m <= [`MAX_TOP_K`]. Sizes that
//! drive allocations (placements and gains are dense per server and expert) are bounded before
//! any is made: [`MAX_MODELS`], [`MAX_LAYERS`], [`MAX_EXPERTS_PER_LAYER`], [`MAX_TOTAL_EXPERTS`]
//! and [`MAX_USERS`].

use std::collections::HashSet;

use super::model::{ExpertCatalogue, Instance, Link};
use crate::error::{at_most, fail, positive, Check};

/// Allowed deviation of a probability distribution's sum from 1.
pub const PROBABILITY_TOLERANCE: f64 = 1e-6;
/// Most edge servers an instance may have (server sets are 32-bit masks in the router).
pub const MAX_SERVERS: usize = 32;
/// Largest K_m (the router's subset DP is exponential in the experts a token sends out).
pub const MAX_TOP_K: u32 = 16;
/// Most MoE models an instance may have (real deployments serve a handful; the paper's preset
/// has 18).
pub const MAX_MODELS: usize = 1024;
/// Most MoE layers of one model (the deepest public MoE models have about 60).
pub const MAX_LAYERS: u32 = 1024;
/// Most experts per MoE layer of one model (public models have at most a few hundred).
pub const MAX_EXPERTS_PER_LAYER: u32 = 1 << 16;
/// Most experts of all models together, sum_m L_m E_m: placements, gains and the MILP's
/// variables are dense per server and expert, so 32 servers x 2^20 experts bound them to
/// tens of MB a vector.
pub const MAX_TOTAL_EXPERTS: u64 = 1 << 20;
/// Most users an instance may have.
pub const MAX_USERS: usize = 1 << 16;
/// Most bytes of an expert or a hidden state (64 GiB; real experts are under 1 GiB): sizes
/// summed over every expert stay far inside u64.
pub const MAX_BYTES: u64 = 1 << 36;
/// Relative tolerance of the symmetry check.
const SYMMETRY_TOLERANCE: f64 = 1e-9;

fn probability(field: &str, p: f64) -> Check {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        fail(field, format!("probability {p} is outside [0, 1]"))
    }
}

fn sums_to_one(field: &str, sum: f64) -> Check {
    if (sum - 1.0).abs() <= PROBABILITY_TOLERANCE {
        Ok(())
    } else {
        fail(
            field,
            format!("probabilities sum to {sum}, not 1 (tolerance {PROBABILITY_TOLERANCE})"),
        )
    }
}

fn link(field: &str, l: &Link) -> Check {
    if !(l.latency_s.is_finite() && l.latency_s >= 0.0) {
        return fail(
            format!("{field}.latency_s"),
            format!("must be finite and >= 0, got {}", l.latency_s),
        );
    }
    if let Some(r) = l.rate_bps {
        positive(&format!("{field}.rate_bps"), r)?;
    }
    Ok(())
}

fn same_link(a: &Link, b: &Link) -> bool {
    let close = |x: f64, y: f64| (x - y).abs() <= SYMMETRY_TOLERANCE * x.abs().max(y.abs());
    close(a.latency_s, b.latency_s)
        && match (a.rate_bps, b.rate_bps) {
            (Some(x), Some(y)) => close(x, y),
            (None, None) => true,
            _ => false,
        }
}

/// A list of at least one and at most `limit` entries (`one` names an entry).
fn listed(field: &str, one: &str, len: usize, limit: usize, name: &str) -> Check {
    if len == 0 {
        return fail(field, format!("at least one {one} is required"));
    }
    at_most(field, field, len as u64, limit as u64, name)
}

/// Checks every rule; the first violation is returned.
pub fn validate(instance: &Instance) -> Check {
    let n = instance.servers.len();
    if n == 0 {
        return fail("servers", "at least one edge server is required");
    }
    if n > MAX_SERVERS {
        return fail(
            "servers",
            format!("{n} servers; at most {MAX_SERVERS} are supported"),
        );
    }
    for (i, s) in instance.servers.iter().enumerate() {
        if s.storage_bytes == 0 {
            return fail(format!("servers[{i}].storage_bytes"), "must be positive");
        }
        positive(&format!("servers[{i}].compute_flops"), s.compute_flops)?;
    }
    positive("cloud.compute_flops", instance.cloud.compute_flops)?;
    validate_backhaul(instance)?;
    listed(
        "models",
        "MoE model",
        instance.models.len(),
        MAX_MODELS,
        "formulations::slimcaching::validate::MAX_MODELS",
    )?;
    let mut total_experts = 0u64;
    for (i, m) in instance.models.iter().enumerate() {
        let f = |name: &str| format!("models[{i}].{name}");
        if m.layers == 0 {
            return fail(f("layers"), "must be at least 1");
        }
        at_most(
            f("layers"),
            "layers",
            m.layers.into(),
            MAX_LAYERS.into(),
            "formulations::slimcaching::validate::MAX_LAYERS",
        )?;
        if m.experts_per_layer == 0 {
            return fail(f("experts_per_layer"), "must be at least 1");
        }
        at_most(
            f("experts_per_layer"),
            "experts",
            m.experts_per_layer.into(),
            MAX_EXPERTS_PER_LAYER.into(),
            "formulations::slimcaching::validate::MAX_EXPERTS_PER_LAYER",
        )?;
        if m.top_k == 0 || m.top_k > m.experts_per_layer {
            return fail(
                f("top_k"),
                format!(
                    "must be in 1..={} (experts_per_layer), got {}",
                    m.experts_per_layer, m.top_k
                ),
            );
        }
        if m.top_k > MAX_TOP_K {
            return fail(
                f("top_k"),
                format!("{} exceeds the supported maximum {MAX_TOP_K}", m.top_k),
            );
        }
        for (field, bytes) in [
            ("expert_bytes", m.expert_bytes),
            ("hidden_bytes", m.hidden_bytes),
        ] {
            if bytes == 0 {
                return fail(f(field), "must be positive");
            }
            at_most(
                f(field),
                "bytes",
                bytes,
                MAX_BYTES,
                "formulations::slimcaching::validate::MAX_BYTES",
            )?;
        }
        positive(&f("expert_flops"), m.expert_flops)?;
        // Both factors are bounded above, so neither the product nor the sum overflows.
        total_experts += u64::from(m.layers) * u64::from(m.experts_per_layer);
    }
    at_most(
        "models",
        "experts in total (sum of layers x experts_per_layer)",
        total_experts,
        MAX_TOTAL_EXPERTS,
        "formulations::slimcaching::validate::MAX_TOTAL_EXPERTS",
    )?;
    listed(
        "users",
        "user",
        instance.users.len(),
        MAX_USERS,
        "formulations::slimcaching::validate::MAX_USERS",
    )?;
    let catalogue = ExpertCatalogue::new(&instance.models);
    for u in 0..instance.users.len() {
        validate_user(instance, &catalogue, u)?;
    }
    Ok(())
}

fn validate_backhaul(instance: &Instance) -> Check {
    let n = instance.servers.len();
    let b = &instance.backhaul;
    if b.edge_to_edge.len() != n {
        return fail(
            "backhaul.edge_to_edge",
            format!("has {} rows for {n} servers", b.edge_to_edge.len()),
        );
    }
    for (i, row) in b.edge_to_edge.iter().enumerate() {
        if row.len() != n {
            return fail(
                format!("backhaul.edge_to_edge[{i}]"),
                format!("has {} entries for {n} servers", row.len()),
            );
        }
        for (j, l) in row.iter().enumerate() {
            let field = format!("backhaul.edge_to_edge[{i}][{j}]");
            match (i == j, l) {
                (true, None) => {}
                (true, Some(_)) => return fail(field, "the diagonal must be null"),
                (false, None) => return fail(field, "missing link between distinct servers"),
                (false, Some(l)) => link(&field, l)?,
            }
        }
    }
    for (name, links) in [
        ("edge_to_cloud", &b.edge_to_cloud),
        ("cloud_to_edge", &b.cloud_to_edge),
    ] {
        if links.len() != n {
            return fail(
                format!("backhaul.{name}"),
                format!("has {} links for {n} servers", links.len()),
            );
        }
        for (i, l) in links.iter().enumerate() {
            link(&format!("backhaul.{name}[{i}]"), l)?;
        }
    }
    if b.symmetric {
        for i in 0..n {
            for j in 0..n {
                if let (Some(a), Some(c)) = (&b.edge_to_edge[i][j], &b.edge_to_edge[j][i]) {
                    if !same_link(a, c) {
                        return fail(
                            format!("backhaul.edge_to_edge[{i}][{j}]"),
                            format!("differs from edge_to_edge[{j}][{i}] but links are declared symmetric"),
                        );
                    }
                }
            }
            if !same_link(&b.edge_to_cloud[i], &b.cloud_to_edge[i]) {
                return fail(
                    format!("backhaul.edge_to_cloud[{i}]"),
                    format!("differs from cloud_to_edge[{i}] but links are declared symmetric"),
                );
            }
        }
    }
    Ok(())
}

fn validate_user(instance: &Instance, catalogue: &ExpertCatalogue, u: usize) -> Check {
    let user = &instance.users[u];
    let n = instance.servers.len();
    let f = |name: &str| format!("users[{u}].{name}");
    positive(&f("compute_flops"), user.compute_flops)?;
    if let Some(s) = user.associated_server {
        if s.index() >= n {
            return fail(
                f("associated_server"),
                format!("server {s} does not exist ({n} servers)"),
            );
        }
    }
    for (name, links) in [("uplink", &user.uplink), ("downlink", &user.downlink)] {
        if links.len() != n {
            return fail(
                f(name),
                format!("has {} links for {n} servers", links.len()),
            );
        }
        for (i, l) in links.iter().enumerate() {
            link(&f(&format!("{name}[{i}]")), l)?;
        }
    }
    let mut local = HashSet::new();
    for (i, r) in user.local_experts.iter().enumerate() {
        if catalogue.id(*r).is_none() {
            return fail(
                f(&format!("local_experts[{i}]")),
                format!("expert {r} does not exist"),
            );
        }
        if !local.insert(*r) {
            return fail(
                f(&format!("local_experts[{i}]")),
                format!("expert {r} is listed twice"),
            );
        }
    }
    let mut requested = HashSet::new();
    let mut sum = 0.0;
    for (i, r) in user.requests.iter().enumerate() {
        let field = f(&format!("requests[{i}]"));
        if r.model.index() >= instance.models.len() {
            return fail(
                format!("{field}.model"),
                format!("model {} does not exist", r.model),
            );
        }
        probability(&format!("{field}.p"), r.p)?;
        if !requested.insert(r.model) {
            return fail(
                format!("{field}.model"),
                format!("model {} is requested twice", r.model),
            );
        }
        sum += r.p;
    }
    sums_to_one(&f("requests"), sum)?;
    let mut seen = HashSet::new();
    for (i, act) in user.activations.iter().enumerate() {
        let field = f(&format!("activations[{i}]"));
        let Some(model) = instance.models.get(act.model.index()) else {
            return fail(
                format!("{field}.model"),
                format!("model {} does not exist", act.model),
            );
        };
        if !requested.contains(&act.model) {
            return fail(
                format!("{field}.model"),
                format!("model {} has activations but is not in requests", act.model),
            );
        }
        if act.layer.0 >= model.layers {
            return fail(
                format!("{field}.layer"),
                format!(
                    "layer {} does not exist (model {} has {} MoE layers)",
                    act.layer, act.model, model.layers
                ),
            );
        }
        if !seen.insert((act.model, act.layer)) {
            return fail(
                field,
                format!(
                    "model {} layer {} has a second distribution",
                    act.model, act.layer
                ),
            );
        }
        let mut sets = HashSet::new();
        let mut total = 0.0;
        for (j, set) in act.sets.iter().enumerate() {
            let sf = format!("{field}.sets[{j}]");
            if set.experts.len() != model.top_k as usize {
                return fail(
                    format!("{sf}.experts"),
                    format!(
                        "has {} experts but model {} is Top-{}",
                        set.experts.len(),
                        act.model,
                        model.top_k
                    ),
                );
            }
            let mut sorted = set.experts.clone();
            sorted.sort_unstable();
            if let Some(&e) = sorted.iter().find(|&&e| e >= model.experts_per_layer) {
                return fail(
                    format!("{sf}.experts"),
                    format!(
                        "expert {e} is out of range (layer has {} experts)",
                        model.experts_per_layer
                    ),
                );
            }
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                return fail(format!("{sf}.experts"), "an expert appears twice");
            }
            probability(&format!("{sf}.p"), set.p)?;
            if !sets.insert(sorted) {
                return fail(format!("{sf}.experts"), "the same set is listed twice");
            }
            total += set.p;
        }
        sums_to_one(&format!("{field}.sets"), total)?;
    }
    for r in &user.requests {
        if r.p > 0.0 {
            let model = &instance.models[r.model.index()];
            for l in 0..model.layers {
                if !seen.contains(&(r.model, super::model::LayerId(l))) {
                    return fail(
                        f("activations"),
                        format!(
                            "model {} is requested (p = {}) but layer {l} has no distribution",
                            r.model, r.p
                        ),
                    );
                }
            }
        }
    }
    Ok(())
}
