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

/// An eviction policy, split as libCacheSim splits one: how it finds an id (and what a hit
/// updates), which resident id it would evict, how it removes and inserts one, and what a step
/// as a whole records before and after. [`Policy::access`], the step itself, is written once
/// on top of these hooks, so every policy replays a step the same way.
pub trait Policy {
    /// The policy's name as on the command line.
    fn name(&self) -> &'static str;
    /// How many ids it holds at most.
    fn capacity(&self) -> usize;
    /// Whether it holds `capacity` ids (a miss must evict first).
    fn is_full(&self) -> bool;
    /// Whether `id` is resident.
    fn contains(&self, id: u32) -> bool;
    /// The resident ids, in increasing order.
    fn resident(&self) -> Vec<u32>;

    /// Opens a step, before any of its ids is looked up: records what the whole step tells
    /// (scores, counts) and pins the step's resident ids, which no eviction of the step may
    /// choose.
    fn begin(&mut self, _request: &Request) {}
    /// Whether `id` is resident; on a hit, updates what the policy keeps about it.
    fn find(&mut self, id: u32) -> bool {
        self.contains(id)
    }
    /// The resident id a miss of `request` evicts: never one of its ids.
    fn to_evict(&self, request: &Request) -> u32;
    /// Drops the resident `id` (an eviction).
    fn remove(&mut self, id: u32);
    /// Makes the missing `id` resident, the cache not full.
    fn insert(&mut self, id: u32, request: &Request);
    /// Closes the step: unpins its ids and records what needed the whole step done.
    fn end(&mut self, _request: &Request) {}

    /// Makes every id of `request` resident, appending each id it loads to `loaded` and each
    /// id it evicts to `evicted`.
    fn access(&mut self, request: &Request, loaded: &mut Vec<u32>, evicted: &mut Vec<u32>) {
        self.begin(request);
        for &id in request.ids {
            if self.find(id) {
                continue;
            }
            if self.is_full() {
                let victim = self.to_evict(request);
                self.remove(victim);
                evicted.push(victim);
            }
            self.insert(id, request);
            loaded.push(id);
        }
        self.end(request);
    }
}

/// A boxed policy forwards [`Policy::access`] whole, so the step runs with the boxed policy's
/// hooks called directly (one dynamic call per step).
impl<P: Policy + ?Sized> Policy for Box<P> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn capacity(&self) -> usize {
        (**self).capacity()
    }
    fn is_full(&self) -> bool {
        (**self).is_full()
    }
    fn contains(&self, id: u32) -> bool {
        (**self).contains(id)
    }
    fn resident(&self) -> Vec<u32> {
        (**self).resident()
    }
    fn begin(&mut self, request: &Request) {
        (**self).begin(request)
    }
    fn find(&mut self, id: u32) -> bool {
        (**self).find(id)
    }
    fn to_evict(&self, request: &Request) -> u32 {
        (**self).to_evict(request)
    }
    fn remove(&mut self, id: u32) {
        (**self).remove(id)
    }
    fn insert(&mut self, id: u32, request: &Request) {
        (**self).insert(id, request)
    }
    fn end(&mut self, request: &Request) {
        (**self).end(request)
    }
    fn access(&mut self, request: &Request, loaded: &mut Vec<u32>, evicted: &mut Vec<u32>) {
        (**self).access(request, loaded, evicted)
    }
}

const NOT_RESIDENT: u32 = u32::MAX;

/// The resident ids of a policy that scans them all for its victim: one unordered array (a
/// contiguous scan) and each id's index in it (membership, insertion and removal in O(1)).
#[derive(Debug, Clone)]
pub(crate) struct Residents {
    ids: Vec<u32>,
    /// Index in `ids` of each id of the universe; [`NOT_RESIDENT`] when absent.
    slot: Vec<u32>,
}

impl Residents {
    /// None resident, room for `capacity` of `universe` ids.
    pub(crate) fn new(capacity: usize, universe: usize) -> Self {
        Residents {
            ids: Vec::with_capacity(capacity + 1),
            slot: vec![NOT_RESIDENT; universe],
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    pub(crate) fn contains(&self, id: u32) -> bool {
        self.slot[id as usize] != NOT_RESIDENT
    }

    /// The resident ids in the array's order.
    pub(crate) fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Index in [`Residents::ids`] of the resident `id`.
    pub(crate) fn index(&self, id: u32) -> usize {
        self.slot[id as usize] as usize
    }

    /// Appends `id`, not resident, at the end of the array.
    pub(crate) fn insert(&mut self, id: u32) {
        self.slot[id as usize] = self.ids.len() as u32;
        self.ids.push(id);
    }

    /// Removes the resident `id` by moving the last one into its place (`Vec::swap_remove`, so
    /// arrays kept beside it follow with a `swap_remove` at the returned index).
    pub(crate) fn remove(&mut self, id: u32) -> usize {
        let at = std::mem::replace(&mut self.slot[id as usize], NOT_RESIDENT) as usize;
        self.ids.swap_remove(at);
        if let Some(&moved) = self.ids.get(at) {
            self.slot[moved as usize] = at as u32;
        }
        at
    }

    /// The resident id minimising `key` among those not `pinned`; the first in array order
    /// on a tie.
    pub(crate) fn min_unpinned<K: PartialOrd>(
        &self,
        pinned: &[bool],
        key: impl Fn(u32) -> K,
    ) -> u32 {
        let mut best: Option<(u32, K)> = None;
        for &id in &self.ids {
            if pinned[id as usize] {
                continue;
            }
            let k = key(id);
            if best.as_ref().is_none_or(|(_, b)| k < *b) {
                best = Some((id, k));
            }
        }
        best.expect("capacity >= step size leaves an unpinned resident id")
            .0
    }

    /// The resident ids in increasing order.
    pub(crate) fn sorted(&self) -> Vec<u32> {
        let mut r = self.ids.clone();
        r.sort_unstable();
        r
    }
}

/// Marks (`on`) or unmarks the ids of a step in a policy's pin mask.
pub(crate) fn pin(mask: &mut [bool], ids: &[u32], on: bool) {
    for &id in ids {
        mask[id as usize] = on;
    }
}

/// Misses, loads and cache lifetimes of one replay (all zero by default: nothing replayed).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
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

/// Misses and residency lengths counted step by step: what [`Simulation`] records around a
/// policy, and the loops of [`super::fast`] record around theirs.
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    loaded_at: Vec<usize>,
    stats: CacheStats,
    /// Completed residencies' lengths in eviction order, two bytes each (a replay of millions
    /// of steps evicts millions of times, nearly all after a few steps): [`LONG`] stands for
    /// the next entry of `long`.
    lifetimes: Vec<u16>,
    long: Vec<u64>,
    time: usize,
}

const ABSENT: usize = usize::MAX;
/// A lifetime of [`Tally::lifetimes`] held in `long`.
const LONG: u16 = u16::MAX;

impl Tally {
    /// Nothing counted, over a universe of `universe` ids.
    pub(crate) fn new(universe: usize) -> Self {
        Tally {
            loaded_at: vec![ABSENT; universe],
            stats: CacheStats::default(),
            lifetimes: Vec::new(),
            long: Vec::new(),
            time: 0,
        }
    }

    /// The current step, from 0.
    pub(crate) fn time(&self) -> usize {
        self.time
    }

    /// The current step evicted `id`: its residency ends.
    pub(crate) fn evicted(&mut self, id: u32) {
        let start = std::mem::replace(&mut self.loaded_at[id as usize], ABSENT);
        let lifetime = self.time - start;
        match u16::try_from(lifetime) {
            Ok(short) if short != LONG => self.lifetimes.push(short),
            _ => {
                self.lifetimes.push(LONG);
                self.long.push(lifetime as u64);
            }
        }
        self.stats.evictions += 1;
    }

    /// The current step loaded `id`: a residency starts.
    pub(crate) fn loaded(&mut self, id: u32) {
        self.loaded_at[id as usize] = self.time;
        self.stats.loads += 1;
    }

    /// Closes the current step, which requested `requested` ids.
    pub(crate) fn end_step(&mut self, requested: usize) {
        self.stats.steps += 1;
        self.stats.requests += requested as u64;
        self.time += 1;
    }

    /// The statistics so far, residencies still open counted as ending now.
    pub(crate) fn stats(&self) -> CacheStats {
        let mut stats = self.stats.clone();
        stats.hits = stats.requests - stats.loads;
        stats.miss_rate = if stats.requests == 0 {
            0.0
        } else {
            stats.loads as f64 / stats.requests as f64
        };
        // Completed residencies, then the open ones; walked twice rather than collected.
        let all = || {
            let open = self.loaded_at.iter().filter(|&&t| t != ABSENT);
            let open = open.map(|&t| (self.time - t) as u64);
            let mut long = self.long.iter();
            let done = self.lifetimes.iter().map(move |&x| match x {
                LONG => long.next().copied().unwrap_or_default(),
                short => u64::from(short),
            });
            done.chain(open)
        };
        let count = all().count();
        if count > 0 {
            let n = count as f64;
            let mean = all().sum::<u64>() as f64 / n;
            let var = all().map(|x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
            stats.lifetime_mean_steps = mean;
            stats.lifetime_std_steps = var.sqrt();
        }
        stats
    }
}

/// Replays steps through a policy, counting misses and residency lengths.
pub struct Simulation<P> {
    policy: P,
    loaded: Vec<u32>,
    evicted: Vec<u32>,
    tally: Tally,
}

impl<P: Policy> Simulation<P> {
    /// A simulation over a universe of `universe` ids, cold start.
    pub fn new(policy: P, universe: usize) -> Self {
        Simulation {
            policy,
            loaded: Vec::new(),
            evicted: Vec::new(),
            tally: Tally::new(universe),
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
            time: self.tally.time(),
            ids,
            scores,
        };
        self.policy
            .access(&request, &mut self.loaded, &mut self.evicted);
        for &id in &self.evicted {
            self.tally.evicted(id);
        }
        for &id in &self.loaded {
            self.tally.loaded(id);
        }
        self.tally.end_step(ids.len());
        &self.loaded
    }

    /// The statistics so far, residencies still open counted as ending now.
    pub fn stats(&self) -> CacheStats {
        self.tally.stats()
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

    fn is_full(&self) -> bool {
        self.len == self.capacity
    }

    fn contains(&self, id: u32) -> bool {
        self.present[id as usize]
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

    /// Unlinks the step's hits: out of the list, they cannot be victims.
    fn begin(&mut self, request: &Request) {
        debug_assert!(request.ids.len() <= self.capacity);
        for &id in request.ids {
            if self.present[id as usize] {
                self.unlink(id);
            }
        }
    }

    fn to_evict(&self, _request: &Request) -> u32 {
        debug_assert!(self.head != NIL, "capacity >= step size");
        self.head
    }

    fn remove(&mut self, id: u32) {
        self.unlink(id);
        self.present[id as usize] = false;
        self.len -= 1;
    }

    /// Marks `id` resident; it joins the list at [`Policy::end`], with the step's hits.
    fn insert(&mut self, id: u32, _request: &Request) {
        self.present[id as usize] = true;
        self.len += 1;
    }

    /// Appends the step's ids in listed order: the best-ranked is the least recent of them.
    fn end(&mut self, request: &Request) {
        for &id in request.ids {
            self.append(id);
        }
    }
}

/// Sums the statistics of several caches (each with its count of ids still resident); lifetimes are pooled over all residencies (evictions + those
/// open at the end) with the population variance of the union.
pub fn combine(all: &[(CacheStats, usize)]) -> CacheStats {
    let mut t = CacheStats::default();
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

/// Helpers the policies' tests share.
#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The request stream of `steps` over `universe` ids.
    pub(crate) fn stream(steps: &[&[u32]], universe: usize) -> Requests {
        let mut r = Requests::new(universe);
        for s in steps {
            r.push(s);
        }
        r
    }

    /// The ids `policy` evicts at each of `steps` (no scores).
    pub(crate) fn evictions<P: Policy, S: AsRef<[u32]>>(
        mut policy: P,
        steps: &[S],
    ) -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        for (time, s) in steps.iter().enumerate() {
            let (mut loaded, mut evicted) = (Vec::new(), Vec::new());
            let request = Request {
                time,
                ids: s.as_ref(),
                scores: None,
            };
            policy.access(&request, &mut loaded, &mut evicted);
            out.push(evicted);
        }
        out
    }

    #[test]
    fn lifetimes_past_two_bytes_are_counted_whole() {
        // Ids 0 and 1 loaded at step 0; 0 evicted at 65,535 (the escape value itself) and
        // loaded again, evicted at 65,536; 1 evicted at 70,000: lifetimes 65,535, 1, 70,000.
        let mut tally = Tally::new(2);
        tally.loaded(0);
        tally.loaded(1);
        for t in 0..70_000 {
            if t == 65_535 {
                tally.evicted(0);
                tally.loaded(0);
            }
            if t == 65_536 {
                tally.evicted(0);
            }
            tally.end_step(2);
        }
        tally.evicted(1);
        let s = tally.stats();
        let mean = 135_536.0 / 3.0;
        let var = [65_535.0, 1.0, 70_000.0]
            .iter()
            .map(|x: &f64| (x - mean).powi(2))
            .sum::<f64>()
            / 3.0;
        assert_eq!((s.evictions, s.loads), (3, 3));
        assert_eq!(s.lifetime_mean_steps, mean);
        assert_eq!(s.lifetime_std_steps, var.sqrt());
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
            let got = evictions(Lru::new(capacity, universe as usize), &steps);
            assert_eq!(
                got,
                naive_lru(&steps, capacity),
                "C = {capacity}: {steps:?}"
            );
        }
    }
}
