//! One sparse MoE layer of ZipMoE (Sec. 3.2-3.3 of paper 003) as serde data, and the task DAGs
//! that follow from each selected expert's compression state (Fig. 6).
//!
//! JSON layout (times in seconds):
//!
//! ```json
//! { "problem": "zipmoe", "name": "tiny-0",
//!   "tensors_per_expert": 1, "shards": 2, "compression_ratio": 0.36,
//!   "sm_read_s": 0.0008, "decompress_s": 0.0005, "threads": 2,
//!   "experts": [ { "id": 3, "tokens": 5, "gpu_s": 0.0002, "state": "missed" },
//!                { "id": 7, "tokens": 1, "gpu_s": 0.0001, "state": "sm_cached" } ] }
//! ```
//!
//! ## Resources (Sec. 3.3)
//! One I/O thread for every SSD read, L decompression threads (`threads`), one GPU stream.
//!
//! ## Tasks and their DAGs (Fig. 6; derived from the text of Sec. 3.1-3.3 and Lemma B.3)
//! The figure itself is not in the extracted text; the DAGs below follow from Sec. 3.2 ("an
//! expert is an E-expert if its E-chunks are cached, an SM-expert if its SM-chunks are cached,
//! a compressed expert when both reside in memory"), Sec. 3.3 (an SM-chunk read costs u, an
//! E-chunk read rho u / K, its decompression c) and Lemma B.3's per-task I/O work v_j.
//! Granularity is the tensor (Sec. 3.2): an expert of N tensors issues N identical tasks.
//! Every non-full state's task j of expert n consists of
//!
//! * `read-e k` (k = 1..K, on the I/O thread, rho u / K each) when the E-chunks are not cached;
//! * `read-sm` (on the I/O thread, u) when the SM-chunk is not cached;
//! * `decompress k` (k = 1..K, on any decompression thread, c each), after `read-e k` when
//!   that read exists (ready at time 0 otherwise);
//! * `recover` (the GPU kernel that reassembles the BF16 tensor) after `read-sm` (if any) and
//!   every `decompress k`. Its duration is not parameterised by the paper (Sec. 1 and 3.3
//!   call it negligible; Def. B.2 and Lemma B.3 have no term for it), so it takes zero time
//!   and occupies no resource here;
//!
//! and the expert's `execute` (on the GPU stream, p_n) follows the `recover` of all N tensors.
//!
//! | state | reads | decompressions | type (Sec. 3.3) | v_j (Lemma B.3) |
//! |---|---|---|---|---|
//! | `missed` (M) | K E-chunks + SM-chunk | K | I | (1 + rho) u |
//! | `e_cached` (E) | SM-chunk | K | I | u |
//! | `sm_cached` (S) | K E-chunks | K | II | rho u |
//! | `compressed` (C) | none | K | II | 0 |
//! | `full` (F) | none | none | none: not in Q | 0 |
//!
//! A full expert has only its `execute`, ready at time 0; the paper's Q (Def. B.2) has no full
//! tasks, but its GPU time still counts towards the layer's makespan ("the completion time of
//! the last expert execution", Sec. 3.3).

use serde::{Deserialize, Serialize};

use crate::problem::ProblemKind;

/// One sparse layer: the selected experts, their compression states and the device's delays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// Always `zipmoe`.
    pub problem: ProblemKind,
    /// Free-form name (preset and seed, source file, ...).
    #[serde(default)]
    pub name: String,
    /// N: tensors per expert, each an independent reconstruction task (Sec. 3.2).
    pub tensors_per_expert: u32,
    /// K: exponent shards (E-chunks) per tensor (Sec. 3.1).
    pub shards: u32,
    /// rho: compressed exponent bits relative to their raw size (Sec. 3.3), in (0, 1].
    pub compression_ratio: f64,
    /// u: I/O time of one SM-chunk, seconds (Sec. 3.3).
    pub sm_read_s: f64,
    /// c: decompression time of one E-chunk, seconds (Sec. 3.3).
    pub decompress_s: f64,
    /// L: decompression threads (Sec. 3.3).
    pub threads: u32,
    /// The experts the gate selected for this layer.
    pub experts: Vec<SelectedExpert>,
}

/// A selected expert n.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectedExpert {
    /// The expert's index in its layer (distinct within the instance; for reports).
    pub id: u32,
    /// Tokens routed to it (informational; p_n is `gpu_s`).
    pub tokens: u32,
    /// p_n: GPU time to process all its tokens, seconds (Sec. 3.3).
    pub gpu_s: f64,
    /// Its compression state (Sec. 3.2).
    pub state: CompressionState,
}

/// Which parts of an expert reside in memory (Sec. 3.2, Def. B.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompressionState {
    /// M: nothing cached.
    Missed,
    /// C: E-chunks and SM-chunks cached ("compressed expert").
    Compressed,
    /// S: SM-chunks cached ("SM-expert").
    SmCached,
    /// E: E-chunks cached ("E-expert").
    ECached,
    /// F: the full BF16 tensors cached.
    Full,
}

impl CompressionState {
    /// Every state, in the order M, C, S, E, F.
    pub const ALL: [CompressionState; 5] = [
        CompressionState::Missed,
        CompressionState::Compressed,
        CompressionState::SmCached,
        CompressionState::ECached,
        CompressionState::Full,
    ];

    /// The paper's letter (Def. B.2; F for full).
    pub fn letter(self) -> char {
        match self {
            CompressionState::Missed => 'M',
            CompressionState::Compressed => 'C',
            CompressionState::SmCached => 'S',
            CompressionState::ECached => 'E',
            CompressionState::Full => 'F',
        }
    }

    /// The tensor's SM-chunk must be read (M, E).
    pub fn reads_sm(self) -> bool {
        matches!(self, CompressionState::Missed | CompressionState::ECached)
    }

    /// The tensor's K E-chunks must be read (M, S).
    pub fn reads_e(self) -> bool {
        matches!(self, CompressionState::Missed | CompressionState::SmCached)
    }

    /// The tensor must be reconstructed (every state but full).
    pub fn decompresses(self) -> bool {
        self != CompressionState::Full
    }

    /// Type I (SM-chunk read needed), type II (SM cached), or none (full), Sec. 3.3.
    pub fn task_type(self) -> Option<TaskType> {
        match self {
            CompressionState::Missed | CompressionState::ECached => Some(TaskType::I),
            CompressionState::Compressed | CompressionState::SmCached => Some(TaskType::II),
            CompressionState::Full => None,
        }
    }
}

/// Task partition of Sec. 3.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TaskType {
    /// Reconstruction reads the SM-chunk (blocks the I/O thread).
    I,
    /// The SM-chunk is cached.
    II,
}

/// A reconstruction task: one tensor of a non-full expert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Task {
    /// Position of the expert in [`Instance::experts`].
    pub expert: usize,
    /// Tensor index in 0..N.
    pub tensor: u32,
}

impl Instance {
    /// rho u / K: I/O time of one E-chunk, seconds (Sec. 3.3).
    pub fn e_read_s(&self) -> f64 {
        self.compression_ratio * self.sm_read_s / f64::from(self.shards)
    }

    /// The reconstruction tasks Q, expert by expert (instance order), tensor by tensor.
    pub fn tasks(&self) -> Vec<Task> {
        self.experts
            .iter()
            .enumerate()
            .filter(|(_, e)| e.state.decompresses())
            .flat_map(|(n, _)| {
                (0..self.tensors_per_expert).map(move |tensor| Task { expert: n, tensor })
            })
            .collect()
    }

    /// The state of a task's expert.
    pub fn state_of(&self, task: Task) -> CompressionState {
        self.experts[task.expert].state
    }

    /// v_j of Lemma B.3: the I/O work of one task of the given state, seconds.
    pub fn io_work_s(&self, state: CompressionState) -> f64 {
        let e = if state.reads_e() {
            f64::from(self.shards) * self.e_read_s()
        } else {
            0.0
        };
        let sm = if state.reads_sm() {
            self.sm_read_s
        } else {
            0.0
        };
        e + sm
    }
}

/// A test layer: N = 1, K = 2, rho = 0.5, u = 2 s, c = 1 s, the experts numbered 0.. with one
/// token each and the given states and p_n.
#[cfg(test)]
pub(crate) fn test_layer(experts: &[(CompressionState, f64)], threads: u32) -> Instance {
    Instance {
        problem: ProblemKind::Zipmoe,
        name: "test".into(),
        tensors_per_expert: 1,
        shards: 2,
        compression_ratio: 0.5,
        sm_read_s: 2.0,
        decompress_s: 1.0,
        threads,
        experts: experts
            .iter()
            .enumerate()
            .map(|(i, &(state, gpu_s))| SelectedExpert {
                id: i as u32,
                tokens: 1,
                gpu_s,
                state,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_follow_the_table_of_the_module_doc() {
        use CompressionState::*;
        let rows: Vec<(bool, bool, bool, Option<TaskType>)> = CompressionState::ALL
            .iter()
            .map(|s| (s.reads_e(), s.reads_sm(), s.decompresses(), s.task_type()))
            .collect();
        assert_eq!(
            rows,
            vec![
                (true, true, true, Some(TaskType::I)),    // M
                (false, false, true, Some(TaskType::II)), // C
                (true, false, true, Some(TaskType::II)),  // S
                (false, true, true, Some(TaskType::I)),   // E
                (false, false, false, None),              // F
            ]
        );
        assert_eq!(
            [Missed, Compressed, SmCached, ECached, Full].map(|s| s.letter()),
            ['M', 'C', 'S', 'E', 'F']
        );
    }

    #[test]
    fn io_work_is_lemma_b3s_v_j() {
        // u = 2, rho = 0.5, K = 4: E-chunk 0.25 s, all E-chunks rho u = 1.
        let i = Instance {
            problem: ProblemKind::Zipmoe,
            name: String::new(),
            tensors_per_expert: 2,
            shards: 4,
            compression_ratio: 0.5,
            sm_read_s: 2.0,
            decompress_s: 1.0,
            threads: 2,
            experts: vec![],
        };
        assert_eq!(i.e_read_s(), 0.25);
        assert_eq!(i.io_work_s(CompressionState::Missed), 3.0);
        assert_eq!(i.io_work_s(CompressionState::ECached), 2.0);
        assert_eq!(i.io_work_s(CompressionState::SmCached), 1.0);
        assert_eq!(i.io_work_s(CompressionState::Compressed), 0.0);
        assert_eq!(i.io_work_s(CompressionState::Full), 0.0);
    }
}
