//! Prism (paper 001): activation-aware expert placement on heterogeneous edge servers. The
//! data model, evaluators and MILP live in `formulations::prism`; here are the paper's
//! algorithms, the baselines it compares with, and DeepSeek's EPLB.

pub mod algorithms;
pub mod baselines;
pub mod eplb;
pub mod methods;
pub mod claims;
pub mod commands;
