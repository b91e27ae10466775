#![doc = include_str!("../../README.md")]
#![warn(missing_docs)]

mod blocking;
mod catch;
mod context;
mod dns;
pub mod fs;
#[cfg(feature = "hyper")]
pub mod hyper_rt;
mod park;
pub mod runtime;
mod serve;
pub mod signal;
mod stats;
mod sync;
pub mod task;
pub mod time;
mod worker;

/// Internals that the loom models in `loom-tests/` check; only built under `--cfg loom`.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_exports {
    pub use crate::serve::Stop;
    pub use crate::task::join_slot::JoinSlot;
    pub use crate::worker::block_on::MainWaker;
    pub use crate::worker::idle::{sleep, Slept};
    pub use crate::worker::run::{run, take_handed_over, turn, Driver, Step};
    pub use crate::worker::shared::{Shared, Unpark};
    pub use crate::worker::shutdown::close;
    pub use crate::worker::timers::TimerValue;
}

pub use context::core_id;
pub use runtime::{Builder, CorePanic, Handle, Runtime, ShutdownError};
pub use stats::{CoreStats, Stats};
pub use task::{spawn, spawn_local, yield_now, JoinError, JoinHandle};
pub use tickless_macros::{main, test};
pub use tickless_timer::RearmPolicy;

/// Pipes, sockets and any other file descriptor, driven by the core's reactor.
///
/// The types implement futures-io's `AsyncRead` and `AsyncWrite`; they belong to the core that
/// created them.
pub mod io {
    pub use tickless_io::{pipe, AsyncFd, AsyncFdReadyGuard, PipeReader, PipeWriter};
}

/// TCP, UDP and Unix sockets.
pub mod net {
    pub use tickless_io::{
        OwnedReadHalf, OwnedWriteHalf, TcpListener, TcpStream, UdpSocket, UnixListener, UnixStream,
    };

    pub use crate::dns::lookup_host;
    pub use crate::serve::{
        serve_per_core, ConnInfo, Serve, ServeCounters, ServeStats, Server, ShutdownReport,
        ShutdownRequested,
    };
}
