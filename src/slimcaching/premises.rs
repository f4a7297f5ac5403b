//! SlimCaching's premises (paper 000; see [`crate::tier`]): the model of Sec. III and the
//! evaluation of Sec. VI-A, as predicates on an instance.
//!
//! Model premises (breaking one makes an instance `extension`), over the (model, associated
//! server) pairs of requests with p > 0, with the evaluator's own route costs
//! ([`LatencyModel::costs`]) and a relative tolerance of 1e-9:
//!
//! - `homogeneous-edge-compute`: one compute speed for every edge server. Implied by the
//!   notation: one T^CP_{E,m} serves n_u in eq. (9) and every n' in eq. (7), and eq. (8) and
//!   App. A rank remote servers by transmission times alone.
//! - `cloud-much-slower`: a whole round trip to another edge server, its compute included, takes
//!   no longer than the cloud's return leg alone. moe-opt's reading of "much longer" (Sec.
//!   III-C): with the model's fixed routing order (the cloud only when no edge server holds the
//!   expert), caching a cloud-served expert of a K_m >= 2 demand on a remote server while
//!   another expert still needs the cloud changes the latency by at most that round trip minus
//!   the return leg, so Prop. 2's monotonicity ("follows the same reasoning as the case K_m =
//!   1") needs exactly this.
//! - `communication-bottleneck`: the associated server's compute takes no longer than any
//!   single hidden-state transfer into it (from the cloud or another edge server) that caching
//!   there replaces (Sec. III-C: communication is the bottleneck).
//! - `association-rule`: a user's given server minimises 1/R_UL + 1/R_DL (eq. under (4)).
//! - `link-forms`: radio and edge-edge links are rate-only (eq. (5)); cloud links rate-only
//!   (Sec. III-C) or latency-only (Sec. VI-A's 0.01 s), not both.
//!
//! Regime premises (breaking one makes a model instance `model`), Sec. VI-A and the figures'
//! sweeps; where the paper gives one value, moe-opt's band is a factor 2 around it:
//! `servers-count` 1..=10, `users-count` 1..=50, `storage` 1.25-7.5 GB per server,
//! `paper-library` (every model one of the 7 named architectures: K, L and E exact, bytes and
//! FLOPs within a factor 2 of [`PAPER_ARCHITECTURES`]), `compute` (edge, cloud, users within a
//! factor 2 of 82.58 / 312 / 50 TFLOP/s), `cloud-link` (each hidden-state transfer to or from
//! the cloud 5-20 ms: 0.01 s each way, or a round trip), `edge-edge-rates` and `radio-rates`
//! (eq. (3) at Sec. VI-A's powers, bandwidths within a factor 2 of 100 MHz and 5 MHz, distances
//! 1 m to the 1 km cell's diagonal) and `symmetric-backhaul` (one edge bandwidth and one cloud
//! latency make every evaluated network symmetric; the model allows asymmetry).
//!
//! Claim-specific premises (Top-1 for Prop. 1, Prop. 6's symmetric links and negligible
//! compute) are not tiers: the claims' checks make such instances inconclusive.

use formulations::slimcaching::evaluate::associated_server;
use formulations::slimcaching::validate::validate;
use formulations::slimcaching::{Instance, LatencyModel, Link};
use formulations::slimcaching::{ModelId, ServerId, UserId};

use super::architectures::PAPER_ARCHITECTURES;
use super::network::{rate_bps, ComputeConfig, WirelessConfig};
use crate::tier::{Level, Premise};

/// `a <= b` within the relative tolerance 1e-9.
fn le(a: f64, b: f64) -> bool {
    a <= b + 1e-9 * a.abs().max(b.abs())
}

/// `x` within a factor 2 of `r`.
fn band(x: f64, r: f64) -> bool {
    (r / 2.0..=2.0 * r).contains(&x)
}

/// The evaluator and the (model, associated server) pairs of the requests with p > 0.
fn pairs(instance: &Instance) -> Result<(LatencyModel, Vec<(ModelId, ServerId)>), String> {
    validate(instance).map_err(|e| format!("invalid instance: {e}"))?;
    let mut pairs: Vec<(ModelId, ServerId)> = Vec::new();
    for (u, user) in instance.users.iter().enumerate() {
        let n = associated_server(instance, UserId(u as u32));
        for r in user.requests.iter().filter(|r| r.p > 0.0) {
            if !pairs.contains(&(r.model, n)) {
                pairs.push((r.model, n));
            }
        }
    }
    Ok((LatencyModel::new(instance), pairs))
}

fn homogeneous_edge_compute(i: &Instance) -> Result<(), String> {
    let first = i.servers[0].compute_flops;
    match i
        .servers
        .iter()
        .position(|s| !(le(s.compute_flops, first) && le(first, s.compute_flops)))
    {
        Some(n) => Err(format!(
            "server {n} computes at {:.4e} FLOP/s, server 0 at {first:.4e}",
            i.servers[n].compute_flops
        )),
        None => Ok(()),
    }
}

fn cloud_much_slower(i: &Instance) -> Result<(), String> {
    let (lm, pairs) = pairs(i)?;
    for (m, nu) in pairs {
        let c = lm.costs(m, nu);
        for n2 in (0..i.servers.len()).filter(|&n2| n2 != nu.index()) {
            let round_trip = c.edge_visit[n2] + c.edge_return[n2];
            if !le(round_trip, c.cloud_return) {
                return Err(format!(
                    "model {} at server {}: round trip to server {n2} {round_trip:.4e} s > the \
                     cloud's return {:.4e} s",
                    m.index(),
                    nu.index(),
                    c.cloud_return
                ));
            }
        }
    }
    Ok(())
}

fn communication_bottleneck(i: &Instance) -> Result<(), String> {
    let (lm, pairs) = pairs(i)?;
    for (m, nu) in pairs {
        let c = lm.costs(m, nu);
        let transfers = (0..i.servers.len())
            .filter(|&n2| n2 != nu.index())
            .map(|n2| (format!("server {n2}"), c.edge_return[n2]))
            .chain([("the cloud".to_string(), c.cloud_return)]);
        for (from, t) in transfers {
            if !le(c.associated_compute, t) {
                return Err(format!(
                    "model {} at server {}: compute {:.4e} s > the transfer from {from} {t:.4e} s",
                    m.index(),
                    nu.index(),
                    c.associated_compute
                ));
            }
        }
    }
    Ok(())
}

fn association_rule(i: &Instance) -> Result<(), String> {
    let bit = |u: usize, n: usize| {
        let rate = |l: &Link| l.rate_bps.map_or(f64::INFINITY, |r| 1.0 / r);
        rate(&i.users[u].uplink[n]) + rate(&i.users[u].downlink[n])
    };
    for (u, user) in i.users.iter().enumerate() {
        if let Some(n) = user.associated_server {
            let best = (0..i.servers.len())
                .map(|k| bit(u, k))
                .fold(f64::INFINITY, f64::min);
            if !le(bit(u, n.index()), best) {
                return Err(format!(
                    "user {u} is given server {} but another is nearer",
                    n.index()
                ));
            }
        }
    }
    Ok(())
}

fn link_forms(i: &Instance) -> Result<(), String> {
    let rate_only = |l: &Link| l.latency_s == 0.0 && l.rate_bps.is_some();
    for (u, user) in i.users.iter().enumerate() {
        if !user.uplink.iter().chain(&user.downlink).all(rate_only) {
            return Err(format!(
                "user {u}: a radio link has a latency or no rate (eq. (5))"
            ));
        }
    }
    let b = &i.backhaul;
    if !b.edge_to_edge.iter().flatten().flatten().all(rate_only) {
        return Err("an edge-edge link has a latency or no rate (eq. (5))".into());
    }
    if b.edge_to_cloud
        .iter()
        .chain(&b.cloud_to_edge)
        .any(|l| l.latency_s > 0.0 && l.rate_bps.is_some())
    {
        return Err("a cloud link has both a latency and a rate".into());
    }
    Ok(())
}

fn in_range(what: &str, x: usize, lo: usize, hi: usize) -> Result<(), String> {
    if (lo..=hi).contains(&x) {
        Ok(())
    } else {
        Err(format!("{x} {what}, outside {lo}..={hi}"))
    }
}

fn servers_count(i: &Instance) -> Result<(), String> {
    in_range("servers", i.servers.len(), 1, 10)
}

fn users_count(i: &Instance) -> Result<(), String> {
    in_range("users", i.users.len(), 1, 50)
}

fn storage(i: &Instance) -> Result<(), String> {
    match i
        .servers
        .iter()
        .position(|s| !(1.25e9..=7.5e9).contains(&(s.storage_bytes as f64)))
    {
        Some(n) => Err(format!(
            "server {n} stores {} bytes, outside 1.25-7.5 GB",
            i.servers[n].storage_bytes
        )),
        None => Ok(()),
    }
}

fn paper_library(i: &Instance) -> Result<(), String> {
    for m in &i.models {
        let known = PAPER_ARCHITECTURES.iter().any(|a| {
            let r = a.to_model(String::new());
            (m.top_k, m.layers, m.experts_per_layer) == (a.top_k, a.layers, a.experts_per_layer)
                && band(m.expert_bytes as f64, r.expert_bytes as f64)
                && band(m.hidden_bytes as f64, r.hidden_bytes as f64)
                && band(m.expert_flops, r.expert_flops)
        });
        if !known {
            return Err(format!(
                "model '{}' is none of the paper's 7 architectures",
                m.name
            ));
        }
    }
    Ok(())
}

fn compute(i: &Instance) -> Result<(), String> {
    let c = ComputeConfig::paper();
    let speeds = i
        .servers
        .iter()
        .map(|s| ("an edge server", s.compute_flops, c.edge_flops))
        .chain([("the cloud", i.cloud.compute_flops, c.cloud_flops)])
        .chain(
            i.users
                .iter()
                .map(|u| ("a user", u.compute_flops, c.user_flops)),
        );
    for (who, x, r) in speeds {
        if !band(x, r) {
            return Err(format!(
                "{who} computes at {x:.3e} FLOP/s, not within a factor 2 of {r:.3e}"
            ));
        }
    }
    Ok(())
}

fn cloud_link(i: &Instance) -> Result<(), String> {
    let b = &i.backhaul;
    for m in &i.models {
        for l in b.edge_to_cloud.iter().chain(&b.cloud_to_edge) {
            let t = l.transfer_time(m.hidden_bytes);
            if !(0.005..=0.02).contains(&t) {
                return Err(format!(
                    "a cloud transfer of model '{}' takes {t:.4e} s, outside 5-20 ms",
                    m.name
                ));
            }
        }
    }
    Ok(())
}

/// The rates eq. (3) gives at `power_w` for bandwidths within a factor 2 of `bandwidth_hz` and
/// distances from 1 m to the cell's diagonal.
fn rate_envelope(bandwidth_hz: f64, power_w: f64) -> (f64, f64) {
    let w = WirelessConfig::paper();
    let far = w.area_side_m * std::f64::consts::SQRT_2;
    (
        rate_bps(bandwidth_hz / 2.0, power_w, far, &w),
        rate_bps(2.0 * bandwidth_hz, power_w, w.min_distance_m, &w),
    )
}

fn rates_within(
    what: &str,
    links: impl Iterator<Item = Link>,
    (lo, hi): (f64, f64),
) -> Result<(), String> {
    for l in links {
        let r = l.rate_bps.unwrap_or(f64::INFINITY);
        if !(lo..=hi).contains(&r) {
            return Err(format!(
                "{what} rate {r:.4e} bit/s, outside eq. (3)'s {lo:.4e}-{hi:.4e}"
            ));
        }
    }
    Ok(())
}

fn edge_edge_rates(i: &Instance) -> Result<(), String> {
    let w = WirelessConfig::paper();
    let links = i.backhaul.edge_to_edge.iter().flatten().flatten().copied();
    rates_within(
        "an edge-edge",
        links,
        rate_envelope(w.edge_bandwidth_hz, w.server_power_w),
    )
}

fn radio_rates(i: &Instance) -> Result<(), String> {
    let w = WirelessConfig::paper();
    let up = i.users.iter().flat_map(|u| u.uplink.iter().copied());
    rates_within(
        "an uplink",
        up,
        rate_envelope(w.user_bandwidth_hz, w.user_power_w),
    )?;
    let down = i.users.iter().flat_map(|u| u.downlink.iter().copied());
    rates_within(
        "a downlink",
        down,
        rate_envelope(w.user_bandwidth_hz, w.server_power_w),
    )
}

fn symmetric_backhaul(i: &Instance) -> Result<(), String> {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
    let b = &i.backhaul;
    for m in &i.models {
        let d = m.hidden_bytes;
        for n in 0..i.servers.len() {
            if !close(
                b.edge_to_cloud[n].transfer_time(d),
                b.cloud_to_edge[n].transfer_time(d),
            ) {
                return Err(format!("server {n}'s cloud links differ by direction"));
            }
            for n2 in 0..i.servers.len() {
                let t = |a: usize, z: usize| b.edge_to_edge[a][z].map(|l| l.transfer_time(d));
                let same = match (t(n, n2), t(n2, n)) {
                    (Some(x), Some(y)) => close(x, y),
                    (x, y) => x.is_none() && y.is_none(),
                };
                if !same {
                    return Err(format!("links {n} -> {n2} and {n2} -> {n} differ"));
                }
            }
        }
    }
    Ok(())
}

/// Every premise, model premises first (module doc).
pub fn premises() -> Vec<Premise<Instance>> {
    type Holds = fn(&Instance) -> Result<(), String>;
    let model = |name, place, quote, holds: Holds| {
        Premise::new(name, Level::Model, place, quote, &[], holds)
    };
    let regime = |name, place, quote, holds: Holds| {
        Premise::new(name, Level::Regime, place, quote, &[], holds)
    };
    vec![
        model(
            "homogeneous-edge-compute",
            "Sec. III-C, eqs. (7), (9) (implied by the notation: no server index)",
            "Let $\\phi_{E,m}$ and $\\phi_{C,m}$ denote the allocated computing capability for each expert of model $m$ at the edge server and at the cloud, respectively.",
            homogeneous_edge_compute,
        ),
        model(
            "cloud-much-slower",
            "Sec. III-C (moe-opt's reading of \"much longer\": an edge round trip within the cloud's return leg)",
            "the delay of token routing to the cloud is much longer than that to edge networks",
            cloud_much_slower,
        ),
        model(
            "communication-bottleneck",
            "Sec. III-C",
            "the bottleneck of MoE inference in distributed wireless networks is the communication overhead of inter-nodes",
            communication_bottleneck,
        ),
        model(
            "association-rule",
            "Sec. III-B, under eq. (4)",
            "each user is associated with the edge server that minimizes the sum of uplink and downlink transmission latency for transmitting one bit",
            association_rule,
        ),
        model(
            "link-forms",
            "Sec. III-B eq. (5); Sec. VI-A",
            "The latency between edge servers and cloud is 0.01 s",
            link_forms,
        ),
        regime("servers-count", "Sec. VI-A, Figs. 1 and 10 (1 to 10 servers)", "at 10 edge servers", servers_count),
        regime("users-count", "Sec. VI-A, Fig. 8(b) (1 to 50 users)", "from 10 to 50", users_count),
        regime("storage", "Fig. 9(a)", "from 1.25 GB to 7.5 GB", storage),
        regime(
            "paper-library",
            "Sec. VI-A (the 7 named architectures; shapes from their public configs, bytes and FLOPs within a factor 2: moe-opt's band)",
            "a total of nearly 4,000 experts",
            paper_library,
        ),
        regime(
            "compute",
            "Sec. VI-A (within a factor 2 of the stated speeds: moe-opt's band)",
            "The computing capabilities of edge devices, edge servers, and the cloud are 50 TFLOPs, 82.58 TFLOPs, and 312 TFLOPs, respectively.",
            compute,
        ),
        regime(
            "cloud-link",
            "Sec. VI-A (0.01 s each way, or a round trip: 5-20 ms per transfer, moe-opt's reading)",
            "The latency between edge servers and cloud is 0.01 s",
            cloud_link,
        ),
        regime(
            "edge-edge-rates",
            "Sec. VI-A, eq. (3) at 38 dBm, 50-200 MHz (a factor 2 around 100 MHz: moe-opt's band), 1 m to the cell's diagonal",
            "distributed in a cell of size 1 km",
            edge_edge_rates,
        ),
        regime(
            "radio-rates",
            "Sec. VI-A, eqs. (3)-(4) at 0.01 W up and 38 dBm down, 2.5-10 MHz (moe-opt's band around 5 MHz), 1 m to the cell's diagonal",
            "distributed in a cell of size 1 km",
            radio_rates,
        ),
        regime(
            "symmetric-backhaul",
            "Sec. VI-A (one edge bandwidth, one cloud latency)",
            "The latency between edge servers and cloud is 0.01 s",
            symmetric_backhaul,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slimcaching::generate::{generate, GeneratorConfig, Preset};
    use crate::tier::{classify, Tier};

    fn instance(preset: Preset, seed: u64) -> Instance {
        generate(&GeneratorConfig::preset(preset), seed)
    }

    #[test]
    fn the_paper_preset_is_in_the_regime_and_tiny_in_the_model() {
        let paper = classify(
            &premises(),
            "slimcaching/prop3-greedy-ratio",
            &instance(Preset::Paper, 0),
        );
        assert_eq!(paper.tier, Tier::Regime, "{:?}", paper.broken);
        let tiny = classify(
            &premises(),
            "slimcaching/prop3-greedy-ratio",
            &instance(Preset::Tiny, 0),
        );
        assert_eq!(tiny.tier, Tier::Model, "{:?}", tiny.broken);
        assert!(tiny.broken.iter().any(|b| b.starts_with("storage:")));
    }

    #[test]
    fn each_model_premise_just_inside_and_just_outside() {
        let base = instance(Preset::Tiny, 1);
        assert!(base.servers.len() >= 2, "a tiny seed with two servers");
        let tier = |i: &Instance| classify(&premises(), "slimcaching/prop1-submodular", i);
        // Edge compute: equal speeds inside; 1 % apart outside.
        let mut i = base.clone();
        i.servers[1].compute_flops = i.servers[0].compute_flops * 1.01;
        assert_eq!(tier(&i).tier, Tier::Extension);
        assert!(tier(&i).broken[0].starts_with("homogeneous-edge-compute"));
        // The cloud's return leg: a cloud latency just above the longest edge round trip is
        // inside, just below it outside (by hand: the round trip of the evaluator's costs).
        let lm = LatencyModel::new(&base);
        let (_, ps) = pairs(&base).unwrap();
        let longest = ps
            .iter()
            .flat_map(|&(m, nu)| {
                let c = lm.costs(m, nu).clone();
                (0..base.servers.len())
                    .filter(move |&n2| n2 != nu.index())
                    .map(move |n2| c.edge_visit[n2] + c.edge_return[n2])
            })
            .fold(0.0, f64::max);
        assert!(longest > 0.0);
        for (latency, inside) in [(longest * 1.001, true), (longest * 0.999, false)] {
            let mut i = base.clone();
            for l in i
                .backhaul
                .cloud_to_edge
                .iter_mut()
                .chain(i.backhaul.edge_to_cloud.iter_mut())
            {
                *l = Link {
                    latency_s: latency,
                    rate_bps: None,
                };
            }
            let broken = tier(&i).broken;
            assert_eq!(
                !broken.iter().any(|b| b.starts_with("cloud-much-slower")),
                inside,
                "{latency}: {broken:?}"
            );
        }
        // Communication as the bottleneck: an edge CPU 1e6 times slower breaks it.
        let mut i = base.clone();
        for s in &mut i.servers {
            s.compute_flops /= 1e6;
        }
        assert!(tier(&i)
            .broken
            .iter()
            .any(|b| b.starts_with("communication-bottleneck")));
    }
}
