//! ZipMoE: makespan scheduling of expert reconstruction in one sparse layer (paper 003).
//!
//! The gate selects experts; each is missed, compressed, SM-cached, E-cached or full
//! (Sec. 3.2), which fixes the DAG of reads, decompressions and GPU work of each of its tensors
//! (Fig. 6). One I/O thread, L decompression threads and one GPU stream execute them; the
//! objective is the layer's makespan (Sec. 3.3).
//!
//! * [`model`]: the instance (serde JSON) and the DAGs;
//! * [`validate`]: the rules an instance must satisfy, with the failing field named;
//! * [`schedule`]: the one evaluator, a simulator returning the makespan and a Gantt chart;
//! * [`bounds`]: Lemma B.3's lower bound, Def. B.2's critical paths and the resource bound;
//! * [`milp`]: the exact makespan MILP for small instances;
//! * [`pool`]: the cache-pool planning instance of Sec. 3.4 and App. C-D (Alg. 2, Alg. 3 and
//!   the expected makespan Alg. 4 minimises).
//!
//! ## References
//! ../shared/papers/003_f13bf7f446ba8bd3.txt: Y. Yang, Y. Zhao, P. Yang, S. Wang, Z.-H. Zhou,
//! "ZipMoE: Efficient On-Device MoE Serving via Lossless Compression and Cache-Affinity
//! Scheduling".

pub mod bounds;
pub mod milp;
pub mod model;
pub mod pool;
pub mod schedule;
pub mod validate;

pub use bounds::{
    critical_path, lower_bound, repaired_critical_path, repaired_lower_bound, resource_lower_bound,
    LowerBound, ResourceBound,
};
pub use milp::{ExactSolution, ZipMoeMilp};
pub use model::{CompressionState, Instance, SelectedExpert, Task, TaskType};
pub use schedule::{
    check, DecompOp, GanttRow, IoOp, Operation, Priority, Schedule, Simulator, Summary,
};

use std::path::Path;

use crate::error::{read_json, Error};

/// Reads and validates an instance file.
pub fn load(path: &Path) -> Result<Instance, Error> {
    let instance: Instance = read_json(path)?;
    validate::validate(&instance).map_err(|e| e.in_file(path))?;
    Ok(instance)
}
