//! Progress of the long runs (`verify`'s instances and searches, `sweep`'s cells): a bar on a
//! terminal's stderr, and the same counts in one process-wide [`snapshot`], which the Python
//! package polls from another thread to draw its own bar in Jupyter, where no terminal is.

use std::io::IsTerminal;
use std::sync::Mutex;

/// What the current run has done: its message, finished steps and total steps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// What is counted (`generated instances`, `sweep cells`).
    pub what: String,
    /// Steps finished.
    pub done: u64,
    /// Steps in all (0: no run in progress).
    pub total: u64,
}

static CURRENT: Mutex<Option<Snapshot>> = Mutex::new(None);

/// The progress of the run in progress, if any.
pub fn snapshot() -> Option<Snapshot> {
    CURRENT.lock().map(|s| s.clone()).unwrap_or(None)
}

fn update(f: impl FnOnce(&mut Option<Snapshot>)) {
    if let Ok(mut s) = CURRENT.lock() {
        f(&mut s);
    }
}

/// One run's progress: `total` steps of `what`.
pub struct Progress {
    bar: indicatif::ProgressBar,
}

impl Progress {
    /// Starts counting; the bar shows only when stderr is a terminal.
    pub fn new(total: u64, what: &str) -> Self {
        update(|s| {
            *s = Some(Snapshot {
                what: what.to_string(),
                done: 0,
                total,
            })
        });
        if !std::io::stderr().is_terminal() || total == 0 {
            return Progress {
                bar: indicatif::ProgressBar::hidden(),
            };
        }
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar.set_message(what.to_string());
        Progress { bar }
    }

    /// One more step finished.
    pub fn inc(&self) {
        self.bar.inc(1);
        update(|s| {
            if let Some(s) = s {
                s.done += 1;
            }
        });
    }
}

impl Progress {
    /// Replaces the bar's message (the snapshot keeps `what`).
    pub fn message(&self, text: &str) {
        self.bar.set_message(text.to_string());
    }
}

impl Drop for Progress {
    /// The run is over (finished, failed or interrupted): the bar and the snapshot go.
    fn drop(&mut self) {
        self.bar.finish_and_clear();
        update(|s| *s = None);
    }
}
