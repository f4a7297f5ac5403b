//! The radio and network model of SlimCaching instances (Section III-C, eqs. (3)-(4), Section
//! VI-A), shared by the generator ([`super::generate`]) and the importer ([`super::import`]):
//! node positions, link rates, the edge-cloud links and the compute capabilities.
//!
//! Users lie uniformly in a square of side `area_side_m` (1 km). Servers lie on a grid
//! ([`ServerLayout::Grid`]: ceil(sqrt N) columns, cell centres; the 2 x 2 centres for N = 4) or
//! uniformly ([`ServerLayout::Uniform`]). Rates follow eq. (3)/(4):
//!
//! R = B log2(1 + P G d^-alpha / (N0 B)),
//!
//! with d in metres clamped to at least `min_distance_m` (1 m, so that co-located nodes get a
//! finite rate). The uplink uses the user power (0.01 W) and B_u (5 MHz), the downlink the server
//! power (38 dBm) and B_u, edge-edge links the server power, 100 MHz and the server distance (so
//! the edge-edge matrix is symmetric by construction and `backhaul.symmetric` is set). The
//! edge<->cloud links are latency-only: `Link { latency_s: 0.01, rate_bps: None }` each way.
//! Users get `associated_server: None`, so the evaluator applies the rule under eq. (4). If
//! `total_user_bandwidth_hz` is set, B_u = total / U (the shared-bandwidth setting of Fig. 8(b)).
//! Compute: 50 / 82.58 / 312 TFLOP/s for user / edge / cloud, each expert of model m getting
//! 1/E_m of it (eq. (6)).

use std::path::PathBuf;

use formulations::slimcaching::{Backhaul, Cloud, EdgeServer, Link};
use formulations::Error;
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::generate::stream;

/// ChaCha stream of uniformly placed servers.
const STREAM_SERVER_POSITIONS: u64 = 3;
/// Base of the per-user position streams (+ user index).
const STREAM_USER_POSITION_BASE: u64 = 3 << 32;

/// Where the edge servers stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerLayout {
    /// Cell centres of a ceil(sqrt N)-column grid over the square, filled row by row.
    Grid,
    /// Uniformly at random in the square.
    Uniform,
}

/// The wireless and backhaul parameters of Section VI-A (eqs. (3)-(4)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WirelessConfig {
    /// Side of the square cell, metres (1 km).
    pub area_side_m: f64,
    /// Placement of the servers.
    pub server_layout: ServerLayout,
    /// User transmit power P_{u,n}, W (0.01 W).
    pub user_power_w: f64,
    /// Server transmit power P_{n,u} (and on edge-edge links), W (38 dBm).
    pub server_power_w: f64,
    /// Bandwidth B_u of each user, Hz (5 MHz).
    pub user_bandwidth_hz: f64,
    /// If set, B_u = this / U instead (users share a fixed total, Fig. 8(b)).
    #[serde(default)]
    pub total_user_bandwidth_hz: Option<f64>,
    /// Bandwidth between edge servers, Hz (100 MHz).
    pub edge_bandwidth_hz: f64,
    /// Path-loss exponent alpha (4).
    pub path_loss_exponent: f64,
    /// Antenna-related factor G (1).
    pub antenna_gain: f64,
    /// Noise power spectral density N0, dBm/Hz (-174).
    pub noise_dbm_per_hz: f64,
    /// Distances are clamped to at least this, metres (1 m).
    pub min_distance_m: f64,
    /// Fixed edge->cloud and cloud->edge latency, seconds (0.01 s each way).
    pub cloud_latency_s: f64,
}

impl WirelessConfig {
    /// The values of Section VI-A.
    pub fn paper() -> Self {
        WirelessConfig {
            area_side_m: 1000.0,
            server_layout: ServerLayout::Grid,
            user_power_w: 0.01,
            server_power_w: dbm_to_w(38.0),
            user_bandwidth_hz: 5e6,
            total_user_bandwidth_hz: None,
            edge_bandwidth_hz: 100e6,
            path_loss_exponent: 4.0,
            antenna_gain: 1.0,
            noise_dbm_per_hz: -174.0,
            min_distance_m: 1.0,
            cloud_latency_s: 0.01,
        }
    }
}

/// Computing capabilities C, FLOP/s (Section VI-A).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeConfig {
    /// C_u of every user (50 TFLOP/s).
    pub user_flops: f64,
    /// Every edge server (82.58 TFLOP/s).
    pub edge_flops: f64,
    /// The cloud (312 TFLOP/s).
    pub cloud_flops: f64,
}

impl ComputeConfig {
    /// The values of Section VI-A.
    pub fn paper() -> Self {
        ComputeConfig {
            user_flops: 50e12,
            edge_flops: 82.58e12,
            cloud_flops: 312e12,
        }
    }
}

/// Checks wireless knobs; errors name `{prefix}.{field}` in `path`.
pub(crate) fn check_wireless(w: &WirelessConfig, path: &str, prefix: &str) -> Result<(), Error> {
    let fields = [
        ("area_side_m", w.area_side_m),
        ("user_power_w", w.user_power_w),
        ("server_power_w", w.server_power_w),
        ("user_bandwidth_hz", w.user_bandwidth_hz),
        ("edge_bandwidth_hz", w.edge_bandwidth_hz),
        ("path_loss_exponent", w.path_loss_exponent),
        ("antenna_gain", w.antenna_gain),
        ("min_distance_m", w.min_distance_m),
        (
            "total_user_bandwidth_hz",
            w.total_user_bandwidth_hz.unwrap_or(1.0),
        ),
    ];
    for (name, x) in fields {
        if !(x.is_finite() && x > 0.0) {
            return Err(Error::Invalid {
                path: PathBuf::from(path),
                field: format!("{prefix}.{name}"),
                reason: format!("must be positive and finite, got {x}"),
            });
        }
    }
    if !w.noise_dbm_per_hz.is_finite() {
        return Err(Error::Invalid {
            path: PathBuf::from(path),
            field: format!("{prefix}.noise_dbm_per_hz"),
            reason: format!("must be finite, got {}", w.noise_dbm_per_hz),
        });
    }
    if !(w.cloud_latency_s.is_finite() && w.cloud_latency_s >= 0.0) {
        return Err(Error::Invalid {
            path: PathBuf::from(path),
            field: format!("{prefix}.cloud_latency_s"),
            reason: format!("must be finite and >= 0, got {}", w.cloud_latency_s),
        });
    }
    Ok(())
}

/// Checks compute knobs; errors name `{prefix}.{field}` in `path`.
pub(crate) fn check_compute(c: &ComputeConfig, path: &str, prefix: &str) -> Result<(), Error> {
    for (name, x) in [
        ("user_flops", c.user_flops),
        ("edge_flops", c.edge_flops),
        ("cloud_flops", c.cloud_flops),
    ] {
        if !(x.is_finite() && x > 0.0) {
            return Err(Error::Invalid {
                path: PathBuf::from(path),
                field: format!("{prefix}.{name}"),
                reason: format!("must be positive and finite, got {x}"),
            });
        }
    }
    Ok(())
}

/// dBm to watts.
pub fn dbm_to_w(dbm: f64) -> f64 {
    10f64.powf((dbm - 30.0) / 10.0)
}

/// Achievable rate of eqs. (3)-(4), bit/s: B log2(1 + P G d^-alpha / (N0 B)), d clamped to
/// `min_distance_m`.
pub fn rate_bps(bandwidth_hz: f64, power_w: f64, distance_m: f64, w: &WirelessConfig) -> f64 {
    let n0 = dbm_to_w(w.noise_dbm_per_hz);
    let d = distance_m.max(w.min_distance_m);
    let snr = power_w * w.antenna_gain * d.powf(-w.path_loss_exponent) / (n0 * bandwidth_hz);
    bandwidth_hz * (1.0 + snr).log2()
}

/// Links, servers and cloud of an instance (everything but models and demands).
pub(crate) struct Network {
    pub servers: Vec<EdgeServer>,
    pub cloud: Cloud,
    pub backhaul: Backhaul,
    /// Per user, per server.
    pub uplink: Vec<Vec<Link>>,
    /// Per user, per server.
    pub downlink: Vec<Vec<Link>>,
}

/// Server positions (metres) per the layout.
fn server_positions(w: &WirelessConfig, n: usize, seed: u64) -> Vec<(f64, f64)> {
    let side = w.area_side_m;
    match w.server_layout {
        ServerLayout::Grid => {
            let cols = (1..=n).find(|c| c * c >= n).unwrap_or(1);
            let rows = n.div_ceil(cols).max(1);
            (0..n)
                .map(|k| {
                    let (c, r) = ((k % cols) as f64, (k / cols) as f64);
                    (
                        (c + 0.5) * side / cols as f64,
                        (r + 0.5) * side / rows as f64,
                    )
                })
                .collect()
        }
        ServerLayout::Uniform => {
            let mut rng = stream(seed, STREAM_SERVER_POSITIONS);
            (0..n)
                .map(|_| (rng.random::<f64>() * side, rng.random::<f64>() * side))
                .collect()
        }
    }
}

/// Builds the network of eqs. (3)-(4) for `servers` servers and `users` users.
pub(crate) fn build_network(
    w: &WirelessConfig,
    c: &ComputeConfig,
    servers: usize,
    users: usize,
    storage_bytes: u64,
    seed: u64,
) -> Network {
    let spos = server_positions(w, servers, seed);
    let dist = |a: (f64, f64), b: (f64, f64)| ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt();
    let edge_to_edge = (0..servers)
        .map(|i| {
            (0..servers)
                .map(|j| {
                    (i != j).then(|| Link {
                        latency_s: 0.0,
                        rate_bps: Some(rate_bps(
                            w.edge_bandwidth_hz,
                            w.server_power_w,
                            dist(spos[i], spos[j]),
                            w,
                        )),
                    })
                })
                .collect()
        })
        .collect();
    let cloud_link = Link {
        latency_s: w.cloud_latency_s,
        rate_bps: None,
    };
    let bandwidth = w
        .total_user_bandwidth_hz
        .map_or(w.user_bandwidth_hz, |t| t / users.max(1) as f64);
    let mut uplink = Vec::with_capacity(users);
    let mut downlink = Vec::with_capacity(users);
    for u in 0..users {
        let mut rng = stream(seed, STREAM_USER_POSITION_BASE + u as u64);
        let pos = (
            rng.random::<f64>() * w.area_side_m,
            rng.random::<f64>() * w.area_side_m,
        );
        let rate = |power: f64, n: usize| Link {
            latency_s: 0.0,
            rate_bps: Some(rate_bps(bandwidth, power, dist(pos, spos[n]), w)),
        };
        uplink.push((0..servers).map(|n| rate(w.user_power_w, n)).collect());
        downlink.push((0..servers).map(|n| rate(w.server_power_w, n)).collect());
    }
    Network {
        servers: vec![
            EdgeServer {
                storage_bytes,
                compute_flops: c.edge_flops,
            };
            servers
        ],
        cloud: Cloud {
            compute_flops: c.cloud_flops,
        },
        backhaul: Backhaul {
            symmetric: true,
            edge_to_edge,
            edge_to_cloud: vec![cloud_link; servers],
            cloud_to_edge: vec![cloud_link; servers],
        },
        uplink,
        downlink,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_follow_eq_3() {
        let w = WirelessConfig::paper();
        // Hand-computed: N0 = 10^-20.4 W/Hz; 0.01 W at 100 m over 5 MHz:
        // SNR = 1e-10 / (3.981e-21 * 5e6) = 5023.8, R = 5e6 log2(5024.8) = 61.474 Mbit/s.
        assert!((rate_bps(5e6, 0.01, 100.0, &w) - 61.474213e6).abs() < 1.0);
        // 0.01 W at 1 km: SNR = 0.5024, R = 2.936 Mbit/s.
        assert!((rate_bps(5e6, 0.01, 1000.0, &w) - 2.936236e6).abs() < 1.0);
        // 38 dBm = 6.3096 W over 100 MHz at 500 m: 799.2 Mbit/s.
        assert!((rate_bps(100e6, dbm_to_w(38.0), 500.0, &w) - 799.199177e6).abs() < 10.0);
        // Distances below 1 m are clamped.
        assert_eq!(rate_bps(5e6, 0.01, 0.0, &w), rate_bps(5e6, 0.01, 1.0, &w));
    }
}
