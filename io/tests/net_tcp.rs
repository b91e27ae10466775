//! TCP: echo with byte checks, split halves, refused connects, per-core listeners.

mod common;

use std::io;
use std::net::{Shutdown, SocketAddr};

use common::run;
use futures_lite::future::zip;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless_io::{TcpListener, TcpStream};

/// A recognisable byte pattern.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 13 + i / 241) as u8).collect()
}

/// Reads everything from the read half and writes it back, then closes the write half.
async fn echo(stream: TcpStream) -> io::Result<u64> {
    let (mut rd, mut wr) = stream.into_split();
    let mut buf = vec![0u8; 4096];
    let mut total = 0;
    loop {
        let n = rd.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        wr.write_all(&buf[..n]).await?;
        total += n as u64;
    }
    wr.close().await?;
    Ok(total)
}

#[test]
fn echo_over_loopback_with_split_halves() -> io::Result<()> {
    // Larger than the socket buffers, so both sides must wait for readiness.
    let data = pattern(4 << 20);
    run(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = async {
            let (stream, peer) = listener.accept().await?;
            assert_eq!(stream.peer_addr()?, peer);
            assert_eq!(stream.local_addr()?, addr);
            echo(stream).await
        };
        let client = async {
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            assert!(stream.nodelay()?);
            assert_eq!(stream.peer_addr()?, addr);
            let (mut rd, mut wr) = stream.into_split();
            let send = async {
                wr.write_all(&data).await?;
                wr.close().await
            };
            let receive = async {
                let mut got = Vec::new();
                rd.read_to_end(&mut got).await?;
                Ok::<_, io::Error>(got)
            };
            let (sent, got) = zip(send, receive).await;
            sent?;
            got
        };
        let (echoed, got) = zip(server, client).await;
        assert_eq!(echoed?, data.len() as u64);
        let got = got?;
        assert_eq!(got.len(), data.len());
        assert!(got == data, "echoed bytes differ");
        Ok(())
    })
}

#[test]
fn whole_stream_reads_writes_and_shuts_down() -> io::Result<()> {
    run(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (accepted, connected) = zip(listener.accept(), TcpStream::connect(addr)).await;
        let (mut server, _) = accepted?;
        let mut client = connected?;
        client.write_all(b"hello").await?;
        client.shutdown_std(Shutdown::Write)?;
        let mut got = Vec::new();
        server.read_to_end(&mut got).await?;
        assert_eq!(got, b"hello");
        server.write_all(b"bye").await?;
        server.close().await?;
        let mut back = Vec::new();
        client.read_to_end(&mut back).await?;
        assert_eq!(back, b"bye");
        Ok(())
    })
}

#[test]
fn halves_reunite_and_a_dropped_write_half_means_end_of_file() -> io::Result<()> {
    run(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (accepted, connected) = zip(listener.accept(), TcpStream::connect(addr)).await;
        let (server, _) = accepted?;
        let (rd, wr) = connected?.into_split();
        let mut client = rd.reunite(wr).expect("halves of one stream");
        client.write_all(b"x").await?;

        let (_keep_reading, wr) = server.into_split();
        drop(wr);
        let mut buf = [0u8; 1];
        assert_eq!(client.read(&mut buf).await?, 0);
        Ok(())
    })
}

#[test]
fn connecting_to_a_closed_port_is_refused() -> io::Result<()> {
    run(async {
        // Take a free port, then close it.
        let addr: SocketAddr = {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            listener.local_addr()?
        };
        let err = TcpStream::connect(addr).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
        Ok(())
    })
}

#[test]
fn per_core_listeners_share_a_port() -> io::Result<()> {
    run(async {
        let first = TcpListener::bind_reuseport("127.0.0.1:0".parse().unwrap())?;
        let addr = first.local_addr()?;
        let second = TcpListener::bind_reuseport(addr)?;
        assert_eq!(second.local_addr()?, addr);
        drop(first);
        let (accepted, connected) = zip(second.accept(), TcpStream::connect(addr)).await;
        let (mut server, _) = accepted?;
        let mut client = connected?;
        client.write_all(b"core").await?;
        let mut buf = [0u8; 4];
        server.read_exact(&mut buf).await?;
        assert_eq!(&buf, b"core");
        Ok(())
    })
}

#[test]
fn writing_to_a_closed_connection_fails_without_a_signal() -> io::Result<()> {
    run(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (accepted, connected) = zip(listener.accept(), TcpStream::connect(addr)).await;
        drop(accepted?);
        let mut client = connected?;
        let chunk = pattern(64 * 1024);
        // The first writes may land in the buffer; once the reset arrives they fail.
        let err = loop {
            if let Err(e) = client.write_all(&chunk).await {
                break e;
            }
        };
        assert!(
            matches!(
                err.kind(),
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
            ),
            "unexpected error {err:?}"
        );
        Ok(())
    })
}

#[test]
fn linger_readable_and_try_io() -> io::Result<()> {
    let reactor = tickless_io::internal::Reactor::new()?;
    let _guard = reactor.enter();
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let mut client = std::net::TcpStream::connect(listener.local_addr()?)?;
    let stream = tickless_io::TcpStream::from_std(listener.accept()?.0)?;
    assert_eq!(stream.linger()?, None);
    stream.set_linger(Some(std::time::Duration::from_millis(1500)))?;
    assert_eq!(
        stream.linger()?,
        Some(std::time::Duration::from_secs(2)),
        "whole seconds, up"
    );
    stream.set_linger(None)?;
    assert_eq!(stream.linger()?, None);

    let mut buf = [0u8; 4];
    let err = stream.try_read(&mut buf).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
    assert_eq!(stream.try_write(b"pong")?, 4);
    std::io::Write::write_all(&mut client, b"ping")?;
    common::block_on(&reactor, stream.readable())?;
    assert_eq!(stream.try_read(&mut buf)?, 4);
    assert_eq!(&buf, b"ping");
    common::block_on(&reactor, stream.writable())?;
    let mut got = [0u8; 4];
    std::io::Read::read_exact(&mut client, &mut got)?;
    assert_eq!(&got, b"pong");
    drop(client);
    common::block_on(&reactor, stream.readable())?;
    assert_eq!(stream.try_read(&mut buf)?, 0, "end of file");
    Ok(())
}
