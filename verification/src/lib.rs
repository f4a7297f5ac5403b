//! Generic, MoE-agnostic verification: checks of set functions (monotonicity, sub- and
//! supermodularity, supermodular curvature, Lemma 1 of paper 000), approximation-ratio
//! statistics that count only proved optima, worst-case search and shrinking, and proptest
//! strategies. Nothing here knows a formulation: problems adapt themselves to [`SetFunction`]
//! and to the closures of [`search`].
#![deny(missing_docs)]

pub mod ratio;
pub mod search;
pub mod setfn;
pub mod strategies;

pub use ratio::{summarize, Direction, Observation, RatioSummary, Reference};
pub use setfn::{
    check_lemma_one, check_monotone, check_submodular, check_supermodular, supermodular_curvature,
    violations, worst_slack, Curvature, Mode, Property, SetFunction, Slack, Strict, Tolerance,
    Verdict, Witness,
};
