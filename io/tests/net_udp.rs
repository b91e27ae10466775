//! UDP: datagrams to an address and over a connected pair.

mod common;

use std::io;

use common::run;
use futures_lite::future::zip;
use tickless_io::UdpSocket;

#[test]
fn send_to_and_recv_from() -> io::Result<()> {
    run(async {
        let a = UdpSocket::bind("127.0.0.1:0").await?;
        let b = UdpSocket::bind("127.0.0.1:0").await?;
        let (a_addr, b_addr) = (a.local_addr()?, b.local_addr()?);

        // b waits first, so the datagram arrives through a readiness event.
        let mut buf = [0u8; 64];
        let (received, sent) = zip(b.recv_from(&mut buf), async {
            futures_lite::future::yield_now().await;
            a.send_to(b"ping", b_addr).await
        })
        .await;
        assert_eq!(sent?, 4);
        let (n, from) = received?;
        assert_eq!((&buf[..n], from), (&b"ping"[..], a_addr));

        b.send_to(b"pong!", a_addr).await?;
        let (n, from) = a.recv_from(&mut buf).await?;
        assert_eq!((&buf[..n], from), (&b"pong!"[..], b_addr));
        Ok(())
    })
}

#[test]
fn connected_send_and_recv() -> io::Result<()> {
    run(async {
        let a = UdpSocket::bind("127.0.0.1:0").await?;
        let b = UdpSocket::bind("127.0.0.1:0").await?;
        a.connect(b.local_addr()?).await?;
        b.connect(a.local_addr()?).await?;
        assert_eq!(a.peer_addr()?, b.local_addr()?);

        for i in 0..3u8 {
            a.send(&[i, i, i]).await?;
        }
        let mut buf = [0u8; 16];
        for i in 0..3u8 {
            // Datagrams keep their boundaries and order on loopback.
            assert_eq!(b.recv(&mut buf).await?, 3);
            assert_eq!(&buf[..3], &[i, i, i]);
        }
        Ok(())
    })
}

#[test]
fn readable_and_try_recv_without_waiting() -> io::Result<()> {
    let reactor = tickless_io::internal::Reactor::new()?;
    let _guard = reactor.enter();
    let a = tickless_io::UdpSocket::from_std(std::net::UdpSocket::bind("127.0.0.1:0")?)?;
    let b = std::net::UdpSocket::bind("127.0.0.1:0")?;
    common::block_on(&reactor, a.connect(b.local_addr()?))?;
    b.connect(a.local_addr()?)?;
    let mut buf = [0u8; 8];
    assert_eq!(
        a.try_recv(&mut buf).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    b.send(b"one")?;
    common::block_on(&reactor, a.readable())?;
    assert_eq!(a.try_recv(&mut buf)?, 3);
    b.send(b"two")?;
    common::block_on(&reactor, a.readable())?;
    let (n, from) = a.try_recv_from(&mut buf)?;
    assert_eq!((&buf[..n], from), (&b"two"[..], b.local_addr()?));
    common::block_on(&reactor, a.writable())?;
    assert_eq!(a.try_send(b"back")?, 4);
    assert_eq!(b.recv(&mut buf)?, 4);
    Ok(())
}
