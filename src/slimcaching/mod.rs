//! SlimCaching (paper 000): the paper's algorithms and baselines, instance generators and the
//! importer of real activation counts, and what those two share: the radio network model
//! ([`network`]), the model shapes ([`architectures`]) and the users' demands ([`demand`]). The
//! formulation (instance, evaluator, MILP) is `formulations::slimcaching`.
//!
//! ## References
//! ../shared/papers/000_e52eafead23a117e.txt: Q. Chen, X. Chen, K. Huang, "SlimCaching: Edge
//! Caching of Mixture-of-Experts for Distributed Inference".

pub mod algorithms;
pub mod architectures;
pub mod claims;
pub mod commands;
pub mod demand;
pub mod generate;
pub mod import;
pub mod methods;
pub mod mutate;
pub mod network;
pub mod parametric;
pub mod premises;
