//! I/O with a peer that has gone, inside a tickless runtime: pipes whose other end is closed
//! (before or while a task waits on them), writes after close, TCP connects to a closed port,
//! TCP peers that reset with data pending, empty buffers, I/O objects made outside a runtime,
//! and streams whose runtime is gone. Every case must end in an `io::Result`, never a panic or a `SIGPIPE`.

use std::io::{self, ErrorKind};
use std::net::{Shutdown, SocketAddr};
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::{TcpListener, TcpStream, UnixStream};
use tickless::time::{sleep, timeout};
use tickless::{spawn_local, yield_now, Runtime};

/// Hang guard for waits that must end because a peer went away; it never fires when they do.
const HANG: Duration = Duration::from_secs(30);

fn run<T>(f: impl std::future::Future<Output = io::Result<T>>) -> io::Result<T> {
    Runtime::new()?.block_on(f)
}

/// A connected pair of TCP streams on the loopback: (client, server side).
async fn tcp_pair() -> io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let client = TcpStream::connect(listener.local_addr()?).await?;
    let (server, _) = listener.accept().await?;
    Ok((client, server))
}

/// A port on the loopback that nothing listens on (it was bound a moment ago, then released).
fn closed_port() -> io::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    drop(listener);
    Ok(addr)
}

#[test]
fn reading_a_pipe_whose_writer_is_dropped_gives_zero() -> io::Result<()> {
    run(async {
        let (w, mut r) = tickless::io::pipe()?;
        drop(w);
        let mut buf = [0u8; 8];
        assert_eq!(r.read(&mut buf).await?, 0);
        assert_eq!(r.read(&mut buf).await?, 0, "end of file is sticky");

        // Data written before the drop is read first.
        let (mut w, mut r) = tickless::io::pipe()?;
        w.write_all(b"last words").await?;
        drop(w);
        let mut got = Vec::new();
        r.read_to_end(&mut got).await?;
        assert_eq!(got, b"last words");
        Ok(())
    })
}

#[test]
fn a_reader_waiting_on_a_pipe_is_woken_when_the_writer_goes() -> io::Result<()> {
    run(async {
        let (w, mut r) = tickless::io::pipe()?;
        let reader = spawn_local(async move {
            let mut buf = [0u8; 8];
            r.read(&mut buf).await
        });
        // Let the reader find the pipe empty and wait.
        for _ in 0..4 {
            yield_now().await;
        }
        assert!(!reader.is_finished());
        drop(w);
        let n = timeout(HANG, reader).await?.unwrap()?;
        assert_eq!(n, 0);
        Ok(())
    })
}

#[test]
fn writing_a_pipe_whose_reader_is_gone_gives_broken_pipe() -> io::Result<()> {
    run(async {
        let (mut w, r) = tickless::io::pipe()?;
        drop(r);
        // The process is still alive to see the error: no SIGPIPE.
        let err = w.write_all(b"nobody listens").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
        let err = w.write(b"again").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
        Ok(())
    })
}

#[test]
fn a_writer_blocked_on_a_full_pipe_gets_broken_pipe_when_the_reader_goes() -> io::Result<()> {
    run(async {
        let (mut w, r) = tickless::io::pipe()?;
        let writer = spawn_local(async move {
            // Far more than a pipe holds: the writer must wait for room.
            let chunk = vec![7u8; 1 << 16];
            let mut written = 0usize;
            loop {
                match w.write(&chunk).await {
                    Ok(n) => written += n,
                    Err(e) => return (written, e),
                }
            }
        });
        for _ in 0..8 {
            yield_now().await;
        }
        assert!(!writer.is_finished(), "the pipe never filled up");
        drop(r);
        let (written, err) = timeout(HANG, writer).await?.unwrap();
        assert!(written > 0);
        assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
        Ok(())
    })
}

#[test]
fn writing_a_closed_pipe_writer_gives_broken_pipe_and_the_reader_sees_eof() -> io::Result<()> {
    run(async {
        let (mut w, mut r) = tickless::io::pipe()?;
        w.write_all(b"bye").await?;
        w.close().await?;
        w.close().await?; // closing twice is fine
        let err = w.write(b"more").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
        let mut got = Vec::new();
        r.read_to_end(&mut got).await?;
        assert_eq!(got, b"bye");
        Ok(())
    })
}

#[test]
fn empty_buffers_return_zero_and_lose_no_data() -> io::Result<()> {
    run(async {
        let (mut w, mut r) = tickless::io::pipe()?;
        assert_eq!(w.write(&[]).await?, 0);
        w.write_all(b"data").await?;
        // With data pending, an empty read returns at once and takes nothing.
        assert_eq!(timeout(HANG, r.read(&mut [])).await??, 0);
        let mut buf = [0u8; 4];
        r.read_exact(&mut buf).await?;
        assert_eq!(&buf, b"data");

        let (mut client, mut server) = tcp_pair().await?;
        assert_eq!(client.write(&[]).await?, 0);
        client.write_all(b"data").await?;
        // Wait for the bytes, then read nothing of them.
        server.read_exact(&mut buf[..1]).await?;
        assert_eq!(timeout(HANG, server.read(&mut [])).await??, 0);
        server.read_exact(&mut buf[1..]).await?;
        assert_eq!(&buf, b"data");
        Ok(())
    })
}

#[test]
fn connecting_to_a_closed_port_is_refused() -> io::Result<()> {
    run(async {
        let addr = closed_port()?;
        let err = TcpStream::connect(addr).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
        // Every address tried, the last error returned.
        let err = TcpStream::connect(&[closed_port()?, addr][..])
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
        // No address at all.
        let err = TcpStream::connect(&[][..] as &[SocketAddr])
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        Ok(())
    })
}

#[test]
fn connecting_to_a_missing_unix_socket_fails() -> io::Result<()> {
    run(async {
        let path = std::env::temp_dir().join(format!(
            "tickless-io-bad-input-{}-nonexistent.sock",
            std::process::id()
        ));
        let err = UnixStream::connect(&path).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
        Ok(())
    })
}

/// Reads until the stream ends; `Ok(bytes)` at end of file, or the error.
async fn read_until_end(s: &mut TcpStream) -> io::Result<usize> {
    let mut buf = [0u8; 4096];
    let mut total = 0;
    loop {
        match s.read(&mut buf).await? {
            0 => return Ok(total),
            n => total += n,
        }
    }
}

#[test]
fn a_peer_that_closes_with_unread_data_resets_the_connection() -> io::Result<()> {
    run(async {
        let (mut client, server) = tcp_pair().await?;
        client.write_all(&[1u8; 1000]).await?;
        // Let the data reach the server's receive buffer, then drop the server unread: the
        // kernel answers with a reset.
        sleep(Duration::from_millis(5)).await;
        drop(server);
        let outcome = timeout(HANG, read_until_end(&mut client)).await?;
        match outcome {
            Ok(n) => assert_eq!(n, 0, "bytes from a peer that sent nothing"),
            Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
        }
        // Writes to the reset connection fail; the process is still alive.
        let mut failed = None;
        for _ in 0..100 {
            if let Err(e) = client.write(b"after the reset").await {
                failed = Some(e);
                break;
            }
            sleep(Duration::from_millis(1)).await;
        }
        let err = failed.expect("writes to a reset connection kept succeeding");
        assert!(
            matches!(
                err.kind(),
                ErrorKind::BrokenPipe | ErrorKind::ConnectionReset
            ),
            "{err}"
        );
        Ok(())
    })
}

#[test]
fn a_peer_that_closes_cleanly_gives_eof_then_broken_pipe() -> io::Result<()> {
    run(async {
        let (mut client, mut server) = tcp_pair().await?;
        server.write_all(b"goodbye").await?;
        server.close().await?;
        let mut got = Vec::new();
        timeout(HANG, client.read_to_end(&mut got)).await??;
        assert_eq!(got, b"goodbye");
        // The client's writes reach a socket that is gone: a reset, then EPIPE.
        drop(server);
        let mut failed = None;
        for _ in 0..100 {
            if let Err(e) = client.write(b"anyone?").await {
                failed = Some(e);
                break;
            }
            sleep(Duration::from_millis(1)).await;
        }
        let err = failed.expect("writes to a closed peer kept succeeding");
        assert!(
            matches!(
                err.kind(),
                ErrorKind::BrokenPipe | ErrorKind::ConnectionReset
            ),
            "{err}"
        );
        Ok(())
    })
}

#[test]
fn a_reader_waiting_on_a_socket_is_woken_when_the_peer_shuts_down() -> io::Result<()> {
    run(async {
        let (mut client, server) = tcp_pair().await?;
        let reader = spawn_local(async move { read_until_end(&mut client).await });
        for _ in 0..4 {
            yield_now().await;
        }
        assert!(!reader.is_finished());
        server.shutdown_std(Shutdown::Write)?;
        assert_eq!(timeout(HANG, reader).await?.unwrap()?, 0);
        Ok(())
    })
}

#[test]
fn a_reader_waiting_on_a_socket_is_woken_when_the_peer_resets() -> io::Result<()> {
    run(async {
        let (mut client, server) = tcp_pair().await?;
        client.write_all(&[2u8; 1000]).await?;
        let reader = spawn_local(async move { read_until_end(&mut client).await });
        for _ in 0..4 {
            yield_now().await;
        }
        assert!(!reader.is_finished());
        // Closed with the client's bytes unread: a reset, not a FIN.
        drop(server);
        match timeout(HANG, reader).await?.unwrap() {
            Ok(n) => assert_eq!(n, 0, "bytes from a peer that sent nothing"),
            Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
        }
        Ok(())
    })
}

#[test]
fn io_objects_made_outside_a_runtime_work_in_one_and_give_an_error_outside() -> io::Result<()> {
    // Made anywhere: each belongs to the core that first polls it.
    let (mut w, mut r) = tickless::io::pipe()?;
    let (mut a, mut b) = UnixStream::pair()?;
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = std_listener.local_addr()?;
    let listener = TcpListener::from_std(std_listener)?;
    // Polled outside a runtime: an error, not a panic and not a wait.
    let err = futures_lite::future::block_on(r.read(&mut [0u8; 1])).unwrap_err();
    assert!(err.to_string().contains("no tickless runtime"), "{err}");
    let err = futures_lite::future::block_on(listener.accept()).unwrap_err();
    assert!(err.to_string().contains("no tickless runtime"), "{err}");
    let err = futures_lite::future::block_on(TcpStream::connect(addr)).unwrap_err();
    assert!(err.to_string().contains("no tickless runtime"), "{err}");
    // In a runtime they work.
    run(async {
        w.write_all(b"p").await?;
        let mut one = [0u8; 1];
        r.read_exact(&mut one).await?;
        a.write_all(b"u").await?;
        b.read_exact(&mut one).await?;
        let client = TcpStream::connect(addr).await?;
        let (server, _) = listener.accept().await?;
        assert_eq!(server.peer_addr()?, client.local_addr()?);
        Ok(())
    })
}

/// A stream keeps working only where its core runs: once that runtime is gone, every use
/// returns an error, whether no runtime runs on the thread or another one does (before, the
/// check compared threads, and a read on the same thread waited for ever with data queued).
#[test]
fn a_stream_whose_runtime_was_dropped_returns_an_error_not_a_hang() -> io::Result<()> {
    let (mut a, mut b) = Runtime::new()?.block_on(async {
        let (mut a, b) = UnixStream::pair()?;
        a.write_all(b"bound").await?;
        io::Result::Ok((a, b))
    })?;
    Runtime::new()?.block_on(async { b.write_all(b"data waiting").await })?;
    let mut buf = [0u8; 16];
    let err = futures_lite::future::block_on(a.read(&mut buf)).unwrap_err();
    assert!(err.to_string().contains("has stopped"), "{err}");
    let again = Runtime::new()?;
    let err = again.block_on(a.read(&mut buf)).unwrap_err();
    assert!(err.to_string().contains("has stopped"), "{err}");
    Ok(())
}
