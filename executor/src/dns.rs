//! Name lookups, on the runtime's blocking pool.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

use tickless_io::internal::Resolving;

use crate::task::spawn_blocking;

/// The cores' resolver for `TcpStream::connect`: the lookup of `host:port` runs on the blocking
/// pool (set on every core's reactor).
pub(crate) fn resolve_on_pool(name: String) -> Resolving {
    Box::pin(async move { Ok(lookup_host(name).await?.collect()) })
}

/// Resolves `host` (`"example.com:80"`, `("example.com", 80)`, an address) to socket
/// addresses, as tokio's `net::lookup_host`: the system's resolver runs on the blocking pool,
/// so a slow DNS server stalls a pool thread, never the core.
///
/// # Errors
///
/// As `ToSocketAddrs::to_socket_addrs` (the name does not resolve, the port is missing).
///
/// # Examples
///
/// ```
/// let rt = tickless::Runtime::new()?;
/// let addrs: Vec<_> = rt.block_on(tickless::net::lookup_host("127.0.0.1:80"))?.collect();
/// assert_eq!(addrs, ["127.0.0.1:80".parse().unwrap()]);
/// # std::io::Result::Ok(())
/// ```
pub async fn lookup_host<A>(host: A) -> io::Result<impl Iterator<Item = SocketAddr>>
where
    A: ToSocketAddrs + Send + 'static,
{
    spawn_blocking(move || host.to_socket_addrs().map(Vec::from_iter))
        .await?
        .map(Vec::into_iter)
}
