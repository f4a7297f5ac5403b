//! The balance instance (serde JSON) and the shape of its layers.
//!
//! ```json
//! { "problem": "balance", "name": "flashlb",
//!   "loads": [[600, 560, 120, 120, 20, 10, 10, 10]],
//!   "num_replicas": 16, "num_gpus": 8, "num_nodes": 1, "num_groups": 1,
//!   "one_replica_per_gpu": false, "hierarchical": false,
//!   "current": [[0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 0, 1, 0, 1, 2, 3]] }
//! ```
//!
//! A plan is EPLB's `phy2log` per layer: `plan[layer][slot]` is the logical expert physical
//! slot `slot` holds, and slot `p` lives on GPU `p / (num_replicas / num_gpus)` (EPLB's layout:
//! every GPU has the same number of slots, every slot holds a replica). GPU `g` is on node
//! `g / (num_gpus / num_nodes)`; group `q` holds the experts `q * E / num_groups ..` (EPLB's
//! consecutive groups).

use serde::{Deserialize, Serialize};

use crate::problem::ProblemKind;

fn one() -> usize {
    1
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One balance instance: expert loads per layer and EPLB's arguments and options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// Always `balance`.
    pub problem: ProblemKind,
    /// A label.
    #[serde(default)]
    pub name: String,
    /// `loads[layer][logical expert]`: the expert's load (e.g. tokens routed to it), finite
    /// and >= 0; every layer has the same experts.
    pub loads: Vec<Vec<f64>>,
    /// Physical expert slots per layer (EPLB's `num_replicas`): a multiple of `num_gpus`, at
    /// least the number of experts.
    pub num_replicas: usize,
    /// GPUs (EPLB's `num_gpus`).
    pub num_gpus: usize,
    /// Server nodes (EPLB's `num_nodes`); `num_gpus` is a multiple of it.
    #[serde(default = "one")]
    pub num_nodes: usize,
    /// Expert groups of consecutive experts (EPLB's `num_groups`).
    #[serde(default = "one")]
    pub num_groups: usize,
    /// At most one replica of an expert per GPU.
    #[serde(default, skip_serializing_if = "is_false")]
    pub one_replica_per_gpu: bool,
    /// EPLB's hierarchical locality: each node hosts `num_groups / num_nodes` whole groups and
    /// only the replicas of their experts.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hierarchical: bool,
    /// The placement in service (a `phy2log` per layer), for migration: replicas moved are
    /// counted against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<Vec<Vec<usize>>>,
}

/// What every layer of an instance shares: sizes and options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// Logical experts E.
    pub experts: usize,
    /// Physical slots S.
    pub slots: usize,
    /// GPUs G.
    pub gpus: usize,
    /// Nodes N.
    pub nodes: usize,
    /// Groups K.
    pub groups: usize,
    /// At most one replica of an expert per GPU.
    pub one_per_gpu: bool,
    /// Whole groups per node.
    pub hierarchical: bool,
}

impl Shape {
    /// Slots per GPU, m = S / G.
    pub fn per_gpu(&self) -> usize {
        self.slots / self.gpus
    }

    /// The GPU of a slot.
    pub fn gpu_of(&self, slot: usize) -> usize {
        slot / self.per_gpu()
    }

    /// GPUs per node.
    pub fn gpus_per_node(&self) -> usize {
        self.gpus / self.nodes
    }

    /// The node of a GPU.
    pub fn node_of(&self, gpu: usize) -> usize {
        gpu / self.gpus_per_node()
    }

    /// Experts per group.
    pub fn group_size(&self) -> usize {
        self.experts / self.groups
    }

    /// The group of an expert.
    pub fn group_of(&self, expert: usize) -> usize {
        expert / self.group_size()
    }

    /// Groups per node (hierarchical).
    pub fn groups_per_node(&self) -> usize {
        self.groups / self.nodes
    }

    /// The most replicas an expert may have: G under one replica per GPU (G / N when
    /// hierarchical too: its node's GPUs), else every redundant slot (S - E + 1; S / N - E / N
    /// + 1 when hierarchical: a node's slots hold only its own experts).
    pub fn cap(&self) -> usize {
        let (slots, experts, gpus) = if self.hierarchical {
            (
                self.slots / self.nodes,
                self.experts / self.nodes,
                self.gpus_per_node(),
            )
        } else {
            (self.slots, self.experts, self.gpus)
        };
        let redundant = slots - experts + 1;
        if self.one_per_gpu {
            gpus.min(redundant)
        } else {
            redundant
        }
    }
}

impl Instance {
    /// Sizes and options.
    pub fn shape(&self) -> Shape {
        Shape {
            experts: self.loads.first().map_or(0, Vec::len),
            slots: self.num_replicas,
            gpus: self.num_gpus,
            nodes: self.num_nodes,
            groups: self.num_groups,
            one_per_gpu: self.one_replica_per_gpu,
            hierarchical: self.hierarchical,
        }
    }

    /// The same loads and arguments with another number of slots (the redundancy curve).
    pub fn with_slots(&self, slots: usize) -> Instance {
        Instance {
            num_replicas: slots,
            current: None,
            ..self.clone()
        }
    }

    /// The instance of one layer (its own `current`, if any).
    pub fn layer(&self, l: usize) -> Instance {
        Instance {
            loads: vec![self.loads[l].clone()],
            current: self.current.as_ref().map(|c| vec![c[l].clone()]),
            ..self.clone()
        }
    }
}

/// A plan: `phy2log[layer][slot]`, the logical expert each physical slot holds (module doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// `[layer][physical slot]`: the logical expert (EPLB's `phy2log`).
    pub phy2log: Vec<Vec<usize>>,
}

impl Plan {
    /// `[layer][expert]`: the replicas of each expert (EPLB's `logcnt`).
    pub fn counts(&self, experts: usize) -> Vec<Vec<usize>> {
        self.phy2log
            .iter()
            .map(|row| replica_counts(row, experts))
            .collect()
    }

    /// `[layer][expert]`: the slots of each expert in ascending order (EPLB's `log2phy`
    /// without padding; a replica's rank is its place in this list).
    pub fn log2phy(&self, experts: usize) -> Vec<Vec<Vec<usize>>> {
        self.phy2log
            .iter()
            .map(|row| {
                let mut out = vec![Vec::new(); experts];
                for (slot, &e) in row.iter().enumerate() {
                    out[e].push(slot);
                }
                out
            })
            .collect()
    }
}

/// The replicas of each expert in one layer's `phy2log` (entries must be < `experts`).
pub fn replica_counts(phy2log: &[usize], experts: usize) -> Vec<usize> {
    let mut c = vec![0; experts];
    for &e in phy2log {
        c[e] += 1;
    }
    c
}
