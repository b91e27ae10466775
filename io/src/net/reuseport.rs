//! Binding `SO_REUSEPORT` listeners away from any core, to hand one to each core.

use std::io;
use std::net::SocketAddr;

use crate::net::tcp_listener::{TcpListener, REUSEPORT_BACKLOG};
use crate::sys;

impl TcpListener {
    /// Binds a listening std socket with `SO_REUSEADDR` and `SO_REUSEPORT`, non-blocking and
    /// close-on-exec, on any thread: no reactor is needed. It shares `addr` with every socket of
    /// the same user that has `SO_REUSEPORT` (tokio's `TcpSocket::set_reuseport(true)`), in
    /// this process or another: the kernel spreads connections over all of them.
    ///
    /// This is the first half of [`bind_reuseport`](Self::bind_reuseport), for servers that bind
    /// every core's listener up front (so that a bind error surfaces before anything runs, and
    /// port 0 becomes one port for all cores), then move each into its core and register it there
    /// with [`from_std`](Self::from_std). `std::net::TcpListener` is `Send`; the registered
    /// `TcpListener` is not. To refuse an address that something else holds, bind the first
    /// with [`bind_reuseport_first_std`](Self::bind_reuseport_first_std).
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
        let fd = sys::reuseport_listener(addr, REUSEPORT_BACKLOG, sys::Share::Join)?;
        Ok(std::net::TcpListener::from(fd))
    }

    /// Binds the first listener of a new `SO_REUSEPORT` group on `addr`, as
    /// [`bind_reuseport_std`](Self::bind_reuseport_std) does, but only if nothing holds the
    /// address: `AddrInUse` if any socket is bound to it, with `SO_REUSEPORT` or without, in
    /// this process or another (a second copy of a server, a second server in one process).
    /// The listeners bound after it with `bind_reuseport_std` on its
    /// [`local_addr`](std::net::TcpListener::local_addr) share its address.
    ///
    /// # Implementation
    ///
    /// `SO_REUSEPORT` is set after the `bind(2)`: Linux lets a bind share an address only if
    /// every socket already on it has the option at that moment, so this bind is as exclusive
    /// as a plain one, and the binds after it, which find the option set, share. No probe
    /// socket is bound and closed first, so no other bind can slip in between. What remains
    /// open: once the group exists, any socket of the same user that sets `SO_REUSEPORT`
    /// itself (a server that asks to share, such as one with `reuse_port(true)`) joins it, as
    /// on any `SO_REUSEPORT` listener.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use tickless_io::TcpListener;
    ///
    /// let first = TcpListener::bind_reuseport_first_std("127.0.0.1:0".parse().unwrap())?;
    /// let addr = first.local_addr()?;
    /// let core_1 = TcpListener::bind_reuseport_std(addr)?; // joins the group
    /// let again = TcpListener::bind_reuseport_first_std(addr); // a second server
    /// assert_eq!(again.unwrap_err().kind(), ErrorKind::AddrInUse);
    /// # drop(core_1);
    /// # std::io::Result::Ok(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`bind_reuseport_std`](Self::bind_reuseport_std); `AddrInUse` whenever the address
    /// is held.
    pub fn bind_reuseport_first_std(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
        let fd = sys::reuseport_listener(addr, REUSEPORT_BACKLOG, sys::Share::First)?;
        Ok(std::net::TcpListener::from(fd))
    }
}
