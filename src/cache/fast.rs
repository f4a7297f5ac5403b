//! The replay `moe-opt replay` runs: a trace held in columns ([`Packed`]: a binary trace as
//! read, or a JSON one converted once), each cache's policy statically dispatched, a step's
//! experts read straight from the id column (no `Box<dyn Policy>`, no token structs). It
//! reports what [`super::policies::replay_trace`] reports, to the bit: the same policies, hooks
//! and statistics, only the dispatch and the data layout differ (tests/cache_traces.rs
//! compares the two on every policy). LRU on a per-layer cache of at most 256 experts, the
//! common case, has a loop of its own (`SmallLru`): byte-wide recency links and a 256-bit
//! residency set, no bounds checks and no per-step buffers; so has Belady
//! (`belady::replay_bytes`: next uses chunk by chunk, not a table of the whole stream).

use formulations::cache::binary::{Ids, Packed};
use formulations::Error;

use super::belady::{self, Belady, NEVER};
use super::import::FrequencyWarmStart;
use super::policies::{
    check_replay, fill_scores, replay_caches, Fifo, Lfu, PolicySpec, ReplayShape, Scope,
    SmoeWindow, TraceReplay, ZipMoeFreq,
};
use super::policy::{CacheStats, Lru, Policy, Scores, Simulation, Tally};

/// Replays `packed` under its original routing through `policy` with capacity `capacity` (per
/// layer, or of the pool), as [`super::policies::replay_trace`] does, with its refusals.
pub fn replay_packed(
    packed: &Packed,
    policy: PolicySpec,
    capacity: usize,
    scope: Scope,
    warm_start: Option<&FrequencyWarmStart>,
) -> Result<TraceReplay, Error> {
    let shape = ReplayShape {
        name: &packed.name,
        experts: packed.experts,
        top_k: packed.top_k,
        layers: packed.layers,
    };
    check_replay(
        &shape,
        || packed.has_logits(),
        policy,
        capacity,
        scope,
        warm_start,
    )?;
    Ok(replay_caches(
        policy,
        capacity,
        scope,
        packed.layers,
        |layer, per| {
            let cache = Cache {
                packed,
                layer,
                policy,
                capacity,
                counts: warm_start.map(|w| w.cache_counts(layer)),
            };
            cache.replay(per)
        },
    ))
}

/// One cache of a replay: one layer's, or the pool of every layer (`layer` None).
struct Cache<'a> {
    packed: &'a Packed,
    layer: Option<usize>,
    policy: PolicySpec,
    capacity: usize,
    /// LFU's warm start, one count per id of the cache.
    counts: Option<Vec<u64>>,
}

impl Cache<'_> {
    /// Ids of the cache: E, or L x E for the pool.
    fn universe(&self) -> usize {
        match self.layer {
            Some(_) => self.packed.experts,
            None => self.packed.experts * self.packed.layers,
        }
    }

    /// The statistics and the ids resident at the end; for the pool, adds each layer's
    /// requests and loads to `per`.
    fn replay(self, per: &mut [(u64, u64)]) -> (CacheStats, usize) {
        let (c, u) = (self.capacity, self.universe());
        match (self.policy, self.counts.clone()) {
            (PolicySpec::Lfu, Some(counts)) => self.run(Lfu::with_counts(c, counts), per),
            (PolicySpec::Lfu, None) => self.run(Lfu::new(c, u), per),
            (PolicySpec::Lru, _) => match (&self.packed.ids, self.layer) {
                (Ids::U8(ids), Some(layer)) => self.small_lru(ids, layer),
                _ => self.run(Lru::new(c, u), per),
            },
            (PolicySpec::Fifo, _) => self.run(Fifo::new(c, u), per),
            (PolicySpec::SmoeWindow { n }, _) => self.run(SmoeWindow::new(c, u, n), per),
            (PolicySpec::ZipMoeFreq, _) => self.run(ZipMoeFreq::new(c, u), per),
            (PolicySpec::Belady, _) => match (&self.packed.ids, self.layer) {
                (Ids::U8(ids), Some(layer)) if self.packed.tokens < NEVER as usize => {
                    let (p, ids): (_, &[u8]) = (self.packed, ids);
                    let (k, stride) = (p.top_k, p.layers * p.top_k);
                    let step = |t: usize| &ids[t * stride + layer * k..][..k];
                    belady::replay_bytes(c, p.experts, p.tokens, k, step)
                }
                _ => {
                    let requests = match self.layer {
                        Some(layer) => self.packed.layer_requests(layer),
                        None => self.packed.pooled_requests(),
                    };
                    self.run(Belady::new(c, &requests), per)
                }
            },
        }
    }

    /// The steps through `policy`, statically dispatched.
    fn run<P: Policy>(&self, policy: P, per: &mut [(u64, u64)]) -> (CacheStats, usize) {
        let p = self.packed;
        let (e, k, l) = (p.experts, p.top_k, p.layers);
        let mut sim = Simulation::new(policy, self.universe());
        // Routings of the cache: one layer's (every L-th from `layer`), or all in order.
        let (first, stride, count) = match self.layer {
            Some(layer) => (layer, l, p.tokens),
            None => (0, 1, p.routings()),
        };
        let logits = self.policy.needs_scores().then(|| p.all_logits()).flatten();
        let (mut ids, mut scores) = (Vec::with_capacity(k), Vec::with_capacity(e));
        let mut z = Vec::with_capacity(e);
        for i in 0..count {
            let r = first + i * stride;
            let layer = r % l;
            let base = if self.layer.is_some() {
                0
            } else {
                (layer * e) as u32
            };
            ids.clear();
            p.ids.extend_into(r * k..(r + 1) * k, &mut ids);
            if base > 0 {
                ids.iter_mut().for_each(|x| *x += base);
            }
            let has = logits.is_some_and(|section| {
                section.read(r * e, e, &mut z);
                fill_scores(&mut scores, Some(&z))
            });
            let step_scores = has.then_some(Scores {
                first: base,
                values: &scores,
            });
            let loads = sim.step(&ids, step_scores).len() as u64;
            if let Some(slot) = per.get_mut(layer) {
                slot.0 += k as u64;
                slot.1 += loads;
            }
        }
        (sim.stats(), sim.policy().resident().len())
    }

    /// LRU on one layer of byte ids (`SmallLru`): the same evictions and statistics as
    /// [`Lru`] in a [`Simulation`].
    fn small_lru(&self, ids: &[u8], layer: usize) -> (CacheStats, usize) {
        let p = self.packed;
        let (k, stride) = (p.top_k, p.layers * p.top_k);
        let mut lru = SmallLru::new(self.capacity);
        let mut tally = Tally::new(p.experts);
        for t in 0..p.tokens {
            let start = t * stride + layer * k;
            lru.step(&ids[start..start + k], &mut tally);
        }
        (tally.stats(), lru.len)
    }
}

/// No id: the end of the recency list.
const NIL: u16 = 256;

/// [`Lru`] over ids below 256: a doubly linked recency list (head the least recent) in byte-
/// indexed arrays and a 256-bit residency set.
struct SmallLru {
    capacity: usize,
    len: usize,
    resident: [u64; 4],
    prev: [u16; 256],
    next: [u16; 256],
    head: u16,
    tail: u16,
}

impl SmallLru {
    fn new(capacity: usize) -> Self {
        SmallLru {
            capacity,
            len: 0,
            resident: [0; 4],
            prev: [NIL; 256],
            next: [NIL; 256],
            head: NIL,
            tail: NIL,
        }
    }

    fn contains(&self, id: u8) -> bool {
        self.resident[usize::from(id >> 6)] >> (id & 63) & 1 == 1
    }

    fn flip(&mut self, id: u8) {
        self.resident[usize::from(id >> 6)] ^= 1 << (id & 63);
    }

    fn unlink(&mut self, id: u8) {
        let (p, n) = (self.prev[usize::from(id)], self.next[usize::from(id)]);
        match self.prev.get(usize::from(n)) {
            Some(_) => self.prev[usize::from(n)] = p,
            None => self.tail = p,
        }
        match self.next.get_mut(usize::from(p)) {
            Some(slot) => *slot = n,
            None => self.head = n,
        }
    }

    fn append(&mut self, id: u8) {
        let id16 = u16::from(id);
        self.prev[usize::from(id)] = self.tail;
        self.next[usize::from(id)] = NIL;
        match self.next.get_mut(usize::from(self.tail)) {
            Some(slot) => *slot = id16,
            None => self.head = id16,
        }
        self.tail = id16;
    }

    /// One step as [`Lru`]'s hooks take it: the step's hits leave the list, each miss evicts
    /// the head when full, then the step's ids join the tail in listed order.
    fn step(&mut self, ids: &[u8], tally: &mut Tally) {
        for &id in ids {
            if self.contains(id) {
                self.unlink(id);
            }
        }
        for &id in ids {
            if self.contains(id) {
                continue;
            }
            if self.len == self.capacity {
                let victim = self.head as u8;
                self.unlink(victim);
                self.flip(victim);
                self.len -= 1;
                tally.evicted(u32::from(victim));
            }
            self.flip(id);
            self.len += 1;
            tally.loaded(u32::from(id));
        }
        for &id in ids {
            self.append(id);
        }
        tally.end_step(ids.len());
    }
}
