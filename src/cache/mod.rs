//! Expert caches over token streams (papers 002 and 004): eviction policies, routers, and the
//! loop that replays a trace through both.
//!
//! * [`policy`]: the [`policy::Policy`] trait every eviction policy implements, the
//!   [`policy::Simulation`] that counts misses and lifetimes, and LRU;
//! * [`belady`]: Belady's MIN over a known stream (the fixed-routing optimum);
//! * [`bounds`]: the exact offline bounds (MILPs, exhaustive search) and their reports;
//! * [`claims`]: paper 002's offline caching claims (Sec. 4.8);
//! * [`mutate`]: moves on offline instances for the worst-case search and shrinking;
//! * [`router`]: the [`router::Router`] trait every (cache-aware) router implements, and the
//!   original top-K;
//! * [`routers`]: the cache-aware routers of paper 002 and the "route, then access" replay;
//! * [`quality`]: quality proxies of a routing (top-K kept, router mass kept, mean rank);
//! * [`pareto`]: knob grids, the parallel sweep and its Pareto fronts.

pub mod belady;
pub mod bounds;
pub mod claims;
pub mod mutate;
pub mod pareto;
pub mod policy;
pub mod quality;
pub mod router;
pub mod routers;
