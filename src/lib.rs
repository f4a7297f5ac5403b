//! moe-opt: the papers' algorithms and baselines, instance generators and importers, and the
//! orchestration behind the `moe-opt` command line. Problem definitions, evaluators and exact
//! MILPs live in the `formulations` crate; generic checks of set functions in `verification`.
#![deny(missing_docs)]

pub mod balance;
pub mod cache;
pub mod claims;
pub mod cli;
pub mod counts;
pub mod eplb;
pub mod export;
pub mod generate;
pub mod mutate;
pub mod named;
pub mod npy;
pub mod parametric;
pub mod prism;
pub mod problem;
pub mod problems;
pub mod progress;
pub mod registry;
pub mod render;
pub mod report;
pub mod results_page;
pub mod slimcaching;
pub mod smoe;
pub mod sweep;
pub mod sweepable;
pub mod tier;
pub mod verdicts;
pub mod verify;
pub mod zipmoe;
