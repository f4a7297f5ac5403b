//! ZipMoE (paper 003): the cache-pool planner of App. C and D and its checks.

pub mod planning;
