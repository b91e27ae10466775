//! The workloads, apart from the runtimes that run them: what is measured and how.
//!
//! Each runtime's glue (in `rt/`) builds the runtime the way its users would and runs the
//! workload's shared code in it; everything that decides *what* is measured lives here, once.

pub mod hello;
pub mod pingpong;
pub mod server;
pub mod timers;

use std::io;
use std::thread;

/// Runs `f` on a new thread and returns its result (a panic in it is re-raised here).
///
/// Every workload runs this way: a thread inherits its creator's CPU mask, so pinning the
/// workload's threads never pins the caller (criterion's main thread, say), and each run starts
/// from the process's full mask.
///
/// # Errors
///
/// Spawning the thread failed, or `f`'s own error.
pub fn on_fresh_thread<T: Send>(f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    thread::scope(|s| {
        let h = thread::Builder::new()
            .name("bench-workload".into())
            .spawn_scoped(s, f)?;
        h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// The two CPUs the workloads use: the first two the process may run on. Same-core workloads
/// run on the first; cross-core ones put one side on each.
///
/// # Errors
///
/// The CPU mask cannot be read, or (with `need == 2`) the process may run on one CPU only.
pub fn cpus(need: usize) -> io::Result<Vec<usize>> {
    let cpus = crate::sys::allowed_cpus()?;
    if cpus.len() < need {
        return Err(io::Error::other(format!(
            "this workload needs {need} CPUs; the process may run on {cpus:?}"
        )));
    }
    Ok(cpus)
}
