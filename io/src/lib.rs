#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

#[cfg(not(target_os = "linux"))]
compile_error!("tickless-io supports Linux only: it is built on epoll, timerfd and eventfd");

mod async_fd;
pub mod context;
mod home;
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

pub mod cpu;
pub use async_fd::{AsyncFd, AsyncFdReadyGuard, TryIoError};
pub use context::EnterGuard;
pub use mio::Interest;
pub use net::addr::{Resolve, Resolving, ToSocketAddrs};
pub use net::tcp_listener::TcpListener;
pub use net::tcp_split::{OwnedReadHalf, OwnedWriteHalf, ReuniteError};
pub use net::tcp_stream::TcpStream;
pub use net::udp::UdpSocket;
pub use net::unix::{UnixListener, UnixStream};
pub use pipe::{pipe, PipeReader, PipeWriter};
pub use reactor::{Polled, Reactor};
pub use ready::{Direction, Ready, ReadyEvent};
pub use registration::Registration;
pub use stats::IoStats;
pub use timerfd::TimerFd;
pub use unparker::Unparker;
