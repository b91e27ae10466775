//! Benchmarks of tickless against the runtimes its users would pick instead.
//!
//! - `benches/timers.rs`: the timer queue's insert, cancel and fire costs (criterion).
//! - `benches/pingpong.rs`: pipe ping-pong on every contender (criterion).
//! - `src/bin/compare.rs`: every workload on every contender, each measurement in a fresh
//!   process, and the ratios to tickless.
//!
//! The library holds what those share: the workloads (`workload`), each contender's glue
//! (`rt`), the comparison's driver (`compare`), and the few system calls they make (`sys`).

pub mod compare;
pub mod load;
pub mod rt;
pub mod stats;
pub mod sys;
pub mod workload;
