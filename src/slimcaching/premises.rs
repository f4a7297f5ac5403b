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
    use crate::tier::boundary::{assert_boundaries, Boundary};
    use crate::tier::{classify, Tier};

    /// A row of `each_premise_just_inside_and_just_outside`: a change of the paper preset (seed
    /// 0, `regime`) just inside the premise's limit and one just outside it.
    type Row = Boundary<Instance>;

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

    /// The paper preset regenerated with `n` servers (seed 0).
    fn paper_with_servers(n: u32) -> Instance {
        let mut config = GeneratorConfig::preset(Preset::Paper);
        config.servers = crate::generate::Between::exactly(n);
        generate(&config, 0)
    }

    /// Every edge<->cloud link latency-only at `latency_s`, both directions.
    fn cloud_latency(i: &mut Instance, latency_s: f64) {
        let b = &mut i.backhaul;
        for l in b.edge_to_cloud.iter_mut().chain(b.cloud_to_edge.iter_mut()) {
            *l = Link {
                latency_s,
                rate_bps: None,
            };
        }
    }

    /// Every edge-edge link at `rate` bit/s (so still symmetric).
    fn edge_rates(i: &mut Instance, rate: f64) {
        for l in i.backhaul.edge_to_edge.iter_mut().flatten().flatten() {
            l.rate_bps = Some(rate);
        }
    }

    /// User 0's links to every server the same as its links to server 0, and server 1 given
    /// to it: a tie for the server minimising 1/R_UL + 1/R_DL.
    fn user0_tied_on_server1(i: &mut Instance) {
        let u = &mut i.users[0];
        let (up, down) = (u.uplink[0], u.downlink[0]);
        u.uplink.iter_mut().for_each(|l| *l = up);
        u.downlink.iter_mut().for_each(|l| *l = down);
        u.associated_server = Some(ServerId(1));
    }

    /// A radio link's rate.
    fn set_rate(l: &mut Link, rate: f64) {
        l.rate_bps = Some(rate);
    }

    #[test]
    fn each_premise_just_inside_and_just_outside() {
        const E: f64 = 1e-6;
        // Paper preset, seed 0: N = 4 servers on the 2 x 2 grid of the 1 km cell (centres 500
        // m apart, 500 sqrt 2 = 707.1 m across), 20 users, 18 models of the 7 architectures (it
        // requests ST-b-32 and LLaMA-MoE-3.5B among others), every link as Sec. VI-A.
        let rows = [
            // --- Model premises (Sec. III) ---
            // One edge speed (eqs. (7), (9)); the code's relative tolerance 1e-9 on 82.58
            // TFLOP/s, just inside and outside it.
            Row::model(
                "homogeneous-edge-compute",
                |i| i.servers[1].compute_flops = 82.58e12 * (1.0 + 0.999e-9),
                |i| i.servers[1].compute_flops = 82.58e12 * (1.0 + 1.001e-9),
            ),
            // The cloud's return leg no shorter than the longest edge round trip with its
            // compute: LLaMA-MoE-3.5B (D = 8,192 B = 65,536 bit, 16 experts of 16,908,288
            // FLOP) across the grid's diagonal (707.1 m, eq. (3) at 100 MHz, 38 dBm: 600.889
            // Mbit/s): 2 x 65,536 / 600,889,307.15 + 16 x 16,908,288 / 82.58e12 = 2.21406e-4
            // s. A cloud latency so short leaves Sec. VI-A's 5-20 ms (`cloud-link`) too.
            Row::model(
                "cloud-much-slower",
                |i| cloud_latency(i, 2.214_060_320_733e-4),
                |i| cloud_latency(i, 2.214_060_320_733e-4 * (1.0 - E)),
            )
            .inside_is(Tier::Model, &["cloud-link"])
            .outside_is(Tier::Extension, &["cloud-link"]),
            // Compute at n_u no longer than any transfer into it: binding for ST-b-32 (32
            // experts of 2 x 2 x 768 x 3072 = 9,437,184 FLOP at 82.58 TFLOP/s: 3.65694e-6 s;
            // D = 1,536 B = 12,288 bit): every edge-edge link at 12,288 x 82.58e12 /
            // 301,989,888 = 3,360,188,802.08 bit/s (inside eq. (3)'s 157.9 Mbit/s-8.57 Gbit/s).
            Row::model(
                "communication-bottleneck",
                |i| edge_rates(i, 3_360_188_802.083),
                |i| edge_rates(i, 3_360_188_802.083 * (1.0 + E)),
            ),
            // The rule under eq. (4): user 0 given server 1, tied with server 0 for the least
            // 1/R_UL + 1/R_DL (the limit) inside; its uplink to server 1 slower by 1e-6 outside.
            Row::model("association-rule", user0_tied_on_server1, |i| {
                user0_tied_on_server1(i);
                let r = i.users[0].uplink[1].rate_bps.unwrap();
                set_rate(&mut i.users[0].uplink[1], r * (1.0 - E));
            }),
            // Eq. (5)'s rate-only radio link (latency exactly 0) inside; the least positive
            // latency outside.
            Row::model(
                "link-forms",
                |i| i.users[0].uplink[0].latency_s = 0.0,
                |i| i.users[0].uplink[0].latency_s = f64::MIN_POSITIVE,
            ),
            // The same on an edge-edge link (both directions, so still symmetric).
            Row::model(
                "link-forms",
                |i| i.backhaul.edge_to_edge[0][1].as_mut().unwrap().latency_s = 0.0,
                |i| {
                    for (a, b) in [(0, 1), (1, 0)] {
                        i.backhaul.edge_to_edge[a][b].as_mut().unwrap().latency_s =
                            f64::MIN_POSITIVE;
                    }
                },
            ),
            // Sec. VI-A's latency-only cloud link (0.01 s) inside; the same latency with a rate
            // (the largest, so the transfer time stays 0.01 s) outside, both directions.
            Row::model(
                "link-forms",
                |i| cloud_latency(i, 0.01),
                |i| {
                    let b = &mut i.backhaul;
                    for l in [&mut b.edge_to_cloud[0], &mut b.cloud_to_edge[0]] {
                        l.rate_bps = Some(f64::MAX);
                    }
                },
            ),
            // --- Regime premises (Sec. VI-A and the figures' sweeps) ---
            // Figs. 1, 8(a), 10(a): up to 10 edge servers.
            Row::regime(
                "servers-count",
                |i| *i = paper_with_servers(10),
                |i| *i = paper_with_servers(11),
            ),
            // The lower limit, 1 server; 0 servers is no valid instance.
            Row::inside_only("servers-count", |i| *i = paper_with_servers(1)),
            // Fig. 8(b): up to 50 users (copies of user 0).
            Row::regime(
                "users-count",
                |i| i.users.resize(50, i.users[0].clone()),
                |i| i.users.resize(51, i.users[0].clone()),
            ),
            // The lower limit, 1 user; 0 users is no valid instance.
            Row::inside_only("users-count", |i| i.users.truncate(1)),
            // Fig. 9(a): Q from 1.25 GB to 7.5 GB (bytes, 1 GB = 1e9 B).
            Row::regime(
                "storage",
                |i| i.servers[0].storage_bytes = 7_500_000_000,
                |i| i.servers[0].storage_bytes = 7_500_000_001,
            ),
            Row::regime(
                "storage",
                |i| i.servers[0].storage_bytes = 1_250_000_000,
                |i| i.servers[0].storage_bytes = 1_249_999_999,
            ),
            // Model 0 is ST-b-8, 2 x 768 x 3072 bf16 parameters = 9 MiB = 9,437,184 B; the
            // band is a factor 2: at most 18,874,368 B ...
            Row::regime(
                "paper-library",
                |i| i.models[0].expert_bytes = 18_874_368,
                |i| i.models[0].expert_bytes = 18_874_369,
            ),
            // ... and at least 4,718,592 B.
            Row::regime(
                "paper-library",
                |i| i.models[0].expert_bytes = 4_718_592,
                |i| i.models[0].expert_bytes = 4_718_591,
            ),
            // ST-b-8's shape is exact: E = 8 inside, 9 (no architecture) outside.
            Row::regime(
                "paper-library",
                |i| i.models[0].experts_per_layer = 8,
                |i| i.models[0].experts_per_layer = 9,
            ),
            // Sec. VI-A, a factor 2 around 82.58 TFLOP/s at the edge (all servers, so still
            // homogeneous): at most 165.16 TFLOP/s ...
            Row::regime(
                "compute",
                |i| {
                    i.servers
                        .iter_mut()
                        .for_each(|s| s.compute_flops = 165.16e12)
                },
                |i| {
                    i.servers
                        .iter_mut()
                        .for_each(|s| s.compute_flops = 165.16e12 * (1.0 + E))
                },
            ),
            // ... 312 TFLOP/s at the cloud: at least 156 TFLOP/s ...
            Row::regime(
                "compute",
                |i| i.cloud.compute_flops = 156e12,
                |i| i.cloud.compute_flops = 156e12 * (1.0 - E),
            ),
            // ... and 50 TFLOP/s at a user: at most 100 TFLOP/s.
            Row::regime(
                "compute",
                |i| i.users[0].compute_flops = 100e12,
                |i| i.users[0].compute_flops = 100e12 * (1.0 + E),
            ),
            // Sec. VI-A's 0.01 s cloud latency, each way or a round trip: at most 20 ms ...
            Row::regime(
                "cloud-link",
                |i| cloud_latency(i, 0.02),
                |i| cloud_latency(i, 0.02 * (1.0 + E)),
            ),
            // ... and at least 5 ms.
            Row::regime(
                "cloud-link",
                |i| cloud_latency(i, 0.005),
                |i| cloud_latency(i, 0.005 * (1.0 - E)),
            ),
            // Eq. (3) at 38 dBm (6.30957 W), N0 = -174 dBm/Hz, alpha = 4: the slowest edge-edge
            // link is 50 MHz (half of 100 MHz) across the cell's diagonal (1,414.2 m):
            // 157,888,292.0617 bit/s (rounded inward), on every edge-edge link.
            Row::regime(
                "edge-edge-rates",
                |i| edge_rates(i, 157_888_292.061_7),
                |i| edge_rates(i, 157_888_292.061_7 * (1.0 - E)),
            ),
            // The fastest, 200 MHz at 1 m: 8,569,890,170.5 bit/s (rounded inward). Faster than
            // the 3.36 Gbit/s `communication-bottleneck` allows ST-b-32 (its row above), so both
            // sides of this limit are outside the model.
            Row::regime(
                "edge-edge-rates",
                |i| edge_rates(i, 8_569_890_170.5),
                |i| edge_rates(i, 8_569_890_170.5 * (1.0 + E)),
            )
            .inside_is(Tier::Extension, &["communication-bottleneck"])
            .outside_is(Tier::Extension, &["communication-bottleneck"]),
            // Eq. (3) for the uplink, 0.01 W: 2.5 MHz (half of 5 MHz) at 1,414.2 m gives
            // 808,248.3068 bit/s ...
            Row::regime(
                "radio-rates",
                |i| set_rate(&mut i.users[0].uplink[0], 808_248.306_8),
                |i| set_rate(&mut i.users[0].uplink[0], 808_248.306_8 * (1.0 - E)),
            ),
            // ... 10 MHz at 1 m 378,699,802.817 bit/s ...
            Row::regime(
                "radio-rates",
                |i| set_rate(&mut i.users[0].uplink[0], 378_699_802.817),
                |i| set_rate(&mut i.users[0].uplink[0], 378_699_802.817 * (1.0 + E)),
            ),
            // ... the downlink, 38 dBm: 18,293,290.00485 bit/s at 2.5 MHz and 1,414.2 m ...
            Row::regime(
                "radio-rates",
                |i| set_rate(&mut i.users[0].downlink[0], 18_293_290.004_85),
                |i| set_rate(&mut i.users[0].downlink[0], 18_293_290.004_85 * (1.0 - E)),
            ),
            // ... and 471,713,789.474 bit/s at 10 MHz and 1 m (all rounded inward).
            Row::regime(
                "radio-rates",
                |i| set_rate(&mut i.users[0].downlink[0], 471_713_789.474),
                |i| set_rate(&mut i.users[0].downlink[0], 471_713_789.474 * (1.0 + E)),
            ),
            // Sec. VI-A's one cloud latency (0.01 s both ways): server 0's uplink to the cloud
            // longer by a factor 1 + 0.999e-9 inside and 1 + 1.001e-9 outside the code's
            // relative tolerance 1e-9 (the instance no longer declares itself symmetric).
            Row::regime(
                "symmetric-backhaul",
                |i| {
                    i.backhaul.symmetric = false;
                    i.backhaul.edge_to_cloud[0].latency_s = 0.01 * (1.0 + 0.999e-9);
                },
                |i| {
                    i.backhaul.symmetric = false;
                    i.backhaul.edge_to_cloud[0].latency_s = 0.01 * (1.0 + 1.001e-9);
                },
            ),
            // Sec. VI-A's one edge bandwidth: the link 0 -> 1 faster by the same factors.
            Row::regime(
                "symmetric-backhaul",
                |i| {
                    i.backhaul.symmetric = false;
                    let l = i.backhaul.edge_to_edge[0][1].as_mut().unwrap();
                    l.rate_bps = l.rate_bps.map(|r| r * (1.0 + 0.999e-9));
                },
                |i| {
                    i.backhaul.symmetric = false;
                    let l = i.backhaul.edge_to_edge[0][1].as_mut().unwrap();
                    l.rate_bps = l.rate_bps.map(|r| r * (1.0 + 1.001e-9));
                },
            ),
        ];
        let claim = "slimcaching/prop3-greedy-ratio";
        let base = instance(Preset::Paper, 0);
        assert_eq!(classify(&premises(), claim, &base).tier, Tier::Regime);
        assert_boundaries(&premises(), claim, &base, &rows, |_| {});
    }
}
