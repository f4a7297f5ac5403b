//! The SlimCaching instance (Section III of paper 000) as serde data, and the expert placement X.
//!
//! JSON layout (all sizes in bytes, rates in bit/s, times in seconds, compute in FLOP/s):
//!
//! ```json
//! { "name": "tiny-0",
//!   "servers": [ { "storage_bytes": 100, "compute_flops": 8.258e13 } ],
//!   "cloud": { "compute_flops": 3.12e14 },
//!   "backhaul": { "symmetric": true,
//!                 "edge_to_edge": [[null]],
//!                 "edge_to_cloud": [ { "latency_s": 0.01 } ],
//!                 "cloud_to_edge": [ { "latency_s": 0.01 } ] },
//!   "models": [ { "name": "m0", "top_k": 1, "layers": 1, "experts_per_layer": 2,
//!                 "expert_bytes": 50, "hidden_bytes": 1536, "expert_flops": 9.4e6 } ],
//!   "users": [ { "compute_flops": 5e13, "associated_server": null,
//!                "uplink": [ { "rate_bps": 1.6e7 } ], "downlink": [ { "rate_bps": 9e7 } ],
//!                "local_experts": [ { "model": 0, "layer": 0, "expert": 1 } ],
//!                "requests": [ { "model": 0, "p": 1.0 } ],
//!                "activations": [ { "model": 0, "layer": 0,
//!                                   "sets": [ { "experts": [0], "p": 0.7 },
//!                                             { "experts": [1], "p": 0.3 } ] } ] } ] }
//! ```
//!
//! `edge_to_edge[n][n']` is the link from server n to n' (`null` on the diagonal). A link's time
//! for a payload of D bytes is `latency_s + 8 D / rate_bps` (either part may be absent), which
//! gives eq. (5)'s `D_m / R` for rate-only links and the paper's fixed 0.01 s edge-cloud latency
//! for latency-only links.

use serde::{Deserialize, Serialize};

macro_rules! typed_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The id as an index into the instance's list.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

typed_id!(
    /// An edge server n in N.
    ServerId
);
typed_id!(
    /// A user u in U.
    UserId
);
typed_id!(
    /// An MoE model m in M.
    ModelId
);
typed_id!(
    /// An MoE layer l in L_m of some model.
    LayerId
);
typed_id!(
    /// An expert's position in the instance's catalogue of all sum_m L_m E_m experts
    /// (see [`ExpertCatalogue`]); the element v_i of the paper's ground set, per server.
    ExpertId
);

/// One SlimCaching instance: edge servers, cloud, links, MoE models and users.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// Free-form name (generator preset and seed, source file, ...).
    #[serde(default)]
    pub name: String,
    /// Edge servers N with their storage Q_n.
    pub servers: Vec<EdgeServer>,
    /// The cloud, which holds every expert.
    pub cloud: Cloud,
    /// Edge-edge, edge-cloud and cloud-edge links (Section III-C).
    pub backhaul: Backhaul,
    /// The MoE models M.
    pub models: Vec<MoeModel>,
    /// The users U.
    pub users: Vec<User>,
}

/// An edge server n.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeServer {
    /// Storage capacity Q_n for experts, bytes (18b).
    pub storage_bytes: u64,
    /// Computing capability, FLOP/s; each expert of model m gets 1/E_m of it (eq. (6)).
    pub compute_flops: f64,
}

/// The cloud (expert model library).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cloud {
    /// Computing capability, FLOP/s; each expert of model m gets 1/E_m of it.
    pub compute_flops: f64,
}

/// A one-way link: time for D bytes is `latency_s + 8 D / rate_bps`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// Fixed latency per transfer, seconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub latency_s: f64,
    /// Data rate R, bit/s; absent means no size-dependent term.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<f64>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Link {
    /// Transfer time of `bytes` over this link, seconds (eq. (5) and its analogues).
    pub fn transfer_time(&self, bytes: u64) -> f64 {
        self.latency_s + self.rate_bps.map_or(0.0, |r| 8.0 * bytes as f64 / r)
    }
}

/// Backhaul links among edge servers and between edge servers and the cloud.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backhaul {
    /// Declares the links symmetric (`edge_to_edge[n][n'] == edge_to_edge[n'][n]` and
    /// edge_to_cloud == cloud_to_edge), the assumption of Prop. 6; validation checks it.
    #[serde(default)]
    pub symmetric: bool,
    /// R_{n,n'}: N x N, `null` on the diagonal.
    pub edge_to_edge: Vec<Vec<Option<Link>>>,
    /// R_{n,C}, one per server.
    pub edge_to_cloud: Vec<Link>,
    /// R_{C,n}, one per server.
    pub cloud_to_edge: Vec<Link>,
}

/// An MoE model m with Top-K_m routing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoeModel {
    /// Model name (for reports).
    pub name: String,
    /// K_m, experts activated per token and layer.
    pub top_k: u32,
    /// L_m, number of MoE layers.
    pub layers: u32,
    /// E_m, experts per MoE layer.
    pub experts_per_layer: u32,
    /// b_m, bytes of one expert.
    pub expert_bytes: u64,
    /// D_m, bytes of one token's hidden state (sent up and each expert output sent down).
    pub hidden_bytes: u64,
    /// mu_m^CP, FLOPs of one expert for one token.
    pub expert_flops: f64,
}

/// A user u.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    /// Computing capability C_u, FLOP/s; each expert of model m gets C_u / E_m (eq. (6)).
    pub compute_flops: f64,
    /// n_u; when absent, the rule under eq. (4) picks the server minimising the one-bit
    /// up+down time (1/R^UL + 1/R^DL, plus any fixed link latencies), lowest index on ties.
    #[serde(default)]
    pub associated_server: Option<ServerId>,
    /// User -> server n links, one per server (eq. (3)).
    pub uplink: Vec<Link>,
    /// Server n -> user links, one per server (eq. (4)).
    pub downlink: Vec<Link>,
    /// rho_u: experts pre-cached on the user.
    #[serde(default)]
    pub local_experts: Vec<ExpertRef>,
    /// p_{u,m}: request probability of each model (models not listed have p = 0).
    pub requests: Vec<ModelRequest>,
    /// p_{u,S}: per requested model and MoE layer, the distribution over activated K_m-sets.
    pub activations: Vec<LayerActivation>,
}

/// An expert named by model, layer and index within the layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertRef {
    /// Model m.
    pub model: ModelId,
    /// MoE layer l of m.
    pub layer: LayerId,
    /// Index i in 0..E_m.
    pub expert: u32,
}

impl std::fmt::Display for ExpertRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "m{}.l{}.e{}", self.model, self.layer, self.expert)
    }
}

/// p_{u,m}.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRequest {
    /// The requested model.
    pub model: ModelId,
    /// Its request probability.
    pub p: f64,
}

/// The activation distribution of one (user, model, layer): a sparse list of (set, probability).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerActivation {
    /// Model m.
    pub model: ModelId,
    /// MoE layer l.
    pub layer: LayerId,
    /// Activated expert sets S of size K_m with probability p_{u,S}; they sum to 1.
    pub sets: Vec<ActivationSet>,
}

/// One activated expert set S with its probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivationSet {
    /// Expert indices within the layer, K_m distinct values in 0..E_m.
    pub experts: Vec<u32>,
    /// p_{u,S}.
    pub p: f64,
}

/// The numbering of all experts of an instance: model m's experts occupy a contiguous block,
/// layer by layer.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpertCatalogue {
    offsets: Vec<u32>,
    shapes: Vec<(u32, u32)>,
}

impl ExpertCatalogue {
    /// The catalogue of the given models.
    pub fn new(models: &[MoeModel]) -> Self {
        let mut offsets = Vec::with_capacity(models.len() + 1);
        let mut next = 0u32;
        for m in models {
            offsets.push(next);
            next += m.layers * m.experts_per_layer;
        }
        offsets.push(next);
        let shapes = models
            .iter()
            .map(|m| (m.layers, m.experts_per_layer))
            .collect();
        ExpertCatalogue { offsets, shapes }
    }

    /// Total number of experts E = sum_m L_m E_m.
    pub fn len(&self) -> usize {
        *self.offsets.last().unwrap_or(&0) as usize
    }

    /// True when the instance has no expert at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of models M.
    pub fn models(&self) -> usize {
        self.shapes.len()
    }

    /// (L_m, E_m) of model m.
    pub fn shape(&self, m: ModelId) -> (u32, u32) {
        self.shapes[m.index()]
    }

    /// The id of an expert; `None` when out of range.
    pub fn id(&self, r: ExpertRef) -> Option<ExpertId> {
        let &(layers, per_layer) = self.shapes.get(r.model.index())?;
        (r.layer.0 < layers && r.expert < per_layer)
            .then(|| ExpertId(self.offsets[r.model.index()] + r.layer.0 * per_layer + r.expert))
    }

    /// The model, layer and index of an expert id.
    pub fn expert_ref(&self, id: ExpertId) -> ExpertRef {
        let m = self.offsets.partition_point(|&o| o <= id.0) - 1;
        let (_, per_layer) = self.shapes[m];
        let within = id.0 - self.offsets[m];
        ExpertRef {
            model: ModelId(m as u32),
            layer: LayerId(within / per_layer),
            expert: within % per_layer,
        }
    }

    /// The model of an expert id.
    pub fn model_of(&self, id: ExpertId) -> ModelId {
        ModelId((self.offsets.partition_point(|&o| o <= id.0) - 1) as u32)
    }

    /// The ids of model m's experts.
    pub fn experts_of(&self, m: ModelId) -> impl Iterator<Item = ExpertId> {
        (self.offsets[m.index()]..self.offsets[m.index() + 1]).map(ExpertId)
    }

    /// The ids of layer l of model m.
    pub fn layer_experts(&self, m: ModelId, l: LayerId) -> impl Iterator<Item = ExpertId> {
        let per_layer = self.shapes[m.index()].1;
        let start = self.offsets[m.index()] + l.0 * per_layer;
        (start..start + per_layer).map(ExpertId)
    }
}

/// An expert placement X: which experts each edge server caches (x_{n,i} of (18c)).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Placement {
    cached: Vec<Vec<bool>>,
}

impl Placement {
    /// The empty placement for `servers` servers and `experts` experts.
    pub fn empty(servers: usize, experts: usize) -> Self {
        Placement {
            cached: vec![vec![false; experts]; servers],
        }
    }

    /// The empty placement shaped for an instance.
    pub fn empty_for(instance: &Instance) -> Self {
        Self::empty(
            instance.servers.len(),
            ExpertCatalogue::new(&instance.models).len(),
        )
    }

    /// Number of servers.
    pub fn servers(&self) -> usize {
        self.cached.len()
    }

    /// Number of experts in the catalogue.
    pub fn experts(&self) -> usize {
        self.cached.first().map_or(0, Vec::len)
    }

    /// x_{n,i}.
    pub fn contains(&self, n: ServerId, e: ExpertId) -> bool {
        self.cached[n.index()][e.index()]
    }

    /// Sets x_{n,i} = 1; returns whether it was 0.
    pub fn insert(&mut self, n: ServerId, e: ExpertId) -> bool {
        !std::mem::replace(&mut self.cached[n.index()][e.index()], true)
    }

    /// Sets x_{n,i} = 0; returns whether it was 1.
    pub fn remove(&mut self, n: ServerId, e: ExpertId) -> bool {
        std::mem::replace(&mut self.cached[n.index()][e.index()], false)
    }

    /// The experts cached on server n, in id order.
    pub fn experts_on(&self, n: ServerId) -> impl Iterator<Item = ExpertId> + '_ {
        self.cached[n.index()]
            .iter()
            .enumerate()
            .filter(|(_, &c)| c)
            .map(|(e, _)| ExpertId(e as u32))
    }

    /// Number of (server, expert) pairs cached.
    pub fn len(&self) -> usize {
        self.cached
            .iter()
            .map(|s| s.iter().filter(|&&c| c).count())
            .sum()
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds every pair of `other` (same shape).
    pub fn union_with(&mut self, other: &Placement) {
        for (mine, theirs) in self.cached.iter_mut().zip(&other.cached) {
            for (a, &b) in mine.iter_mut().zip(theirs) {
                *a |= b;
            }
        }
    }

    /// The placement as lists of expert references per server, for JSON outputs.
    pub fn to_lists(&self, catalogue: &ExpertCatalogue) -> Vec<Vec<ExpertRef>> {
        (0..self.servers())
            .map(|n| {
                self.experts_on(ServerId(n as u32))
                    .map(|e| catalogue.expert_ref(e))
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(layers: u32, experts: u32) -> MoeModel {
        MoeModel {
            name: "m".into(),
            top_k: 1,
            layers,
            experts_per_layer: experts,
            expert_bytes: 1,
            hidden_bytes: 1,
            expert_flops: 1.0,
        }
    }

    #[test]
    fn catalogue_numbers_models_then_layers_then_experts() {
        // Model 0: 2 layers x 3 experts -> ids 0..6; model 1: 1 layer x 2 experts -> ids 6..8.
        let cat = ExpertCatalogue::new(&[model(2, 3), model(1, 2)]);
        assert_eq!(cat.len(), 8);
        let r = ExpertRef {
            model: ModelId(0),
            layer: LayerId(1),
            expert: 2,
        };
        assert_eq!(cat.id(r), Some(ExpertId(5)));
        assert_eq!(cat.expert_ref(ExpertId(5)), r);
        assert_eq!(cat.expert_ref(ExpertId(6)).model, ModelId(1));
        assert_eq!(cat.model_of(ExpertId(7)), ModelId(1));
        assert_eq!(
            cat.id(ExpertRef {
                model: ModelId(1),
                layer: LayerId(1),
                expert: 0
            }),
            None
        );
        let layer: Vec<_> = cat.layer_experts(ModelId(0), LayerId(1)).collect();
        assert_eq!(layer, vec![ExpertId(3), ExpertId(4), ExpertId(5)]);
    }

    #[test]
    fn link_time_adds_latency_and_size_over_rate() {
        // 1000 bytes = 8000 bits at 8000 bit/s is 1 s, plus 0.5 s fixed latency.
        let l = Link {
            latency_s: 0.5,
            rate_bps: Some(8000.0),
        };
        assert_eq!(l.transfer_time(1000), 1.5);
    }
}
