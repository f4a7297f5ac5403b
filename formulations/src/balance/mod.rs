//! Balance: DeepSeek's expert-parallel load balancing (EPLB, <https://github.com/deepseek-ai/EPLB>)
//! as an optimisation problem, solved exactly.
//!
//! Per MoE layer: E logical experts with loads w_e, S physical slots on G GPUs (S / G each),
//! N nodes, K expert groups. A plan gives every expert c_e >= 1 replicas (sum S) and puts
//! every replica in a slot; a replica carries w_e / c_e (EPLB's even split). Minimise the
//! busiest GPU's load; options: at most one replica of an expert per GPU, and EPLB's
//! hierarchical locality (whole groups per node, only their replicas there). Over layers the
//! objective is the sum of the layers' maxima; layers are independent.
//!
//! * [`model`]: the instance (serde JSON), its shape and the plan (EPLB's `phy2log`);
//! * [`validate`]: the rules an instance must satisfy, with the failing field named;
//! * [`mod@evaluate`]: the one evaluator (feasibility, GPU loads, balancedness, replicas moved);
//! * [`bounds`]: lower bounds on a layer's optimum, with their proofs;
//! * [`milp`]: the exact MILP of a layer (counts by binaries, copies per count).

pub mod bounds;
pub mod evaluate;
pub mod milp;
pub mod model;
pub mod validate;

pub use evaluate::{evaluate, Evaluation, LayerLoad, Spread};
pub use model::{Instance, Plan, Shape};

use std::path::Path;

use crate::error::{read_json, Error};

/// Reads and validates an instance file.
pub fn load(path: &Path) -> Result<Instance, Error> {
    let instance: Instance = read_json(path)?;
    validate::validate(&instance).map_err(|e| e.in_file(path))?;
    Ok(instance)
}
