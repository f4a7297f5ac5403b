//! Validation of SlimCaching instances: one test per rule of `slimcaching::validate` (every
//! `fail(...)` branch, including the ones reached through the `positive`, `probability`,
//! `sums_to_one` and `link` helpers). Each test starts from a valid base instance, breaks one
//! thing and checks the error's field path and the key words of its reason; a few tests check
//! values on the accepted side of a boundary. The last tests go through
//! `formulations::slimcaching::load` on files in a temporary directory: malformed JSON
//! (`Error::Json` with line, column and path), an unknown field, a missing file, and a
//! validation error whose Display starts with the file path and names the field.

mod common;

use std::path::{Path, PathBuf};

use common::{lat, rate};
use formulations::slimcaching::validate::{
    validate, MAX_EXPERTS_PER_LAYER, MAX_LAYERS, MAX_MODELS, MAX_SERVERS, MAX_TOP_K, MAX_USERS,
};
use formulations::slimcaching::{
    load, ActivationSet, Backhaul, Cloud, EdgeServer, ExpertRef, Instance, LayerActivation,
    LayerId, Link, ModelId, ModelRequest, MoeModel, ServerId, User,
};
use formulations::Error;

fn set(experts: &[u32], p: f64) -> ActivationSet {
    ActivationSet {
        experts: experts.to_vec(),
        p,
    }
}

fn expert(model: u32, layer: u32, expert: u32) -> ExpertRef {
    ExpertRef {
        model: ModelId(model),
        layer: LayerId(layer),
        expert,
    }
}

fn activation(model: u32, layer: u32, sets: Vec<ActivationSet>) -> LayerActivation {
    LayerActivation {
        model: ModelId(model),
        layer: LayerId(layer),
        sets,
    }
}

/// A valid instance: 2 servers; model 0 Top-2 with 2 layers of 3 experts, model 1 Top-1 with
/// 1 layer of 2 experts; user 0 requests both (0.6 / 0.4) with a distribution per layer, user 1
/// requests model 1 only. The backhaul is symmetric except cloud_to_edge[1], and not declared
/// symmetric.
fn base() -> Instance {
    let link_01 = Link {
        latency_s: 0.01,
        rate_bps: Some(1e8),
    };
    Instance {
        name: "base".into(),
        servers: vec![
            EdgeServer {
                storage_bytes: 300,
                compute_flops: 1e9,
            },
            EdgeServer {
                storage_bytes: 200,
                compute_flops: 5e8,
            },
        ],
        cloud: Cloud {
            compute_flops: 1e10,
        },
        backhaul: Backhaul {
            symmetric: false,
            edge_to_edge: vec![vec![None, Some(link_01)], vec![Some(link_01), None]],
            edge_to_cloud: vec![lat(0.05), lat(0.06)],
            cloud_to_edge: vec![lat(0.05), lat(0.07)],
        },
        models: vec![
            MoeModel {
                name: "m0".into(),
                top_k: 2,
                layers: 2,
                experts_per_layer: 3,
                expert_bytes: 100,
                hidden_bytes: 1000,
                expert_flops: 1e6,
            },
            MoeModel {
                name: "m1".into(),
                top_k: 1,
                layers: 1,
                experts_per_layer: 2,
                expert_bytes: 50,
                hidden_bytes: 500,
                expert_flops: 2e6,
            },
        ],
        users: vec![
            User {
                compute_flops: 1e8,
                associated_server: Some(ServerId(0)),
                uplink: vec![rate(1e7), rate(1e7)],
                downlink: vec![rate(1e7), rate(1e7)],
                local_experts: vec![expert(0, 0, 1)],
                requests: vec![
                    ModelRequest {
                        model: ModelId(0),
                        p: 0.6,
                    },
                    ModelRequest {
                        model: ModelId(1),
                        p: 0.4,
                    },
                ],
                activations: vec![
                    activation(0, 0, vec![set(&[0, 1], 0.5), set(&[1, 2], 0.5)]),
                    activation(0, 1, vec![set(&[0, 2], 1.0)]),
                    activation(1, 0, vec![set(&[0], 0.3), set(&[1], 0.7)]),
                ],
            },
            User {
                compute_flops: 2e8,
                associated_server: None,
                uplink: vec![rate(1e7), lat(0.001)],
                downlink: vec![rate(1e7), lat(0.001)],
                local_experts: vec![],
                requests: vec![ModelRequest {
                    model: ModelId(1),
                    p: 1.0,
                }],
                activations: vec![activation(1, 0, vec![set(&[1], 1.0)])],
            },
        ],
    }
}

/// The base instance resized to `n` servers (all links copied from server 0's / 1's).
fn with_servers(n: usize) -> Instance {
    let mut inst = base();
    let server = inst.servers[0].clone();
    inst.servers = vec![server; n];
    let l = inst.backhaul.edge_to_edge[0][1];
    inst.backhaul.edge_to_edge = (0..n)
        .map(|a| (0..n).map(|b| if a == b { None } else { l }).collect())
        .collect();
    inst.backhaul.edge_to_cloud = vec![lat(0.05); n];
    inst.backhaul.cloud_to_edge = vec![lat(0.05); n];
    for u in &mut inst.users {
        u.uplink = vec![rate(1e7); n];
        u.downlink = vec![rate(1e7); n];
    }
    inst
}

/// Asserts that validation fails on `field` with a reason containing every word.
#[track_caller]
fn expect_err(inst: &Instance, field: &str, words: &[&str]) {
    let err = validate(inst).expect_err("the broken instance must be rejected");
    assert_eq!(err.field, field, "reason: {}", err.reason);
    for w in words {
        assert!(
            err.reason.contains(w),
            "reason {:?} lacks {w:?} (field {field})",
            err.reason
        );
    }
    // Display is "field: reason".
    assert_eq!(err.to_string(), format!("{}: {}", err.field, err.reason));
}

macro_rules! rejects {
    ($name:ident, $field:expr, [$($word:expr),* $(,)?], |$i:ident| $body:block) => {
        #[test]
        fn $name() {
            #[allow(unused_mut)]
            let mut $i = base();
            $body
            expect_err(&$i, $field, &[$($word),*]);
        }
    };
}

#[test]
fn base_instance_is_valid() {
    validate(&base()).expect("base is valid");
}

// ---- servers and cloud ----

rejects!(no_servers, "servers", ["at least one edge server"], |i| {
    i.servers.clear();
});

#[test]
fn at_most_max_servers() {
    assert_eq!(MAX_SERVERS, 32);
    validate(&with_servers(32)).expect("32 servers are allowed");
    expect_err(&with_servers(33), "servers", &["33 servers", "at most 32"]);
}

rejects!(
    storage_must_be_positive,
    "servers[1].storage_bytes",
    ["must be positive"],
    |i| {
        i.servers[1].storage_bytes = 0;
    }
);

#[test]
fn server_compute_must_be_positive_and_finite() {
    for bad in [0.0, -1e9, f64::NAN, f64::INFINITY] {
        let mut i = base();
        i.servers[0].compute_flops = bad;
        expect_err(
            &i,
            "servers[0].compute_flops",
            &["must be positive and finite", &format!("got {bad}")],
        );
    }
}

rejects!(
    cloud_compute_must_be_positive,
    "cloud.compute_flops",
    ["positive and finite", "got 0"],
    |i| {
        i.cloud.compute_flops = 0.0;
    }
);

// ---- backhaul ----

rejects!(
    edge_to_edge_needs_one_row_per_server,
    "backhaul.edge_to_edge",
    ["has 1 rows for 2 servers"],
    |i| {
        i.backhaul.edge_to_edge.pop();
    }
);

rejects!(
    edge_to_edge_rows_need_one_entry_per_server,
    "backhaul.edge_to_edge[1]",
    ["has 3 entries for 2 servers"],
    |i| {
        i.backhaul.edge_to_edge[1].push(Some(lat(0.01)));
    }
);

rejects!(
    edge_to_edge_diagonal_is_null,
    "backhaul.edge_to_edge[1][1]",
    ["diagonal must be null"],
    |i| {
        i.backhaul.edge_to_edge[1][1] = Some(lat(0.0));
    }
);

rejects!(
    edge_to_edge_off_diagonal_is_present,
    "backhaul.edge_to_edge[0][1]",
    ["missing link between distinct servers"],
    |i| {
        i.backhaul.edge_to_edge[0][1] = None;
    }
);

#[test]
fn link_latency_must_be_finite_and_non_negative() {
    for bad in [-0.1, f64::NAN, f64::INFINITY] {
        let mut i = base();
        i.backhaul.edge_to_edge[1][0] = Some(lat(bad));
        expect_err(
            &i,
            "backhaul.edge_to_edge[1][0].latency_s",
            &["must be finite and >= 0", &format!("got {bad}")],
        );
    }
}

rejects!(
    link_rate_must_be_positive,
    "backhaul.edge_to_cloud[0].rate_bps",
    ["must be positive and finite", "got 0"],
    |i| {
        i.backhaul.edge_to_cloud[0].rate_bps = Some(0.0);
    }
);

rejects!(
    edge_to_cloud_needs_one_link_per_server,
    "backhaul.edge_to_cloud",
    ["has 1 links for 2 servers"],
    |i| {
        i.backhaul.edge_to_cloud.pop();
    }
);

rejects!(
    cloud_to_edge_needs_one_link_per_server,
    "backhaul.cloud_to_edge",
    ["has 3 links for 2 servers"],
    |i| {
        i.backhaul.cloud_to_edge.push(lat(0.05));
    }
);

rejects!(
    cloud_to_edge_links_are_checked,
    "backhaul.cloud_to_edge[1].latency_s",
    ["must be finite and >= 0"],
    |i| {
        i.backhaul.cloud_to_edge[1].latency_s = -1.0;
    }
);

rejects!(
    declared_symmetric_edge_links_must_match,
    "backhaul.edge_to_edge[0][1]",
    ["differs from edge_to_edge[1][0]", "declared symmetric"],
    |i| {
        i.backhaul.symmetric = true;
        i.backhaul.cloud_to_edge[1] = lat(0.06);
        i.backhaul.edge_to_edge[1][0] = Some(Link {
            latency_s: 0.01,
            rate_bps: Some(2e8),
        });
    }
);

rejects!(
    declared_symmetric_cloud_links_must_match,
    "backhaul.edge_to_cloud[1]",
    ["differs from cloud_to_edge[1]", "declared symmetric"],
    |i| {
        // cloud_to_edge[1] is 0.07 s, edge_to_cloud[1] 0.06 s.
        i.backhaul.symmetric = true;
    }
);

rejects!(
    declared_symmetric_links_need_the_same_rate_kind,
    "backhaul.edge_to_edge[0][1]",
    ["differs from edge_to_edge[1][0]"],
    |i| {
        // Same latency, but one link has a rate and the other none.
        i.backhaul.symmetric = true;
        i.backhaul.cloud_to_edge[1] = lat(0.06);
        i.backhaul.edge_to_edge[1][0] = Some(lat(0.01));
    }
);

#[test]
fn symmetric_links_within_tolerance_are_accepted() {
    // Relative difference 1e-12 < 1e-9 on the rate: still symmetric; undeclared asymmetry is
    // fine as well (the base).
    let mut i = base();
    i.backhaul.symmetric = true;
    i.backhaul.cloud_to_edge[1] = lat(0.06);
    i.backhaul.edge_to_edge[1][0] = Some(Link {
        latency_s: 0.01,
        rate_bps: Some(1e8 * (1.0 + 1e-12)),
    });
    validate(&i).expect("symmetric within tolerance");
}

// ---- models ----

rejects!(no_models, "models", ["at least one MoE model"], |i| {
    i.models.clear();
});

rejects!(
    layers_at_least_one,
    "models[1].layers",
    ["must be at least 1"],
    |i| {
        i.models[1].layers = 0;
    }
);

rejects!(
    experts_per_layer_at_least_one,
    "models[0].experts_per_layer",
    ["must be at least 1"],
    |i| {
        i.models[0].experts_per_layer = 0;
    }
);

#[test]
fn top_k_is_between_one_and_the_layer_size() {
    for bad in [0, 4] {
        let mut i = base();
        i.models[0].top_k = bad;
        expect_err(
            &i,
            "models[0].top_k",
            &["must be in 1..=3", &format!("got {bad}")],
        );
    }
}

#[test]
fn top_k_at_most_the_supported_maximum() {
    // 20 experts per layer: K = 17 passes the 1..=E_m check but exceeds MAX_TOP_K. The model
    // rules come before the users', so the users' Top-1 sets of model 1 are never reached; with
    // K = 16 the first failure is therefore a user's set size, not top_k.
    assert_eq!(MAX_TOP_K, 16);
    let mut i = base();
    i.models[1].experts_per_layer = 20;
    i.models[1].top_k = 17;
    expect_err(&i, "models[1].top_k", &["17 exceeds", "maximum 16"]);
    i.models[1].top_k = 16;
    expect_err(
        &i,
        "users[0].activations[2].sets[0].experts",
        &["has 1 experts", "Top-16"],
    );
}

rejects!(
    expert_bytes_positive,
    "models[0].expert_bytes",
    ["must be positive"],
    |i| {
        i.models[0].expert_bytes = 0;
    }
);

rejects!(
    hidden_bytes_positive,
    "models[1].hidden_bytes",
    ["must be positive"],
    |i| {
        i.models[1].hidden_bytes = 0;
    }
);

rejects!(
    expert_flops_positive,
    "models[0].expert_flops",
    ["must be positive and finite", "got -1"],
    |i| {
        i.models[0].expert_flops = -1.0;
    }
);

rejects!(
    layers_at_most_the_limit,
    "models[1].layers",
    [
        "1025 layers exceeds the limit of 1024",
        "formulations::slimcaching::validate::MAX_LAYERS"
    ],
    |i| {
        i.models[1].layers = MAX_LAYERS + 1;
    }
);

rejects!(
    experts_per_layer_at_most_the_limit,
    "models[0].experts_per_layer",
    [
        "1000000000 experts exceeds the limit of 65536",
        "MAX_EXPERTS_PER_LAYER"
    ],
    |i| {
        i.models[0].experts_per_layer = 1_000_000_000;
    }
);

rejects!(
    total_experts_at_most_the_limit,
    "models",
    [
        "1048582 experts in total",
        "exceeds the limit of 1048576",
        "MAX_TOTAL_EXPERTS"
    ],
    |i| {
        // 2 * 3 + 16 * 65536 = 6 + 2^20: each factor within its own limit, the sum one above.
        i.models[1].layers = 16;
        i.models[1].experts_per_layer = 65536;
    }
);

rejects!(
    models_at_most_the_limit,
    "models",
    ["1025 models exceeds the limit of 1024", "MAX_MODELS"],
    |i| {
        let extra = i.models[1].clone();
        i.models.resize(MAX_MODELS + 1, extra);
    }
);

rejects!(
    users_at_most_the_limit,
    "users",
    ["65537 users exceeds the limit of 65536", "MAX_USERS"],
    |i| {
        let extra = i.users[1].clone();
        i.users.resize(MAX_USERS + 1, extra);
    }
);

#[test]
fn sizes_at_their_limits_are_accepted() {
    // Models nobody requests need no distributions: three of them bring the total to exactly
    // 2^20 = 6 + 2 + 15 * 65536 + 1024 * 32 + 32760.
    let mut i = base();
    let model = |layers, experts_per_layer| MoeModel {
        layers,
        experts_per_layer,
        ..i.models[1].clone()
    };
    let extra = [
        model(15, MAX_EXPERTS_PER_LAYER),
        model(MAX_LAYERS, 32),
        model(1, 32760),
    ];
    i.models.extend(extra);
    validate(&i).expect("every size at most its limit");
    i.models[4].experts_per_layer += 1;
    expect_err(&i, "models", &["1048577 experts in total"]);
}

// ---- users ----

rejects!(no_users, "users", ["at least one user"], |i| {
    i.users.clear();
});

rejects!(
    user_compute_positive,
    "users[1].compute_flops",
    ["must be positive and finite", "got inf"],
    |i| {
        i.users[1].compute_flops = f64::INFINITY;
    }
);

rejects!(
    associated_server_exists,
    "users[0].associated_server",
    ["server 2 does not exist", "2 servers"],
    |i| {
        i.users[0].associated_server = Some(ServerId(2));
    }
);

rejects!(
    uplink_one_per_server,
    "users[0].uplink",
    ["has 1 links for 2 servers"],
    |i| {
        i.users[0].uplink.pop();
    }
);

rejects!(
    downlink_one_per_server,
    "users[1].downlink",
    ["has 3 links for 2 servers"],
    |i| {
        i.users[1].downlink.push(rate(1e7));
    }
);

rejects!(
    uplink_links_are_checked,
    "users[0].uplink[1].rate_bps",
    ["must be positive and finite", "got -5"],
    |i| {
        i.users[0].uplink[1] = rate(-5.0);
    }
);

rejects!(
    downlink_links_are_checked,
    "users[1].downlink[0].latency_s",
    ["must be finite and >= 0", "got -1"],
    |i| {
        i.users[1].downlink[0].latency_s = -1.0;
    }
);

#[test]
fn local_experts_must_exist() {
    // Model 0 has layers 0..2, model 1 experts 0..2 in layer 0, and there is no model 5.
    for (r, shown) in [
        (expert(0, 2, 0), "m0.l2.e0"),
        (expert(1, 0, 2), "m1.l0.e2"),
        (expert(5, 0, 0), "m5.l0.e0"),
    ] {
        let mut i = base();
        i.users[0].local_experts.push(r);
        expect_err(
            &i,
            "users[0].local_experts[1]",
            &[&format!("expert {shown} does not exist")],
        );
    }
}

rejects!(
    local_experts_listed_once,
    "users[0].local_experts[1]",
    ["expert m0.l0.e1 is listed twice"],
    |i| {
        i.users[0].local_experts.push(expert(0, 0, 1));
    }
);

rejects!(
    requested_model_exists,
    "users[0].requests[1].model",
    ["model 2 does not exist"],
    |i| {
        i.users[0].requests[1].model = ModelId(2);
    }
);

#[test]
fn request_probability_in_unit_interval() {
    for bad in [1.5, -0.1, f64::NAN] {
        let mut i = base();
        i.users[0].requests[0].p = bad;
        expect_err(
            &i,
            "users[0].requests[0].p",
            &[&format!("probability {bad} is outside [0, 1]")],
        );
    }
}

rejects!(
    model_requested_once,
    "users[0].requests[1].model",
    ["model 0 is requested twice"],
    |i| {
        i.users[0].requests[1].model = ModelId(0);
    }
);

rejects!(
    request_probabilities_sum_to_one,
    "users[0].requests",
    ["probabilities sum to", "not 1"],
    |i| {
        // 0.6 + 0.3 = 0.9.
        i.users[0].requests[1].p = 0.3;
    }
);

#[test]
fn probability_sums_within_tolerance_are_accepted() {
    // 0.6 + (0.4 + 5e-7) is within 1e-6 of 1; 0.6 + (0.4 + 2e-6) is not.
    let mut i = base();
    i.users[0].requests[1].p = 0.4 + 5e-7;
    validate(&i).expect("within tolerance");
    i.users[0].requests[1].p = 0.4 + 2e-6;
    expect_err(&i, "users[0].requests", &["not 1", "tolerance"]);
}

rejects!(
    activation_model_exists,
    "users[0].activations[2].model",
    ["model 7 does not exist"],
    |i| {
        i.users[0].activations[2].model = ModelId(7);
    }
);

rejects!(
    activation_model_is_requested,
    "users[1].activations[1].model",
    ["model 0 has activations but is not in requests"],
    |i| {
        i.users[1]
            .activations
            .push(activation(0, 0, vec![set(&[0, 1], 1.0)]));
    }
);

rejects!(
    activation_layer_exists,
    "users[0].activations[1].layer",
    ["layer 2 does not exist", "model 0 has 2 MoE layers"],
    |i| {
        i.users[0].activations[1].layer = LayerId(2);
    }
);

rejects!(
    one_distribution_per_layer,
    "users[0].activations[1]",
    ["model 0 layer 0 has a second distribution"],
    |i| {
        i.users[0].activations[1].layer = LayerId(0);
    }
);

rejects!(
    sets_have_exactly_k_experts,
    "users[0].activations[0].sets[1].experts",
    ["has 1 experts", "model 0 is Top-2"],
    |i| {
        i.users[0].activations[0].sets[1].experts = vec![1];
    }
);

rejects!(
    set_experts_in_range,
    "users[0].activations[0].sets[1].experts",
    ["expert 3 is out of range", "layer has 3 experts"],
    |i| {
        i.users[0].activations[0].sets[1].experts = vec![3, 1];
    }
);

rejects!(
    set_experts_distinct,
    "users[0].activations[0].sets[1].experts",
    ["an expert appears twice"],
    |i| {
        i.users[0].activations[0].sets[1].experts = vec![2, 2];
    }
);

rejects!(
    set_probability_in_unit_interval,
    "users[0].activations[2].sets[0].p",
    ["probability -0.3 is outside [0, 1]"],
    |i| {
        i.users[0].activations[2].sets[0].p = -0.3;
    }
);

rejects!(
    sets_listed_once,
    "users[0].activations[0].sets[1].experts",
    ["the same set is listed twice"],
    |i| {
        // {1, 0} is {0, 1} in another order.
        i.users[0].activations[0].sets[1].experts = vec![1, 0];
    }
);

rejects!(
    set_probabilities_sum_to_one,
    "users[0].activations[0].sets",
    ["probabilities sum to", "not 1"],
    |i| {
        // 0.4 + 0.5 = 0.9.
        i.users[0].activations[0].sets[0].p = 0.4;
    }
);

rejects!(
    empty_distribution_does_not_sum_to_one,
    "users[1].activations[0].sets",
    ["probabilities sum to 0", "not 1"],
    |i| {
        i.users[1].activations[0].sets.clear();
    }
);

rejects!(
    every_layer_of_a_requested_model_has_a_distribution,
    "users[0].activations",
    [
        "model 0 is requested (p = 0.6)",
        "layer 1 has no distribution"
    ],
    |i| {
        i.users[0].activations.remove(1);
    }
);

#[test]
fn model_with_zero_request_probability_needs_no_distribution() {
    // User 1 lists model 0 with p = 0 and gives no activations for it.
    let mut i = base();
    i.users[1].requests.push(ModelRequest {
        model: ModelId(0),
        p: 0.0,
    });
    validate(&i).expect("p = 0 needs no distribution");
}

// ---- load ----

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "moe-opt-formulations-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).expect("write temp file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn json(inst: &Instance) -> String {
    serde_json::to_string_pretty(inst).expect("serialise")
}

#[test]
fn load_reads_a_valid_file() {
    let dir = TempDir::new("valid");
    let path = dir.write("ok.json", &json(&base()));
    let loaded = load(&path).expect("valid file loads");
    assert_eq!(loaded, base());
}

#[test]
fn malformed_json_reports_line_column_and_path() {
    let dir = TempDir::new("malformed");
    // Line 3 is `  "servers": [,]`: 2 spaces, `"servers":` in columns 3-12, a space in 13,
    // `[` in 14 and the stray `,` in column 15.
    let path = dir.write(
        "bad.json",
        "{\n  \"name\": \"bad\",\n  \"servers\": [,]\n}\n",
    );
    let err = load(&path).expect_err("malformed JSON is rejected");
    match &err {
        Error::Json {
            path: p,
            line,
            column,
            message,
        } => {
            assert_eq!(p, &path);
            assert_eq!((*line, *column), (3, 15), "message: {message}");
            assert!(message.contains("expected value"), "{message}");
            // The position is not repeated inside the message.
            assert!(!message.contains(" at line "), "{message}");
        }
        other => panic!("expected Error::Json, got {other:?}"),
    }
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("{}: line 3, column 15: ", path.display())),
        "{shown}"
    );
}

#[test]
fn unknown_field_is_rejected() {
    let dir = TempDir::new("unknown");
    let mut value = serde_json::to_value(base()).expect("to value");
    value["users"][0]
        .as_object_mut()
        .expect("user object")
        .insert("colour".into(), serde_json::json!("blue"));
    let path = dir.write("unknown.json", &value.to_string());
    let err = load(&path).expect_err("unknown field is rejected");
    match &err {
        Error::Json {
            path: p, message, ..
        } => {
            assert_eq!(p, &path);
            assert!(message.contains("unknown field `colour`"), "{message}");
        }
        other => panic!("expected Error::Json, got {other:?}"),
    }
    assert!(err.to_string().starts_with(&path.display().to_string()));
}

#[test]
fn missing_file_is_an_io_error_naming_the_path() {
    let dir = TempDir::new("missing");
    let path = dir.0.join("absent.json");
    match load(&path) {
        Err(Error::Io { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected Error::Io, got {other:?}"),
    }
}

#[test]
fn validation_error_display_starts_with_the_path_and_names_the_field() {
    let dir = TempDir::new("invalid");
    let mut inst = base();
    inst.users[0].activations[0].sets[1].experts = vec![2, 2];
    let path = dir.write("invalid.json", &json(&inst));
    let err = load(&path).expect_err("invalid instance is rejected");
    let shown = err.to_string();
    let field = "users[0].activations[0].sets[1].experts";
    assert_eq!(
        shown,
        format!("{}: {field}: an expert appears twice", path.display())
    );
    match err {
        Error::Invalid {
            path: p,
            field: f,
            reason,
        } => {
            assert_eq!(p, path);
            assert_eq!(f, field);
            assert_eq!(reason, "an expert appears twice");
        }
        other => panic!("expected Error::Invalid, got {other:?}"),
    }
}

#[test]
fn in_file_ties_a_validation_error_to_a_path() {
    let err = validate(&{
        let mut i = base();
        i.servers[1].storage_bytes = 0;
        i
    })
    .expect_err("invalid");
    let shown = err.in_file(Path::new("dir/x.json")).to_string();
    assert_eq!(
        shown,
        "dir/x.json: servers[1].storage_bytes: must be positive"
    );
}
