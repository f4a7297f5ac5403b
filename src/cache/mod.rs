//! Expert caches over token streams (papers 002 and 004): eviction policies, routers, and the
//! loop that replays a trace through both.
//!
//! * [`policy`]: the [`policy::Policy`] trait every eviction policy implements, the
//!   [`policy::Simulation`] that counts misses and lifetimes, and LRU;
//! * [`router`]: the [`router::Router`] trait every (cache-aware) router implements, and the
//!   original top-K.

pub mod policy;
pub mod router;
