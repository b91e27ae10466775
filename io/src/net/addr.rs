//! Addresses to connect to, and how a host name among them is resolved off the core.
//!
//! `std::net::ToSocketAddrs` resolves host names with a blocking call, which would stall a core
//! and every connection on it. [`ToSocketAddrs`] (tokio's design) splits an address into what
//! needs no lookup (an address, an IP and a port) and a name to look up; the name goes to the
//! current reactor's [`Resolve`] hook, which the runtime sets to a lookup on its blocking pool.
//! With no hook (a bare reactor), the lookup blocks, as std's does.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::pin::Pin;

/// What an address argument stands for.
#[doc(hidden)]
#[derive(Debug)]
pub enum Addrs {
    /// Addresses, no lookup needed.
    Ready(Vec<SocketAddr>),
    /// A `host:port` to look up.
    Lookup(String),
}

/// The future a [`Resolve`] hook returns.
pub type Resolving = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send>>;

/// A reactor's name resolver: takes `host:port`, gives its addresses.
pub type Resolve = fn(String) -> Resolving;

mod sealed {
    /// Only this crate's address types.
    pub trait Sealed {}
}

/// An address [`TcpStream::connect`](crate::TcpStream::connect) takes, as tokio's
/// `ToSocketAddrs`: a `SocketAddr`, an `(IpAddr, u16)`, a `"host:port"` string, a
/// `(host, port)` pair, or a slice of addresses. Sealed: it names the types, it is not for
/// implementing.
pub trait ToSocketAddrs: sealed::Sealed {
    /// What the address stands for.
    #[doc(hidden)]
    fn to_addrs(&self) -> io::Result<Addrs>;
}

/// Implements the trait for address types that need no lookup.
macro_rules! ready_addrs {
    ($($ty:ty => |$v:ident| $e:expr),+ $(,)?) => {$(
        impl sealed::Sealed for $ty {}
        impl ToSocketAddrs for $ty {
            fn to_addrs(&self) -> io::Result<Addrs> {
                let $v = self;
                Ok(Addrs::Ready($e))
            }
        }
    )+};
}

ready_addrs! {
    SocketAddr => |a| vec![*a],
    SocketAddrV4 => |a| vec![SocketAddr::V4(*a)],
    SocketAddrV6 => |a| vec![SocketAddr::V6(*a)],
    (IpAddr, u16) => |a| vec![SocketAddr::new(a.0, a.1)],
    (Ipv4Addr, u16) => |a| vec![SocketAddr::new(IpAddr::V4(a.0), a.1)],
    (Ipv6Addr, u16) => |a| vec![SocketAddr::new(IpAddr::V6(a.0), a.1)],
    [SocketAddr] => |a| a.to_vec(),
    Vec<SocketAddr> => |a| a.clone(),
}

impl sealed::Sealed for str {}
impl ToSocketAddrs for str {
    fn to_addrs(&self) -> io::Result<Addrs> {
        Ok(match self.parse() {
            Ok(addr) => Addrs::Ready(vec![addr]),
            Err(_) => Addrs::Lookup(self.to_owned()),
        })
    }
}

impl sealed::Sealed for String {}
impl ToSocketAddrs for String {
    fn to_addrs(&self) -> io::Result<Addrs> {
        self.as_str().to_addrs()
    }
}

impl sealed::Sealed for (&str, u16) {}
impl ToSocketAddrs for (&str, u16) {
    fn to_addrs(&self) -> io::Result<Addrs> {
        let (host, port) = *self;
        Ok(match host.parse::<IpAddr>() {
            Ok(ip) => Addrs::Ready(vec![SocketAddr::new(ip, port)]),
            Err(_) => Addrs::Lookup(format!("{host}:{port}")),
        })
    }
}

impl sealed::Sealed for (String, u16) {}
impl ToSocketAddrs for (String, u16) {
    fn to_addrs(&self) -> io::Result<Addrs> {
        (self.0.as_str(), self.1).to_addrs()
    }
}

impl<T: ToSocketAddrs + ?Sized> sealed::Sealed for &T {}
impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {
    fn to_addrs(&self) -> io::Result<Addrs> {
        (**self).to_addrs()
    }
}

/// The addresses `addr` stands for, looking a name up with `resolve` (or, with none, with a
/// blocking lookup).
pub(crate) async fn resolve<A: ToSocketAddrs + ?Sized>(
    addr: &A,
    resolve: Option<Resolve>,
) -> io::Result<Vec<SocketAddr>> {
    match addr.to_addrs()? {
        Addrs::Ready(addrs) => Ok(addrs),
        Addrs::Lookup(name) => match resolve {
            Some(hook) => hook(name).await,
            None => std::net::ToSocketAddrs::to_socket_addrs(&name).map(Vec::from_iter),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready<T: ToSocketAddrs + ?Sized>(a: &T) -> Vec<SocketAddr> {
        match a.to_addrs().unwrap() {
            Addrs::Ready(v) => v,
            Addrs::Lookup(n) => panic!("{n} needs a lookup"),
        }
    }

    #[test]
    fn literal_addresses_need_no_lookup() {
        let a: SocketAddr = "127.0.0.1:80".parse().unwrap();
        assert_eq!(ready(&a), [a]);
        assert_eq!(ready(&"127.0.0.1:80"), [a]);
        assert_eq!(ready(&String::from("127.0.0.1:80")), [a]);
        assert_eq!(ready(&("127.0.0.1", 80)), [a]);
        assert_eq!(ready(&(Ipv4Addr::LOCALHOST, 80)), [a]);
        assert_eq!(ready(&[a, a][..]), [a, a]);
        assert_eq!(ready(&"[::1]:80").len(), 1);
    }

    #[test]
    fn host_names_are_looked_up() {
        for (addrs, name) in [
            ("localhost:80".to_addrs(), "localhost:80"),
            (("example.com", 443).to_addrs(), "example.com:443"),
        ] {
            match addrs.unwrap() {
                Addrs::Lookup(n) => assert_eq!(n, name),
                Addrs::Ready(v) => panic!("{name}: {v:?}"),
            }
        }
    }
}
