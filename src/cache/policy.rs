//! Eviction policies and the simulation that measures them.
//!
//! A policy holds at most `capacity` ids of a universe (experts of one layer, or `layer * E +
//! expert` for a pool across layers). A step requests several ids together (the K experts of a
//! token): after [`Policy::access`] all of them are resident, so a capacity below the largest
//! step is refused. Misses are the loads; the miss rate is loads over requested ids (paper 002
//! eq. (4)).

use formulations::cache::model::Requests;

/// Router scores of the request's layer: `values[e]` is the score of id `first + e`.
#[derive(Debug, Clone, Copy)]
pub struct Scores<'a> {
    /// Id of the layer's expert 0 in the policy's universe.
    pub first: u32,
    /// One score per expert of the layer (router probabilities).
    pub values: &'a [f32],
}

/// One step as a policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Step index, from 0.
    pub time: usize,
    /// The ids requested together, best-ranked first where the rank is known.
    pub ids: &'a [u32],
    /// The router's scores over the request's layer, where known (SMoE's eq. (3) needs them).
    pub scores: Option<Scores<'a>>,
}

/// An eviction policy.
pub trait Policy {
    /// The policy's name as on the command line.
    fn name(&self) -> &'static str;
    /// How many ids it holds at most.
    fn capacity(&self) -> usize;
    /// Whether `id` is resident.
    fn contains(&self, id: u32) -> bool;
    /// Makes every id of `request` resident, appending each id it loads to `loaded` and each
    /// id it evicts to `evicted`.
    fn access(&mut self, request: &Request, loaded: &mut Vec<u32>, evicted: &mut Vec<u32>);
    /// The resident ids, in increasing order.
    fn resident(&self) -> Vec<u32>;
}

/// Misses, loads and cache lifetimes of one replay.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CacheStats {
    /// Steps replayed.
    pub steps: u64,
    /// Ids requested (sum of step sizes).
    pub requests: u64,
    /// Requested ids that were resident.
    pub hits: u64,
    /// Requested ids that had to be loaded (misses).
    pub loads: u64,
    /// loads / requests (paper 002 eq. (4)); 0 for an empty replay.
    pub miss_rate: f64,
    /// Completed residencies (an id loaded and later evicted).
    pub evictions: u64,
    /// Mean residency length in steps, from load to eviction, over completed residencies and,
    /// censored at the end of the replay, those still resident (paper 002 Table 2's lifetime).
    pub lifetime_mean_steps: f64,
    /// Population standard deviation of the same residency lengths.
    pub lifetime_std_steps: f64,
}

/// Replays steps through a policy, counting misses and residency lengths.
pub struct Simulation<P> {
    policy: P,
    loaded_at: Vec<usize>,
    loaded: Vec<u32>,
    evicted: Vec<u32>,
    stats: CacheStats,
    lifetimes: Vec<u64>,
    time: usize,
}

const ABSENT: usize = usize::MAX;

impl<P: Policy> Simulation<P> {
    /// A simulation over a universe of `universe` ids, cold start.
    pub fn new(policy: P, universe: usize) -> Self {
        Simulation {
            policy,
            loaded_at: vec![ABSENT; universe],
            loaded: Vec::new(),
            evicted: Vec::new(),
            stats: CacheStats {
                steps: 0,
                requests: 0,
                hits: 0,
                loads: 0,
                miss_rate: 0.0,
                evictions: 0,
                lifetime_mean_steps: 0.0,
                lifetime_std_steps: 0.0,
            },
            lifetimes: Vec::new(),
            time: 0,
        }
    }

    /// The policy (its cache state).
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// Replays one step; returns the ids it loaded.
    pub fn step(&mut self, ids: &[u32], scores: Option<Scores>) -> &[u32] {
        self.loaded.clear();
        self.evicted.clear();
        let request = Request {
            time: self.time,
            ids,
            scores,
        };
        self.policy
            .access(&request, &mut self.loaded, &mut self.evicted);
        for &id in &self.evicted {
            let start = std::mem::replace(&mut self.loaded_at[id as usize], ABSENT);
            self.lifetimes.push((self.time - start) as u64);
        }
        for &id in &self.loaded {
            self.loaded_at[id as usize] = self.time;
        }
        self.stats.steps += 1;
        self.stats.requests += ids.len() as u64;
        self.stats.loads += self.loaded.len() as u64;
        self.stats.evictions += self.evicted.len() as u64;
        self.time += 1;
        &self.loaded
    }

    /// The statistics so far, residencies still open counted as ending now.
    pub fn stats(&self) -> CacheStats {
        let mut stats = self.stats.clone();
        stats.hits = stats.requests - stats.loads;
        stats.miss_rate = if stats.requests == 0 {
            0.0
        } else {
            stats.loads as f64 / stats.requests as f64
        };
        let open = self
            .loaded_at
            .iter()
            .filter(|&&t| t != ABSENT)
            .map(|&t| (self.time - t) as u64);
        let all: Vec<u64> = self.lifetimes.iter().copied().chain(open).collect();
        if !all.is_empty() {
            let n = all.len() as f64;
            let mean = all.iter().sum::<u64>() as f64 / n;
            let var = all.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
            stats.lifetime_mean_steps = mean;
            stats.lifetime_std_steps = var.sqrt();
        }
        stats
    }
}

/// Replays a fixed request stream (no scores) through a policy.
pub fn replay<P: Policy>(policy: P, requests: &Requests) -> CacheStats {
    let mut sim = Simulation::new(policy, requests.universe);
    for step in requests.steps() {
        sim.step(step, None);
    }
    sim.stats()
}

/// Least recently used, with paper 002's order among ids used in the same step (Sec. 4.2:
/// "removing experts with higher router weights first"): the ids of a step count as used in
/// their listed order, so the best-ranked one counts as least recent and leaves first. When
/// ranks are lost (a trace sorted by id), this reads the listed order as the rank order.
///
/// Implementation: a doubly linked recency list over the universe (head = least recent), O(1)
/// per requested id. A step first unlinks its hits, evicts from the head for its misses (so no
/// id of the step can be a victim), then appends all its ids in listed order.
#[derive(Debug, Clone)]
pub struct Lru {
    capacity: usize,
    /// Resident flag per id.
    present: Vec<bool>,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    /// Resident ids.
    len: usize,
}

const NIL: u32 = u32::MAX;

impl Lru {
    /// An empty cache of `capacity` ids over `universe` ids.
    pub fn new(capacity: usize, universe: usize) -> Self {
        Lru {
            capacity,
            present: vec![false; universe],
            prev: vec![NIL; universe],
            next: vec![NIL; universe],
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }

    fn unlink(&mut self, id: u32) {
        let (p, n) = (self.prev[id as usize], self.next[id as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
    }

    fn append(&mut self, id: u32) {
        self.prev[id as usize] = self.tail;
        self.next[id as usize] = NIL;
        if self.tail == NIL {
            self.head = id;
        } else {
            self.next[self.tail as usize] = id;
        }
        self.tail = id;
    }
}

impl Policy for Lru {
    fn name(&self) -> &'static str {
        "lru"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn contains(&self, id: u32) -> bool {
        self.present[id as usize]
    }

    fn access(&mut self, request: &Request, loaded: &mut Vec<u32>, evicted: &mut Vec<u32>) {
        debug_assert!(request.ids.len() <= self.capacity);
        for &id in request.ids {
            if self.present[id as usize] {
                self.unlink(id);
            }
        }
        for &id in request.ids {
            if self.present[id as usize] {
                continue;
            }
            if self.len == self.capacity {
                let victim = self.head;
                debug_assert!(victim != NIL, "capacity >= step size");
                self.unlink(victim);
                self.present[victim as usize] = false;
                self.len -= 1;
                evicted.push(victim);
            }
            self.present[id as usize] = true;
            self.len += 1;
            loaded.push(id);
        }
        for &id in request.ids {
            self.append(id);
        }
    }

    fn resident(&self) -> Vec<u32> {
        let mut r = Vec::with_capacity(self.len);
        let mut id = self.head;
        while id != NIL {
            r.push(id);
            id = self.next[id as usize];
        }
        r.sort_unstable();
        r
    }
}

/// Sums the statistics of several caches (each with its count of ids still resident); lifetimes are pooled over all residencies (evictions + those
/// open at the end) with the population variance of the union.
pub fn combine(all: &[(CacheStats, usize)]) -> CacheStats {
    let mut t = CacheStats {
        steps: 0,
        requests: 0,
        hits: 0,
        loads: 0,
        miss_rate: 0.0,
        evictions: 0,
        lifetime_mean_steps: 0.0,
        lifetime_std_steps: 0.0,
    };
    let (mut n, mut sum, mut sum_sq) = (0f64, 0f64, 0f64);
    for (s, open) in all {
        t.steps += s.steps;
        t.requests += s.requests;
        t.hits += s.hits;
        t.loads += s.loads;
        t.evictions += s.evictions;
        let k = (s.evictions as usize + open) as f64;
        n += k;
        sum += k * s.lifetime_mean_steps;
        sum_sq += k * (s.lifetime_std_steps.powi(2) + s.lifetime_mean_steps.powi(2));
    }
    if t.requests > 0 {
        t.miss_rate = t.loads as f64 / t.requests as f64;
    }
    if n > 0.0 {
        let mean = sum / n;
        t.lifetime_mean_steps = mean;
        t.lifetime_std_steps = (sum_sq / n - mean * mean).max(0.0).sqrt();
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(steps: &[&[u32]], universe: usize) -> Requests {
        let mut r = Requests::new(universe);
        for s in steps {
            r.push(s);
        }
        r
    }

    #[test]
    fn lru_evicts_the_least_recent_and_the_best_ranked_of_a_step_first() {
        // C = 2. Step 0 loads 0 and 1 (rank order 0, 1: 0 is stamped older). Step 1 requests 2:
        // evicts 0 (same step as 1 but better ranked). Step 2 requests 1: hit. Step 3 requests
        // 0: evicts 2 (used at step 1, while 1 was used at step 2). Loads: 0, 1, 2, 0 = 4 of 5.
        let stats = replay(Lru::new(2, 3), &stream(&[&[0, 1], &[2], &[1], &[0]], 3));
        assert_eq!((stats.requests, stats.loads, stats.evictions), (5, 4, 2));
        assert!((stats.miss_rate - 0.8).abs() < 1e-12);
        // Residencies: 0 over [0, 1) = 1, 2 over [1, 3) = 2, then open at the end (time 4):
        // 1 since 0 = 4, 0 since 3 = 1. Mean 2, population variance (1 + 0 + 4 + 1) / 4 = 1.5.
        assert!((stats.lifetime_mean_steps - 2.0).abs() < 1e-12);
        assert!((stats.lifetime_std_steps - 1.5f64.sqrt()).abs() < 1e-12);
    }

    /// LRU by explicit stamps (the reading of the type doc, written independently): per step,
    /// stamp every id with (step, position); a miss evicts the resident id of smallest stamp
    /// outside the step.
    fn naive_lru(steps: &[Vec<u32>], capacity: usize) -> Vec<Vec<u32>> {
        let mut stamp: std::collections::BTreeMap<u32, (usize, usize)> = Default::default();
        let mut out = Vec::new();
        for (t, step) in steps.iter().enumerate() {
            let mut evicted = Vec::new();
            for &id in step {
                if !stamp.contains_key(&id) && stamp.len() == capacity {
                    let (&victim, _) = stamp
                        .iter()
                        .filter(|(id, _)| !step.contains(id))
                        .min_by_key(|(_, &s)| s)
                        .unwrap();
                    stamp.remove(&victim);
                    evicted.push(victim);
                }
                stamp.insert(id, (t, 0));
            }
            for (i, &id) in step.iter().enumerate() {
                stamp.insert(id, (t, i));
            }
            out.push(evicted);
        }
        out
    }

    #[test]
    fn linked_list_lru_matches_the_stamp_reading_on_random_streams() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..200 {
            let universe = rng.random_range(2..10u32);
            let k = rng.random_range(1..=universe.min(3));
            let capacity = rng.random_range(k..=universe) as usize;
            let steps: Vec<Vec<u32>> = (0..30)
                .map(|_| {
                    let mut s = Vec::new();
                    while s.len() < k as usize {
                        let x = rng.random_range(0..universe);
                        if !s.contains(&x) {
                            s.push(x);
                        }
                    }
                    s
                })
                .collect();
            let mut lru = Lru::new(capacity, universe as usize);
            let mut got = Vec::new();
            for (t, s) in steps.iter().enumerate() {
                let (mut l, mut e) = (Vec::new(), Vec::new());
                lru.access(
                    &Request {
                        time: t,
                        ids: s,
                        scores: None,
                    },
                    &mut l,
                    &mut e,
                );
                got.push(e);
            }
            assert_eq!(
                got,
                naive_lru(&steps, capacity),
                "C = {capacity}: {steps:?}"
            );
        }
    }
}
