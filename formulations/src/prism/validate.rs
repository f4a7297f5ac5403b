//! Validation of a Prism instance and of a placement. Every rule names the field it checks.
//!
//! Instance rules: `problem` is `prism`; L, E >= 1 and 1 <= K <= E; one positive expert size per
//! layer and a positive hidden-state size; at least one server, each with at least one GPU of
//! positive memory and finite, non-negative compute coefficients (and a positive `io_bps` when
//! given); f_n^l(e) finite, in [0, 1 + tol] and each row summing to K within
//! [`FREQUENCY_TOLERANCE`]; the network matrices N x N with a zero diagonal, finite non-negative
//! latencies and positive finite bandwidths off the diagonal; the workload with one positive
//! finite arrival rate per server and at least one token per request; the simulator's expert
//! selections, requests_per_server x servers x L x K, at most [`MAX_SIMULATED_SELECTIONS`].
//!
//! Placement rules ([`validate_placement`]): one list per server and GPU, every expert within
//! 0..L x 0..E, no expert twice on one GPU. Coverage and memory are not validity rules: a
//! placement breaking them is still evaluated, and the evaluator reports it infeasible.

use std::collections::HashSet;

use super::model::{Instance, Placement};
use crate::error::{fail, non_negative, positive, Check};
use crate::problem::ProblemKind;

/// Allowed absolute deviation of a frequency row's sum from K, and of an entry above 1.
pub const FREQUENCY_TOLERANCE: f64 = 1e-6;
/// Most expert selections the workload simulator draws, requests_per_server x servers x L x
/// K: each request stores its K experts of every layer (256 MB at the limit; the testbed
/// presets draw about 40,000).
pub const MAX_SIMULATED_SELECTIONS: u64 = 1 << 26;

/// Most GPU memory of all servers together (1 EiB): every sum of memories fits in u64.
pub const MAX_TOTAL_MEMORY_BYTES: u64 = 1 << 60;

/// Most bytes of an expert or a hidden state (64 GiB; real experts are under 1 GiB): memories,
/// experts times bytes and tokens times bytes stay far inside u64.
pub const MAX_BYTES: u64 = 1 << 36;

fn square(field: &str, m: &[Vec<f64>], n: usize) -> Check {
    if m.len() != n {
        return fail(
            field,
            format!("has {} rows, expected {n} (one per server)", m.len()),
        );
    }
    for (i, row) in m.iter().enumerate() {
        if row.len() != n {
            return fail(
                format!("{field}[{i}]"),
                format!("has {} entries, expected {n} (one per server)", row.len()),
            );
        }
        if row[i] != 0.0 {
            return fail(
                format!("{field}[{i}][{i}]"),
                format!("the diagonal must be 0, got {}", row[i]),
            );
        }
    }
    Ok(())
}

/// Checks every instance rule; the first violation is returned.
pub fn validate(instance: &Instance) -> Check {
    if instance.problem != ProblemKind::Prism {
        return fail(
            "problem",
            format!("must be \"prism\", got \"{}\"", instance.problem.name()),
        );
    }
    let m = &instance.model;
    if m.layers == 0 {
        return fail("model.layers", "must be >= 1");
    }
    if m.experts_per_layer == 0 {
        return fail("model.experts_per_layer", "must be >= 1");
    }
    if m.top_k == 0 || m.top_k > m.experts_per_layer {
        return fail(
            "model.top_k",
            format!(
                "must be in 1..={} (experts_per_layer), got {}",
                m.experts_per_layer, m.top_k
            ),
        );
    }
    if m.expert_bytes.len() != m.layers as usize {
        return fail(
            "model.expert_bytes",
            format!(
                "has {} entries, expected {} (one per layer)",
                m.expert_bytes.len(),
                m.layers
            ),
        );
    }
    let bytes = m.expert_bytes.iter().enumerate();
    for (field, b) in bytes
        .map(|(l, &b)| (format!("model.expert_bytes[{l}]"), b))
        .chain([("model.hidden_bytes".to_string(), m.hidden_bytes)])
    {
        if b == 0 {
            return fail(field, "must be > 0");
        }
        crate::error::at_most(
            field,
            "bytes",
            b,
            MAX_BYTES,
            "formulations::prism::validate::MAX_BYTES",
        )?;
    }
    if instance.servers.is_empty() {
        return fail("servers", "needs at least one server");
    }
    // Saturating: a saturated sum is above the limit, as the true one is.
    let memory = instance
        .servers
        .iter()
        .flat_map(|s| &s.gpus)
        .fold(0u64, |t, g| t.saturating_add(g.memory_bytes));
    crate::error::at_most(
        "servers",
        "bytes of GPU memory in all",
        memory,
        MAX_TOTAL_MEMORY_BYTES,
        "formulations::prism::validate::MAX_TOTAL_MEMORY_BYTES",
    )?;
    let (layers, experts, k) = (instance.layers(), instance.experts_per_layer(), m.top_k);
    for (n, s) in instance.servers.iter().enumerate() {
        let at = format!("servers[{n}]");
        if s.gpus.is_empty() {
            return fail(format!("{at}.gpus"), "needs at least one GPU");
        }
        for (g, gpu) in s.gpus.iter().enumerate() {
            let at = format!("{at}.gpus[{g}]");
            if gpu.memory_bytes == 0 {
                return fail(format!("{at}.memory_bytes"), "must be > 0");
            }
            non_negative(&format!("{at}.compute_base_s"), gpu.compute_base_s)?;
            non_negative(
                &format!("{at}.compute_per_token_s"),
                gpu.compute_per_token_s,
            )?;
            if let Some(io) = gpu.io_bps {
                positive(&format!("{at}.io_bps"), io)?;
            }
        }
        if s.frequencies.len() != layers {
            return fail(
                format!("{at}.frequencies"),
                format!(
                    "has {} rows, expected {layers} (one per layer)",
                    s.frequencies.len()
                ),
            );
        }
        for (l, row) in s.frequencies.iter().enumerate() {
            let at = format!("{at}.frequencies[{l}]");
            if row.len() != experts {
                return fail(
                    &at,
                    format!("has {} entries, expected {experts} (E)", row.len()),
                );
            }
            for (e, &f) in row.iter().enumerate() {
                if !(0.0..=1.0 + FREQUENCY_TOLERANCE).contains(&f) {
                    return fail(
                        format!("{at}[{e}]"),
                        format!(
                            "must lie in [0, 1] (expected activations of one expert per token), got {f}"
                        ),
                    );
                }
            }
            let sum: f64 = row.iter().sum();
            if (sum - f64::from(k)).abs() > FREQUENCY_TOLERANCE {
                return fail(
                    &at,
                    format!(
                        "sums to {sum}, expected top_k = {k} (expected activations per token; tolerance {FREQUENCY_TOLERANCE})"
                    ),
                );
            }
        }
    }
    let n = instance.servers.len();
    if let Some(net) = &instance.network {
        square("network.latency_s", &net.latency_s, n)?;
        square("network.bandwidth_bps", &net.bandwidth_bps, n)?;
        for a in 0..n {
            for b in (0..n).filter(|&b| b != a) {
                non_negative(&format!("network.latency_s[{a}][{b}]"), net.latency_s[a][b])?;
                positive(
                    &format!("network.bandwidth_bps[{a}][{b}]"),
                    net.bandwidth_bps[a][b],
                )?;
            }
        }
    }
    if let Some(w) = &instance.workload {
        if w.arrival_rate_per_s.len() != n {
            return fail(
                "workload.arrival_rate_per_s",
                format!(
                    "has {} entries, expected {n} (one per server)",
                    w.arrival_rate_per_s.len()
                ),
            );
        }
        for (i, &r) in w.arrival_rate_per_s.iter().enumerate() {
            positive(&format!("workload.arrival_rate_per_s[{i}]"), r)?;
        }
        if w.tokens_per_request == 0 {
            return fail("workload.tokens_per_request", "must be >= 1");
        }
        simulated_selections(
            w.requests_per_server,
            n as u64,
            instance.model.layers.into(),
            instance.model.top_k.into(),
        )?;
    }
    Ok(())
}

/// Checks that a placement fits the instance's shape (servers, GPUs, expert ranges) and holds
/// no expert twice on one GPU; field paths start at `placement`.
pub fn validate_placement(instance: &Instance, placement: &Placement) -> Check {
    let n = instance.servers.len();
    if placement.gpus.len() != n {
        return fail(
            "placement.gpus",
            format!("has {} servers, the instance has {n}", placement.gpus.len()),
        );
    }
    let (layers, experts) = (instance.model.layers, instance.model.experts_per_layer);
    for (s, (lists, server)) in placement.gpus.iter().zip(&instance.servers).enumerate() {
        if lists.len() != server.gpus.len() {
            return fail(
                format!("placement.gpus[{s}]"),
                format!(
                    "has {} GPUs, server {s} has {}",
                    lists.len(),
                    server.gpus.len()
                ),
            );
        }
        for (g, list) in lists.iter().enumerate() {
            let mut seen = HashSet::with_capacity(list.len());
            for (i, r) in list.iter().enumerate() {
                let at = format!("placement.gpus[{s}][{g}][{i}]");
                if r.layer >= layers {
                    return fail(
                        format!("{at}.layer"),
                        format!("{} is out of range 0..{layers}", r.layer),
                    );
                }
                if r.expert >= experts {
                    return fail(
                        format!("{at}.expert"),
                        format!("{} is out of range 0..{experts}", r.expert),
                    );
                }
                if !seen.insert(*r) {
                    return fail(at, format!("expert {r} is listed twice on this GPU"));
                }
            }
        }
    }
    Ok(())
}

/// The workload's simulated expert selections, requests_per_server x servers x layers x top_k,
/// at most [`MAX_SIMULATED_SELECTIONS`] (the simulator allocates per selection). Saturating: a
/// saturated product is above the limit, as the true one is.
pub fn simulated_selections(
    requests_per_server: u32,
    servers: u64,
    layers: u64,
    top_k: u64,
) -> Check {
    let selections = [servers, layers, top_k]
        .into_iter()
        .fold(u64::from(requests_per_server), u64::saturating_mul);
    crate::error::at_most(
        "workload.requests_per_server",
        "expert selections (requests_per_server x servers x layers x top_k)",
        selections,
        MAX_SIMULATED_SELECTIONS,
        "formulations::prism::validate::MAX_SIMULATED_SELECTIONS",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prism::fixtures::{two_servers, two_servers_placement};
    use crate::prism::model::ExpertRef;

    /// Applies `edit` to the fixture and returns the failing field, or "" when valid.
    fn field_after(edit: impl FnOnce(&mut Instance)) -> String {
        let mut inst = two_servers();
        edit(&mut inst);
        validate(&inst).err().map(|e| e.field).unwrap_or_default()
    }

    #[test]
    fn the_fixture_is_valid() {
        assert_eq!(field_after(|_| {}), "");
        assert_eq!(
            validate_placement(&two_servers(), &two_servers_placement()),
            Ok(())
        );
    }

    #[test]
    fn simulated_selections_are_bounded() {
        // 2 servers x L = 2 x K = 1: 4 selections a request, so 2^24 requests reach 2^26.
        let set =
            |n: u32| move |i: &mut Instance| i.workload.as_mut().unwrap().requests_per_server = n;
        assert_eq!(field_after(set(1 << 24)), "");
        assert_eq!(
            field_after(set((1 << 24) + 1)),
            "workload.requests_per_server"
        );
        let mut inst = two_servers();
        set(u32::MAX)(&mut inst);
        let reason = validate(&inst).unwrap_err().reason;
        assert!(
            reason.starts_with("17179869180 expert selections") && reason.contains("67108864"),
            "{reason}"
        );
    }

    #[test]
    fn every_instance_rule_names_its_field() {
        type Edit = fn(&mut Instance);
        let cases: Vec<(Edit, &str)> = vec![
            (|i| i.problem = ProblemKind::Zipmoe, "problem"),
            (|i| i.model.layers = 0, "model.layers"),
            (|i| i.model.experts_per_layer = 0, "model.experts_per_layer"),
            (|i| i.model.top_k = 0, "model.top_k"),
            (|i| i.model.top_k = 4, "model.top_k"),
            (
                |i| i.model.expert_bytes.pop().map_or((), drop),
                "model.expert_bytes",
            ),
            (|i| i.model.expert_bytes[1] = 0, "model.expert_bytes[1]"),
            (|i| i.model.hidden_bytes = 0, "model.hidden_bytes"),
            (|i| i.servers.clear(), "servers"),
            (|i| i.servers[1].gpus.clear(), "servers[1].gpus"),
            (
                |i| i.servers[1].gpus[1].memory_bytes = 0,
                "servers[1].gpus[1].memory_bytes",
            ),
            (
                |i| i.servers[0].gpus[0].compute_base_s = -1.0,
                "servers[0].gpus[0].compute_base_s",
            ),
            (
                |i| i.servers[0].gpus[0].compute_per_token_s = f64::NAN,
                "servers[0].gpus[0].compute_per_token_s",
            ),
            (
                |i| i.servers[0].gpus[0].io_bps = Some(0.0),
                "servers[0].gpus[0].io_bps",
            ),
            (
                |i| i.servers[0].frequencies.pop().map_or((), drop),
                "servers[0].frequencies",
            ),
            (
                |i| i.servers[0].frequencies[1].push(0.0),
                "servers[0].frequencies[1]",
            ),
            // -0.1 and 1.1 keep the row sum at 1, so only the entry rule can fire.
            (
                |i| i.servers[1].frequencies[0] = vec![-0.1, 0.1, 1.0],
                "servers[1].frequencies[0][0]",
            ),
            (
                |i| {
                    i.model.top_k = 2;
                    for s in &mut i.servers {
                        s.frequencies = vec![vec![1.1, 0.6, 0.3]; 2];
                    }
                },
                "servers[0].frequencies[0][0]",
            ),
            // Row sums 1 + 2e-6: outside the 1e-6 tolerance.
            (
                |i| i.servers[1].frequencies[1] = vec![0.2, 0.2, 0.6 + 2e-6],
                "servers[1].frequencies[1]",
            ),
            (
                |i| i.network.as_mut().unwrap().latency_s.pop().map_or((), drop),
                "network.latency_s",
            ),
            (
                |i| i.network.as_mut().unwrap().latency_s[1].push(0.0),
                "network.latency_s[1]",
            ),
            (
                |i| i.network.as_mut().unwrap().latency_s[1][1] = 0.5,
                "network.latency_s[1][1]",
            ),
            (
                |i| i.network.as_mut().unwrap().bandwidth_bps[0][0] = 1.0,
                "network.bandwidth_bps[0][0]",
            ),
            (
                |i| i.network.as_mut().unwrap().latency_s[0][1] = -0.1,
                "network.latency_s[0][1]",
            ),
            (
                |i| i.network.as_mut().unwrap().bandwidth_bps[1][0] = 0.0,
                "network.bandwidth_bps[1][0]",
            ),
            (
                |i| i.workload.as_mut().unwrap().arrival_rate_per_s.push(1.0),
                "workload.arrival_rate_per_s",
            ),
            (
                |i| i.workload.as_mut().unwrap().arrival_rate_per_s[1] = 0.0,
                "workload.arrival_rate_per_s[1]",
            ),
            (
                |i| i.workload.as_mut().unwrap().tokens_per_request = 0,
                "workload.tokens_per_request",
            ),
        ];
        for (k, (edit, field)) in cases.into_iter().enumerate() {
            assert_eq!(field_after(edit), field, "case {k}");
        }
        // Within tolerance is accepted: a sum off by 5e-7.
        assert_eq!(field_after(|i| i.servers[1].frequencies[1][2] += 5e-7), "");
    }

    #[test]
    fn every_placement_rule_names_its_field() {
        let inst = two_servers();
        let x = |layer, expert| ExpertRef { layer, expert };
        type Edit = fn(&mut Placement, ExpertRef);
        let cases: Vec<(Edit, ExpertRef, &str)> = vec![
            (|p, _| p.gpus.truncate(1), x(0, 0), "placement.gpus"),
            (|p, _| p.gpus[1].truncate(1), x(0, 0), "placement.gpus[1]"),
            (
                |p, r| p.gpus[0][0].push(r),
                x(2, 0),
                "placement.gpus[0][0][3].layer",
            ),
            (
                |p, r| p.gpus[1][1].push(r),
                x(0, 3),
                "placement.gpus[1][1][2].expert",
            ),
            (
                |p, r| p.gpus[1][0].push(r),
                x(0, 1),
                "placement.gpus[1][0][2]",
            ),
        ];
        for (k, (edit, r, field)) in cases.into_iter().enumerate() {
            let mut p = two_servers_placement();
            edit(&mut p, r);
            let got = validate_placement(&inst, &p).err().map(|e| e.field);
            assert_eq!(got.as_deref(), Some(field), "case {k}");
        }
    }

    #[test]
    fn load_names_the_file_and_field() {
        let dir = std::env::temp_dir().join(format!("moe-opt-prism-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.json");
        let mut inst = two_servers();
        inst.model.hidden_bytes = 0;
        std::fs::write(&path, serde_json::to_string(&inst).unwrap()).unwrap();
        let e = crate::prism::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("bad.json") && e.contains("model.hidden_bytes"),
            "{e}"
        );
        let good = dir.join("good.json");
        std::fs::write(&good, serde_json::to_string(&two_servers()).unwrap()).unwrap();
        assert_eq!(crate::prism::load(&good).unwrap(), two_servers());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
