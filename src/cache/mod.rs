//! Expert caches over token streams (papers 002 and 004): eviction policies, routers, and the
//! loop that replays a trace through both.
//!
//! * [`policy`]: the [`policy::Policy`] trait every eviction policy implements, the
//!   [`policy::Simulation`] that counts misses and lifetimes, and LRU;
//! * [`policies`]: LFU, FIFO, SMoE's score window, ZipMoE's frequency counts, policy names,
//!   and the replay of a trace through per-layer caches or one pool;
//! * [`router`]: the [`router::Router`] trait every (cache-aware) router implements, and the
//!   original top-K;
//! * [`import`]: token logs (JSON Lines) and activation counts;
//! * [`generate`]: the seeded logit generator with temporal locality and its presets;
//! * [`stats`]: locality statistics of a trace and the calibration of the generator;
//! * [`commands`]: what the command line calls (generate, import, replay, calibrate).

pub mod commands;
pub mod generate;
pub mod import;
pub mod policies;
pub mod policy;
pub mod router;
pub mod stats;
