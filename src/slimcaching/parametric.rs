//! SlimCaching's parametric families (see [`crate::parametric`]).
//!
//! ## `prop3-size-ratio`: Alg. 1 against Prop. 3
//!
//! Prop. 3 (Sec. V-A) claims that Alg. 1, the greedy that adds the pair of largest marginal
//! gain per byte F_1(i | S) / b_i (line 5) while it fits, returns F_1(S) >= (1 - 1/e) F_1(X*)
//! when every model is Top-1. Under the knapsack constraint (18b) this density rule alone has
//! no constant factor: one small expert of high density can take the room of one large expert
//! of high value.
//!
//! **Construction** (X an integer, X >= 4). One edge server n of Q = X MiB; the cloud; one
//! user u associated with n, holding no expert locally. Two Top-1 models A and B, one MoE layer
//! of one expert each, identical (Switch-base's hidden state D = 1536 bytes and expert FLOPs
//! mu = 2 x 2 x 768 x 3072) except the expert size: b_A = X MiB, b_B = 1 MiB. The user requests
//! A with p_{u,A} = X/(X+2) and B with p_{u,B} = 2/(X+2), each token activating the layer's
//! one expert (p_{u,S} = 1). Sec. VI-A's figures: edge, cloud and user compute 82.58, 312 and
//! 50 TFLOP/s, 0.01 s each way between edge and cloud, radio rates of eq. (3) at 100 m.
//!
//! **Gains.** A token of model m (U = 1, one layer, S = {m's expert}) gets from caching m's
//! expert at n the latency reduction r_m of (17): by (16) T^max has T_{n,C,m} + T^CP_{C,m} +
//! T_{C,n,m} (the cloud's visit and return), by (9)-(11) the cached expert replaces them with
//! T^CP_{E,m}; the uplink and downlink terms of (11) and (16) are the same either way. So
//! r_m = 0.01 + 0.01 + mu/312e12 - mu/82.58e12 =: r > 0 s (E_m = 1 in eq. (6)), the same r
//! for A and B, which share D, mu and E_m and differ only in b_m. With one server and Top-1
//! tokens the demands of A and B touch different experts, so F_1 is modular:
//! F_1({A}) = p_{u,A} r = X r/(X+2), F_1({B}) = 2 r/(X+2), F_1({A, B}) = (X+2) r/(X+2) = r.
//!
//! **Alg. 1.** Both pairs fit the empty server (b_A = Q). Densities (line 5):
//! F_1(A | empty) / b_A = r/(X+2) per MiB, F_1(B | empty) / b_B = 2 r/(X+2) per MiB, twice
//! A's, so Alg. 1 caches B (line 6). The server keeps X - 1 < b_A MiB, A no longer fits, and
//! the loop ends: S = {B}, F_1(S) = 2 r/(X+2).
//!
//! **Optimum.** b_A + b_B = X + 1 > Q, so the feasible placements are empty, {A} and {B}, and
//! X* = {A} since X r/(X+2) > 2 r/(X+2) for X > 2: F_1(X*) = X r/(X+2).
//!
//! **Measure.** F_1(S) / F_1(X*) = 2/X (r and X+2 cancel), which tends to 0 as X grows: no
//! constant factor. It is below 1 - 1/e = 0.632 exactly when X > 2/(1 - 1/e) = 3.16, hence
//! X >= 4 (at X = 3 the ratio 2/3 meets the bound). X is capped at 65536: X MiB = 2^36 bytes,
//! the largest expert the formulation accepts (`validate::MAX_BYTES`).
//!
//! **Premises.** Every model premise holds: one server (edge compute homogeneous, no remote
//! round trip to compare with the cloud's), T^CP_{E,m} = mu/82.58e12 = 1.1e-7 s within the
//! cloud's 0.01 s return (communication the bottleneck), the only server is the nearest, radio
//! links rate-only and cloud links latency-only. The instance is `model`, not `regime`: A and
//! B (one layer of one expert, 1 and X MiB) are none of the paper's architectures
//! (`paper-library`), and X MiB is outside Fig. 9(a)'s 1.25-7.5 GB unless 1193 <= X <= 7152
//! (`storage`). With r = 0.02 - 8.40e-8 s, F_1(X*) at X = 4 is 4 r/6 = 13.33 ms.

use formulations::slimcaching::{
    ActivationSet, Backhaul, Cloud, EdgeServer, Instance, LayerActivation, LayerId, Link, ModelId,
    ModelRequest, MoeModel, User,
};
use formulations::Error;

use super::architectures::MIB;
use super::network::{rate_bps, ComputeConfig, WirelessConfig};
use crate::generate::Made;
use crate::parametric::{integer_param, ParametricFamily};

/// SlimCaching's families, in claim order.
pub fn families() -> Vec<ParametricFamily> {
    vec![PROP3_SIZE_RATIO]
}

/// The family of the module doc.
pub const PROP3_SIZE_RATIO: ParametricFamily = ParametricFamily {
    name: "prop3-size-ratio",
    claim: "slimcaching/prop3-greedy-ratio",
    about: "one server of X MiB; Top-1 models A (one X-MiB expert, requested with p X/(X+2)) \
            and B (one 1-MiB expert, p 2/(X+2)): Alg. 1 caches B, OPT caches A",
    param: "X: the server's storage and model A's expert size in MiB, an integer from 4 to \
            65536",
    measure: "ratio",
    closed_form: "2/X -> 0",
    limit: 0.0,
    claimed: 1.0 - 1.0 / std::f64::consts::E,
    params: &[4.0, 5.0, 6.0, 10.0, 20.0, 50.0, 100.0],
    expected: |x| 2.0 / x,
    build: prop3_size_ratio,
};

/// Least X: the ratio 2/X is below 1 - 1/e from X = 4 on.
const LEAST_X: u64 = 4;

/// Largest X: X MiB = 2^36 bytes, the formulation's `MAX_BYTES`.
const MOST_X: u64 = formulations::slimcaching::validate::MAX_BYTES / MIB;

/// The instance at X (module doc).
fn prop3_size_ratio(x: f64) -> Result<Made, Error> {
    let x = integer_param(PROP3_SIZE_RATIO.name, x, LEAST_X, MOST_X)?;
    let compute = ComputeConfig::paper();
    let wireless = WirelessConfig::paper();
    let cloud = Link {
        latency_s: wireless.cloud_latency_s,
        rate_bps: None,
    };
    let radio = |power_w| Link {
        latency_s: 0.0,
        rate_bps: Some(rate_bps(
            wireless.user_bandwidth_hz,
            power_w,
            100.0,
            &wireless,
        )),
    };
    // Switch-base's hidden size and expert (2 x 768 x 3072 parameters, 2 FLOPs each).
    let model = |name: &str, mib: u64| MoeModel {
        name: name.into(),
        top_k: 1,
        layers: 1,
        experts_per_layer: 1,
        expert_bytes: mib * MIB,
        hidden_bytes: 2 * 768,
        expert_flops: 2.0 * (2 * 768 * 3072) as f64,
    };
    let its_expert = |m: u32| LayerActivation {
        model: ModelId(m),
        layer: LayerId(0),
        sets: vec![ActivationSet {
            experts: vec![0],
            p: 1.0,
        }],
    };
    let total = (x + 2) as f64;
    let instance = Instance {
        name: format!("family-prop3-size-ratio-{x}"),
        servers: vec![EdgeServer {
            storage_bytes: x * MIB,
            compute_flops: compute.edge_flops,
        }],
        cloud: Cloud {
            compute_flops: compute.cloud_flops,
        },
        backhaul: Backhaul {
            symmetric: true,
            edge_to_edge: vec![vec![None]],
            edge_to_cloud: vec![cloud],
            cloud_to_edge: vec![cloud],
        },
        models: vec![model("A", x), model("B", 1)],
        users: vec![User {
            compute_flops: compute.user_flops,
            associated_server: None,
            uplink: vec![radio(wireless.user_power_w)],
            downlink: vec![radio(wireless.server_power_w)],
            local_experts: Vec::new(),
            requests: vec![
                ModelRequest {
                    model: ModelId(0),
                    p: x as f64 / total,
                },
                ModelRequest {
                    model: ModelId(1),
                    p: 2.0 / total,
                },
            ],
            activations: vec![its_expert(0), its_expert(1)],
        }],
    };
    Ok(Made::new(
        &instance,
        format!("1 server of {x} MiB, Top-1 models A ({x} MiB) and B (1 MiB), 1 user"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::Certificate;
    use crate::parametric::checked_as_proved;

    #[test]
    fn prop3_size_ratio_breaks_the_bound_as_proved() {
        for (x, check, _) in checked_as_proved(
            &PROP3_SIZE_RATIO,
            &[Box::new(crate::slimcaching::claims::table())],
        ) {
            assert_eq!(check.certificate, Some(Certificate::Optimum), "X = {x}");
        }
    }

    #[test]
    fn prop3_size_ratio_closed_form_by_hand() {
        // X = 7: Alg. 1 keeps B, 2/9 of r; OPT keeps A, 7/9 of r: 2/7.
        assert_eq!((PROP3_SIZE_RATIO.expected)(7.0), 0.2857142857142857);
    }

    #[test]
    fn prop3_size_ratio_refuses_x_outside_its_domain() {
        for x in [3.0, 4.5, 65537.0, f64::NAN, f64::INFINITY] {
            assert!(PROP3_SIZE_RATIO.make(x).is_err(), "X = {x}");
        }
        assert!(PROP3_SIZE_RATIO.make(65536.0).is_ok());
    }
}
