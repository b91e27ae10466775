//! Binding `SO_REUSEPORT` listeners away from any core, to hand one to each core.

use std::io;
use std::net::SocketAddr;

use crate::net::tcp_listener::{TcpListener, REUSEPORT_BACKLOG};
use crate::sys;

impl TcpListener {
    /// Binds a listening std socket with `SO_REUSEADDR` and `SO_REUSEPORT`, non-blocking and
    /// close-on-exec, on any thread: no reactor is needed.
    ///
    /// This is the first half of [`bind_reuseport`](Self::bind_reuseport), for servers that bind
    /// every core's listener up front (so that a bind error surfaces before anything runs, and
    /// port 0 becomes one port for all cores), then move each into its core and register it there
    /// with [`from_std`](Self::from_std). `std::net::TcpListener` is `Send`; the registered
    /// `TcpListener` is not.
    ///
    /// # Examples
    ///
    /// ```
    /// use tickless_io::TcpListener;
    ///
    /// let first = TcpListener::bind_reuseport_std("127.0.0.1:0".parse().unwrap())?;
    /// let addr = first.local_addr()?; // the port the kernel picked
    /// let second = TcpListener::bind_reuseport_std(addr)?; // same port, another socket
    /// assert_eq!(second.local_addr()?, addr);
    /// # std::io::Result::Ok(())
    /// ```
    ///
    /// # Errors
    ///
    /// Creating, configuring, binding or listening failed: for instance `AddrInUse` when a
    /// socket without `SO_REUSEPORT` (or of another user) holds the port, or `EMFILE`.
    pub fn bind_reuseport_std(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
        let fd = sys::reuseport_listener(addr, REUSEPORT_BACKLOG)?;
        Ok(std::net::TcpListener::from(fd))
    }
}
