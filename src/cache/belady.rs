//! Belady's MIN (paper 002 Sec. 4.8: "evicts the expert that will be needed farthest in the
//! future"), for steps whose K experts are requested together.
//!
//! The policy is built from the whole request stream and must then be replayed on exactly that
//! stream (step `time` of a request indexes it). On a miss with a full cache it evicts, among
//! the resident experts not requested at the current step, the one whose next request is
//! farthest; experts never requested again count as infinitely far. Ties (several never
//! requested again, or two next requested at the same step) go to the lowest id: any tie
//! choice is optimal, so the rule only makes runs reproducible.
//!
//! Optimality with batched requests (checked against the MILP and the exhaustive search in
//! tests and in the `cache/sec48-belady-optimal` claim): Belady's exchange argument carries
//! over, since an optimal schedule that evicts y instead of Belady's x at step t can keep y
//! and evict x; y is requested no later than x, and until then the two caches differ in one
//! expert, so the modified schedule loads no more. The argument holds for steps of any size
//! (K experts, or J forced ones, or none), and paper 002's claims other than Belady's
//! optimality itself take Belady's loads as the proved fixed-routing optimum on it (module doc
//! of [`super::claims`]); `cache/sec48-belady-optimal` checks it against the MILP, which knows
//! nothing of Belady but its schedule as a MIP start (a pass there needs the MILP's bound).

use formulations::cache::model::Requests;
use formulations::cache::offline::{Schedule, ScheduleStep};

use super::policy::{CacheStats, Policy, Request, Residents, Simulation, Tally};

pub(crate) const NEVER: u32 = u32::MAX;

/// The eviction key of a resident id: next request step in the high half, the complemented id
/// in the low half, so the largest key is the farthest next use, ties to the lowest id.
fn key(next: u32, id: u32) -> u64 {
    (u64::from(next) << 32) | u64::from(!id)
}

/// For every position of `requests.ids`, the step of that id's next request ([`NEVER`] when
/// none): Belady's eviction keys, shared with the one-pass curves of [`super::mrc`].
pub(crate) fn next_requests(requests: &Requests) -> Vec<u32> {
    let mut next = vec![NEVER; requests.ids.len()];
    let mut seen = vec![NEVER; requests.universe];
    for t in (0..requests.len()).rev() {
        let (lo, hi) = (requests.offsets[t], requests.offsets[t + 1]);
        for (slot, &id) in next[lo..hi].iter_mut().zip(&requests.ids[lo..hi]) {
            *slot = seen[id as usize];
            seen[id as usize] = t as u32;
        }
    }
    next
}

/// Belady / MIN over a known request stream.
#[derive(Debug, Clone)]
pub struct Belady {
    capacity: usize,
    /// For every position of the stream's `ids`, the step of the id's next request.
    next: Vec<u32>,
    offsets: Vec<usize>,
    /// The resident ids, and beside them (same index) their eviction keys: a miss scans one
    /// contiguous array.
    cached: Residents,
    keys: Vec<u64>,
}

impl Belady {
    /// A cold cache of `capacity` ids that will be replayed on `requests` (fewer than 2^32 - 1
    /// steps).
    pub fn new(capacity: usize, requests: &Requests) -> Self {
        assert!(
            requests.len() < NEVER as usize,
            "stream too long for Belady"
        );
        Belady {
            capacity,
            next: next_requests(requests),
            offsets: requests.offsets.clone(),
            cached: Residents::new(capacity, requests.universe),
            keys: Vec::with_capacity(capacity + 1),
        }
    }
}

impl Policy for Belady {
    fn name(&self) -> &'static str {
        "belady"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn is_full(&self) -> bool {
        self.cached.len() == self.capacity
    }

    fn contains(&self, id: u32) -> bool {
        self.cached.contains(id)
    }

    fn resident(&self) -> Vec<u32> {
        self.cached.sorted()
    }

    /// Pins the requested ids: their next use is now, the nearest possible.
    fn begin(&mut self, request: &Request) {
        debug_assert_eq!(
            self.offsets[request.time + 1] - self.offsets[request.time],
            request.ids.len()
        );
        let t = request.time as u32;
        for &id in request.ids {
            if self.cached.contains(id) {
                self.keys[self.cached.index(id)] = key(t, id);
            }
        }
    }

    fn to_evict(&self, request: &Request) -> u32 {
        let (mut best, mut farthest) = (0, self.keys[0]);
        for (i, &k) in self.keys.iter().enumerate().skip(1) {
            if k > farthest {
                (best, farthest) = (i, k);
            }
        }
        debug_assert!(farthest >> 32 > request.time as u64, "a pinned id evicted");
        self.cached.ids()[best]
    }

    fn remove(&mut self, id: u32) {
        let at = self.cached.remove(id);
        self.keys.swap_remove(at);
    }

    /// Enters pinned, as the step's hits are.
    fn insert(&mut self, id: u32, request: &Request) {
        self.cached.insert(id);
        self.keys.push(key(request.time as u32, id));
    }

    /// Unpins the step's ids: each one's key becomes its next request.
    fn end(&mut self, request: &Request) {
        let start = self.offsets[request.time];
        for (i, &id) in request.ids.iter().enumerate() {
            self.keys[self.cached.index(id)] = key(self.next[start + i], id);
        }
    }
}

/// Requests of a chunk of [`replay_bytes`]: its next-use keys (4 bytes each) stay in L2.
const CHUNK_REQUESTS: usize = 1 << 16;

/// [`Belady`] in a [`Simulation`] on `steps` steps of `top_k` byte ids each (`step(t)`, E <=
/// 256, distinct within a step, fewer than [`NEVER`] steps): the same evictions and
/// statistics, and the ids resident at the end. The next-use keys are computed chunk by chunk
/// rather than for the whole stream at once (the stream's first request of each id after
/// each chunk from one backward pass, then each chunk's keys just before it is replayed), so
/// the memory is a few hundred kilobytes instead of about 10 bytes a request (the stream as
/// u32, its offsets and the whole next-use table).
pub(crate) fn replay_bytes<'a>(
    capacity: usize,
    experts: usize,
    steps: usize,
    top_k: usize,
    step: impl Fn(usize) -> &'a [u8],
) -> (CacheStats, usize) {
    replay_bytes_in_chunks(
        capacity,
        experts,
        steps,
        top_k,
        step,
        (CHUNK_REQUESTS / top_k).max(1),
    )
}

/// [`replay_bytes`] with chunks of `span` steps.
fn replay_bytes_in_chunks<'a>(
    capacity: usize,
    experts: usize,
    steps: usize,
    top_k: usize,
    step: impl Fn(usize) -> &'a [u8],
    span: usize,
) -> (CacheStats, usize) {
    debug_assert!(steps < NEVER as usize && experts <= 256);
    let chunks = steps.div_ceil(span);
    let bounds = |c: usize| c * span..((c + 1) * span).min(steps);
    // after[c][id]: the first step after chunk c requesting id.
    let mut after = vec![[NEVER; 256]; chunks];
    let mut seen = [NEVER; 256];
    for c in (0..chunks).rev() {
        after[c] = seen;
        for t in bounds(c).rev() {
            for &id in step(t) {
                seen[usize::from(id)] = t as u32;
            }
        }
    }
    let mut cache = SmallBelady::new(capacity);
    let mut tally = Tally::new(experts);
    let mut next = vec![NEVER; span * top_k];
    for (c, seen) in after.iter_mut().enumerate() {
        let chunk = bounds(c);
        for t in chunk.clone().rev() {
            let keys = &mut next[(t - chunk.start) * top_k..][..top_k];
            for (slot, &id) in keys.iter_mut().zip(step(t)) {
                *slot = std::mem::replace(&mut seen[usize::from(id)], t as u32);
            }
        }
        for t in chunk.clone() {
            let keys = &next[(t - chunk.start) * top_k..][..top_k];
            cache.step(step(t), t as u32, keys, &mut tally);
        }
    }
    (tally.stats(), cache.len)
}

/// No slot: not resident.
const ABSENT: u16 = u16::MAX;

/// [`Belady`] over ids below 256: the resident ids and their eviction keys side by side in
/// fixed arrays, and each id's slot in them.
struct SmallBelady {
    capacity: usize,
    len: usize,
    ids: [u8; 256],
    keys: [u64; 256],
    slot: [u16; 256],
}

impl SmallBelady {
    fn new(capacity: usize) -> Self {
        SmallBelady {
            capacity,
            len: 0,
            ids: [0; 256],
            keys: [0; 256],
            slot: [ABSENT; 256],
        }
    }

    /// Sets the key of `id` if it is resident.
    fn rekey(&mut self, id: u8, next: u32) {
        if let Some(k) = self.keys.get_mut(usize::from(self.slot[usize::from(id)])) {
            *k = key(next, u32::from(id));
        }
    }

    /// One step at `time` as [`Belady`]'s hooks take it: the step's hits are pinned, each
    /// miss evicts the farthest next use when full, then the step's ids get their next uses
    /// `next` as keys.
    fn step(&mut self, ids: &[u8], time: u32, next: &[u32], tally: &mut Tally) {
        for &id in ids {
            self.rekey(id, time);
        }
        for &id in ids {
            if self.slot[usize::from(id)] != ABSENT {
                continue;
            }
            if self.len == self.capacity {
                // Keys are distinct (the id is in them): the largest is the one victim.
                let keys = &self.keys[..self.len];
                let at = (1..keys.len()).fold(0, |a, i| if keys[i] > keys[a] { i } else { a });
                let victim = self.ids[at];
                self.len -= 1;
                let moved = self.ids[self.len];
                self.ids[at] = moved;
                self.keys[at] = self.keys[self.len];
                self.slot[usize::from(moved)] = at as u16;
                self.slot[usize::from(victim)] = ABSENT;
                tally.evicted(u32::from(victim));
            }
            self.ids[self.len] = id;
            self.keys[self.len] = key(time, u32::from(id));
            self.slot[usize::from(id)] = self.len as u16;
            self.len += 1;
            tally.loaded(u32::from(id));
        }
        for (&id, &n) in ids.iter().zip(next) {
            self.rekey(id, n);
        }
        tally.end_step(ids.len());
    }
}

/// Belady's schedule on a fixed request stream: per step the requested ids and the resident
/// set after the step (for the offline evaluator and as a MIP start), and its loads.
pub fn belady_schedule(capacity: usize, requests: &Requests) -> (u64, Schedule) {
    let mut sim = Simulation::new(Belady::new(capacity, requests), requests.universe);
    let mut steps = Vec::with_capacity(requests.len());
    for step in requests.steps() {
        sim.step(step, None);
        steps.push(ScheduleStep {
            chosen: step.to_vec(),
            resident: sim.policy().resident(),
        });
    }
    (sim.stats().loads, Schedule { steps })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::policy::tests::stream;
    use crate::cache::policy::{replay, Lru};

    #[test]
    fn textbook_sequence_matches_the_hand_count() {
        // C = 3, K = 1, the classic 7 0 1 2 0 3 0 4 2 3 0 3 2 (universe 8). By hand, MIN:
        // 7 0 1 load (3); 2: 7 and 1 are never requested again, tie -> evict 1 (lower id);
        // 0 hit; 3: evict 7 (never again; 0@6, 2@8) -> {0,2,3}; 0 hit; 4: next uses 0@10,
        // 2@8, 3@9 -> evict 0 -> {2,3,4}; 2, 3 hits; 0: 2@12, 3@11, 4 never -> evict 4; 3, 2
        // hits. Loads 7. LRU: 7 0 1, 2 (-7), 3 (-1), 4 (-2), 2 (-3), 3 (-0), 0 (-4): 9 loads.
        let seq = [7u32, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2];
        let steps: Vec<&[u32]> = seq.iter().map(std::slice::from_ref).collect();
        let r = stream(&steps, 8);
        let (loads, schedule) = belady_schedule(3, &r);
        assert_eq!(loads, 7);
        assert_eq!(schedule.steps[7].resident, vec![2, 3, 4]);
        assert_eq!(replay(Lru::new(3, 8), &r).loads, 9);
    }

    #[test]
    fn byte_replay_in_chunks_equals_the_simulation() {
        // 500 steps of 3 distinct ids of 10 from a xorshift, every capacity, chunks of 1, 2,
        // 7 and 64 steps and one chunk: the keys crossing chunk boundaries must be the
        // whole-stream table's.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut steps: Vec<Vec<u8>> = Vec::new();
        while steps.len() < 500 {
            let mut step = Vec::new();
            while step.len() < 3 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let id = (x % 10) as u8;
                if !step.contains(&id) {
                    step.push(id);
                }
            }
            steps.push(step);
        }
        let wide: Vec<Vec<u32>> = (steps.iter())
            .map(|s| s.iter().map(|&x| u32::from(x)).collect())
            .collect();
        let r = stream(&wide.iter().map(Vec::as_slice).collect::<Vec<_>>(), 10);
        for c in 3..=10 {
            let mut sim = Simulation::new(Belady::new(c, &r), 10);
            for step in r.steps() {
                sim.step(step, None);
            }
            let want = (sim.stats(), sim.policy().resident().len());
            for span in [1, 2, 7, 64, 500] {
                let got = replay_bytes_in_chunks(c, 10, 500, 3, |t| &steps[t], span);
                assert_eq!(got, want, "C = {c}, chunks of {span}");
            }
        }
    }

    #[test]
    fn the_experts_of_a_step_are_never_evicted_by_it_and_ties_go_to_the_lowest_id() {
        // C = 3, K = 2. Step 0 {0, 1}, step 1 {2, 3}: loading 2 fills the cache, loading 3
        // must evict 0 or 1 (2 is pinned); neither is requested again: tie -> evict 0. Step 2
        // {3, 2}: both hits. Loads 4.
        let r = stream(&[&[0, 1], &[2, 3], &[3, 2]], 4);
        let (loads, schedule) = belady_schedule(3, &r);
        assert_eq!(loads, 4);
        assert_eq!(schedule.steps[1].resident, vec![1, 2, 3]);
    }
}
