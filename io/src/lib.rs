#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

#[cfg(not(target_os = "linux"))]
compile_error!("tickless-io supports Linux only: it is built on epoll, timerfd and eventfd");

mod async_fd;
mod context;
mod cpu;
mod home;
mod key;
mod net;
mod pipe;
mod reactor;
mod ready;
mod registration;
mod stats;
mod sys;
mod timerfd;
#[cfg(feature = "tokio")]
mod tokio_io;
mod unparker;

// What users use, re-exported by `tickless::net` and `tickless::io`.
pub use async_fd::{AsyncFd, AsyncFdReadyGuard, TryIoError};
pub use mio::Interest;
pub use net::addr::ToSocketAddrs;
pub use net::tcp_listener::TcpListener;
pub use net::tcp_split::{OwnedReadHalf, OwnedWriteHalf, ReuniteError};
pub use net::tcp_stream::TcpStream;
pub use net::udp::UdpSocket;
pub use net::unix::{UnixListener, UnixStream};
pub use pipe::{pipe, PipeReader, PipeWriter};
pub use ready::Ready;

/// What the `tickless` runtime (and its loom models and tests) drives the I/O types with: the
/// per-core reactor, the clock devices' descriptor, the unparker, the thread-local context, the
/// CPU affinity calls and the name-lookup hook. Not for users: no stability promise, and hidden
/// from the docs. Use `tickless::net` and `tickless::io`.
#[doc(hidden)]
pub mod internal {
    /// The reactor of the current thread.
    pub mod context {
        pub use crate::context::*;
    }
    /// CPU affinity: the CPUs the process may run on, pinning a thread.
    pub mod cpu {
        pub use crate::cpu::*;
    }
    pub use crate::context::EnterGuard;
    pub use crate::net::addr::{Addrs, Resolve, Resolving};
    pub use crate::reactor::{Harvester, Polled, Reactor};
    pub use crate::ready::{Direction, ReadyEvent};
    pub use crate::registration::Registration;
    pub use crate::stats::IoStats;
    pub use crate::timerfd::TimerFd;
    pub use crate::unparker::Unparker;
}
