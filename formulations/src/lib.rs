//! moe-opt's formulations: for each problem, the data model (serde), its validation, the one
//! objective evaluator and the exact MILP. This crate knows no heuristic: the papers'
//! algorithms live in the `moe-opt` package and are judged by the evaluators defined here.
//!
//! Problems: [`slimcaching`] (paper 000), [`prism`] (paper 001), [`zipmoe`] (paper 003), [`cache`]
//! (papers 002 and 004), [`balance`] (DeepSeek's EPLB problem, solved exactly). Shared: [`milp`] (a solver-independent MILP with CPLEX
//! LP output and a HiGHS back end) and [`error`].
#![deny(missing_docs)]

pub mod balance;
pub mod cache;
pub mod error;
pub mod milp;
pub mod prism;
pub mod problem;
pub mod slimcaching;
pub mod smoe;
pub mod zipmoe;

pub use error::{Error, ValidationError};
pub use problem::ProblemKind;
