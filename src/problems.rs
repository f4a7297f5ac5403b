//! The one place that names every problem: the registry of moe-opt's problems, at the top of
//! the library, above the problems it lists. The command line and the Python package start
//! from it; everything below reaches a problem only through the [`Registry`] it is handed.

use crate::registry::{ProblemEntry, Registry};

/// moe-opt's problems, in paper order.
pub fn builtin() -> Registry {
    Registry::new(vec![
        Box::new(ProblemEntry::<crate::slimcaching::methods::SlimCaching>::sweepable()),
        Box::new(ProblemEntry::<crate::prism::methods::Prism>::sweepable()),
        Box::new(crate::cache::entry::CacheTraceEntry),
        Box::new(crate::cache::entry::CacheOfflineEntry),
        Box::new(ProblemEntry::<crate::zipmoe::methods::ZipMoe>::sweepable()),
        Box::new(crate::zipmoe::planning::commands::PoolEntry),
        Box::new(crate::smoe::commands::SmoeEntry),
        Box::new(ProblemEntry::<crate::balance::methods::Balance>::sweepable()),
    ])
}
