//! Expert caches over token streams (papers 002 and 004): eviction policies, routers, and the
//! loop that replays a trace through both.
//!
//! * [`policy`]: the [`policy::Policy`] trait every eviction policy implements (its hooks
//!   and the one step written on them), the [`policy::Simulation`] that counts misses and
//!   lifetimes, and LRU;
//! * [`policies`]: LFU, FIFO, SMoE's score window, ZipMoE's frequency counts, policy names,
//!   and the replay of a trace through per-layer caches or one pool;
//! * [`fast`]: the replay the command line runs, over a trace held in columns (a binary
//!   trace as read);
//! * [`import`]: token logs (JSON Lines) and activation counts;
//! * [`libcachesim`]: libCacheSim's `oracleGeneral` and csv traces, out and back in;
//! * [`generate`]: the seeded logit generator with temporal locality and its presets;
//! * [`stats`]: locality statistics of a trace and the calibration of the generator;
//! * [`commands`]: what the command line calls (generate, import, replay, calibrate);
//! * [`belady`]: Belady's MIN over a known stream (the fixed-routing optimum);
//! * [`mrc`]: miss-ratio curves of LRU and Belady at every capacity in one pass;
//! * [`bounds`]: the exact offline bounds (MILPs, exhaustive search) and their reports;
//! * [`claims`]: paper 002's offline caching claims (Sec. 4.8);
//! * [`parametric`]: parametric families breaking them;
//! * [`mutate`]: moves on offline instances for the worst-case search and shrinking;
//! * [`router`]: the [`router::Router`] trait every (cache-aware) router implements, the
//!   [`router::Row`] a routing is read as, and the original top-K;
//! * [`routers`]: the cache-aware routers of paper 002 and the "route, then access" replay;
//! * [`quality`]: quality proxies of a routing (top-K kept, router mass kept, mean rank);
//! * [`pareto`]: knob grids, the parallel sweep and its Pareto fronts.

pub mod belady;
pub mod bounds;
pub mod claims;
pub mod commands;
pub mod entry;
pub mod fast;
pub mod generate;
pub mod import;
pub mod libcachesim;
pub mod mrc;
pub mod mutate;
pub mod parametric;
pub mod pareto;
pub mod policies;
pub mod policy;
pub mod premises;
pub mod quality;
pub mod router;
pub mod routers;
pub mod stats;
