//! SlimCaching: expert caching on cooperating edge servers (paper 000).
//!
//! Edge servers N with storage Q_n, users U each associated with a server n_u and holding some
//! experts rho_u locally, MoE models M with Top-K_m routing. A token of user u that activates
//! the expert set S in layer l of model m runs locally if u holds all of S; otherwise its hidden
//! state goes to n_u, then to other edge servers holding the rest, and to the cloud for experts
//! no edge server caches (eqs. (5)-(12)). P1 (18) chooses the placement X (x_{n,i} binary) that
//! maximises the latency reduction
//!
//! F(X) = (1/U) sum_u sum_m p_{u,m} sum_l sum_S p_{u,S} (T^max_{u,S} - T^token_{u,S}(X))   (17)
//!
//! subject to sum_i b_{m(i)} x_{n,i} <= Q_n on every server (18b).
//!
//! * [`model`]: the instance and the placement (serde JSON);
//! * [`validate`]: the rules an instance must satisfy, with the failing field named;
//! * [`evaluate`]: the one evaluator of (5)-(17), [`evaluate::LatencyModel`];
//! * [`milp`]: the exact MILP of P1 and of the subproblems P2_n;
//! * [`lagrangian`]: a proved upper bound on OPT of P1 at the paper's sizes (the Lagrangian
//!   relaxation of the storage rows).
//!
//! ## References
//! ../shared/papers/000_e52eafead23a117e.txt: Q. Chen, X. Chen, K. Huang, "SlimCaching: Edge
//! Caching of Mixture-of-Experts for Distributed Inference".

pub mod evaluate;
pub mod lagrangian;
pub mod milp;
pub mod model;
pub mod validate;

pub use evaluate::{Evaluation, IncrementalObjective, LatencyModel, Route, RoutingDemand};
pub use milp::{ExactSolution, Scope, SlimCachingMilp};
pub use model::{
    ActivationSet, Backhaul, Cloud, EdgeServer, ExpertCatalogue, ExpertId, ExpertRef, Instance,
    LayerActivation, LayerId, Link, ModelId, ModelRequest, MoeModel, Placement, ServerId, User,
    UserId,
};

use std::path::Path;

use crate::error::{read_json, Error};

/// Reads and validates an instance file.
pub fn load(path: &Path) -> Result<Instance, Error> {
    let instance: Instance = read_json(path)?;
    validate::validate(&instance).map_err(|e| e.in_file(path))?;
    Ok(instance)
}
