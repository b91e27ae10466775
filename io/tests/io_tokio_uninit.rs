//! tokio's `AsyncRead` on the byte-stream types reads into the uninitialised part of a
//! `ReadBuf` (feature `tokio`): the bytes and lengths it reports, a full buffer, a zero-capacity
//! one, a short read, end of file, for each stream type.
#![cfg(feature = "tokio")]

mod common;

use std::future::poll_fn;
use std::io::{self, Write};
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use common::run;
use tickless_io::{pipe, TcpListener, TcpStream, UnixStream};

use tickless_io::internal::Reactor;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Reads once into `buf`, waiting as long as it takes.
async fn read_once<R: AsyncRead + Unpin>(r: &mut R, buf: &mut ReadBuf<'_>) -> io::Result<()> {
    poll_fn(|cx| Pin::new(&mut *r).poll_read(cx, buf)).await
}

/// Polls a read exactly once with a waker that does nothing.
fn poll_once<R: AsyncRead + Unpin>(r: &mut R, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
    Pin::new(r).poll_read(&mut Context::from_waker(Waker::noop()), buf)
}

/// Writes all of `data` through tokio's `AsyncWrite`.
async fn write_all<W: AsyncWrite + Unpin>(w: &mut W, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        let n = poll_fn(|cx| Pin::new(&mut *w).poll_write(cx, data)).await?;
        data = &data[n..];
    }
    Ok(())
}

/// The checks every stream type passes, on a connected (writer, reader) pair.
async fn reads_into_uninitialised_memory<W, R>(mut w: W, mut r: R) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
    R: AsyncRead + Unpin,
{
    // Uninitialised capacity: the bytes that arrived, and only they, become filled and
    // initialised (no zeroing of the rest).
    let mut storage = [MaybeUninit::<u8>::uninit(); 64];
    let mut buf = ReadBuf::uninit(&mut storage);
    write_all(&mut w, b"hello").await?;
    read_once(&mut r, &mut buf).await?;
    assert_eq!(buf.filled(), b"hello");
    assert_eq!(
        buf.initialized().len(),
        5,
        "the unfilled part was initialised"
    );
    assert_eq!(buf.remaining(), 59);

    // A second read appends after what is filled.
    write_all(&mut w, b", world").await?;
    read_once(&mut r, &mut buf).await?;
    assert_eq!(buf.filled(), b"hello, world");
    assert_eq!(buf.initialized().len(), 12);

    // The previous reads were short, so read readiness is cleared: with nothing sent, the
    // next read waits, and still sees what is sent afterwards.
    let mut storage = [MaybeUninit::<u8>::uninit(); 16];
    let mut buf = ReadBuf::uninit(&mut storage);
    assert!(poll_once(&mut r, &mut buf).is_pending());
    write_all(&mut w, b"abc").await?;
    read_once(&mut r, &mut buf).await?;
    assert_eq!(buf.filled(), b"abc");

    // More than fits: the read fills the buffer exactly, and the rest comes next.
    let sent: Vec<u8> = (0..100u8).collect();
    write_all(&mut w, &sent).await?;
    let mut storage = [MaybeUninit::<u8>::uninit(); 64];
    let mut buf = ReadBuf::uninit(&mut storage);
    read_once(&mut r, &mut buf).await?;
    assert_eq!(buf.filled(), &sent[..64]);
    assert_eq!(buf.remaining(), 0);
    let mut storage = [MaybeUninit::<u8>::uninit(); 64];
    let mut buf = ReadBuf::uninit(&mut storage);
    read_once(&mut r, &mut buf).await?;
    assert_eq!(buf.filled(), &sent[64..]);

    // A buffer with no room: ready at once, nothing read, with or without data waiting.
    let mut none = ReadBuf::new(&mut []);
    assert!(matches!(poll_once(&mut r, &mut none), Poll::Ready(Ok(()))));
    write_all(&mut w, b"kept").await?;
    let mut full_storage = [7u8; 2];
    let mut full = ReadBuf::new(&mut full_storage);
    full.set_filled(2);
    assert!(matches!(poll_once(&mut r, &mut full), Poll::Ready(Ok(()))));
    assert_eq!(full.filled(), [7, 7]);
    let mut storage = [MaybeUninit::<u8>::uninit(); 8];
    let mut buf = ReadBuf::uninit(&mut storage);
    read_once(&mut r, &mut buf).await?;
    assert_eq!(buf.filled(), b"kept");

    // End of file: a successful read that fills nothing, and keeps saying so.
    write_all(&mut w, b"last").await?;
    poll_fn(|cx| Pin::new(&mut w).poll_shutdown(cx)).await?;
    drop(w);
    let mut storage = [MaybeUninit::<u8>::uninit(); 8];
    let mut buf = ReadBuf::uninit(&mut storage);
    read_once(&mut r, &mut buf).await?;
    assert_eq!(buf.filled(), b"last");
    for _ in 0..2 {
        read_once(&mut r, &mut buf).await?;
        assert_eq!(buf.filled(), b"last");
        assert_eq!(buf.initialized().len(), 4);
    }
    Ok(())
}

#[test]
fn unix_stream_reads_into_uninitialised_memory() -> io::Result<()> {
    run(async {
        let (a, b) = UnixStream::pair()?;
        reads_into_uninitialised_memory(a, b).await
    })
}

#[test]
fn pipe_reads_into_uninitialised_memory() -> io::Result<()> {
    run(async {
        let (w, r) = pipe()?;
        reads_into_uninitialised_memory(w, r).await
    })
}

/// A connected pair of TCP streams on localhost.
async fn tcp_pair() -> io::Result<(TcpStream, TcpStream)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let client = TcpStream::connect(addr).await?;
    let (server, _) = listener.accept().await?;
    Ok((client, server))
}

#[test]
fn tcp_stream_reads_into_uninitialised_memory() -> io::Result<()> {
    run(async {
        let (client, server) = tcp_pair().await?;
        reads_into_uninitialised_memory(client, server).await
    })
}

#[test]
fn tcp_read_half_reads_into_uninitialised_memory() -> io::Result<()> {
    run(async {
        let (client, server) = tcp_pair().await?;
        let (read, _write) = server.into_split();
        reads_into_uninitialised_memory(client, read).await
    })
}

#[test]
fn a_partly_initialised_buffer_keeps_its_initialised_length() -> io::Result<()> {
    run(async {
        let (mut a, mut b) = UnixStream::pair()?;
        let mut storage = [MaybeUninit::<u8>::uninit(); 32];
        let mut buf = ReadBuf::uninit(&mut storage);
        buf.put_slice(b"xy");
        buf.initialize_unfilled_to(10);
        write_all(&mut a, b"abc").await?;
        read_once(&mut b, &mut buf).await?;
        assert_eq!(buf.filled(), b"xyabc");
        // What was initialised before the read stays so; the read never shrinks it.
        assert_eq!(buf.initialized().len(), 12);
        Ok(())
    })
}

/// One read into a fresh `ReadBuf` over `storage`'s uninitialised memory, as hyper-util's
/// `TokioIo` and tokio-util's codecs hand it over: the function callgrind counts.
#[inline(never)]
fn read_into_fresh_buf(
    r: &mut UnixStream,
    cx: &mut Context<'_>,
    storage: &mut [MaybeUninit<u8>],
) -> Poll<io::Result<usize>> {
    let mut buf = ReadBuf::uninit(storage);
    Pin::new(r)
        .poll_read(cx, &mut buf)
        .map_ok(|()| buf.filled().len())
}

/// The callgrind subject: `ROUNDS` (default 2000) reads of a 512-byte message into 64 KiB of
/// uninitialised memory. Run it as
/// `valgrind --tool=callgrind --toggle-collect='*read_into_fresh_buf*' <test binary>
/// --ignored --exact bench_read_loop_64k`.
#[test]
#[ignore = "measurement: run under callgrind"]
fn bench_read_loop_64k() -> io::Result<()> {
    let rounds: usize = std::env::var("ROUNDS").map_or(2000, |s| s.parse().unwrap());
    let reactor = Reactor::new()?;
    let _guard = reactor.enter();
    let (mut w, r) = std::os::unix::net::UnixStream::pair()?;
    let mut r = UnixStream::from_std(r)?;
    let msg = [0xabu8; 512];
    let mut storage = vec![MaybeUninit::<u8>::uninit(); 64 * 1024];
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..rounds {
        w.write_all(&msg)?;
        loop {
            match read_into_fresh_buf(&mut r, &mut cx, &mut storage) {
                Poll::Ready(n) => {
                    assert_eq!(n?, msg.len());
                    break;
                }
                // The previous short read cleared readiness: take the edge from the reactor.
                Poll::Pending => drop(reactor.poll(Some(std::time::Duration::ZERO))?),
            }
        }
    }
    Ok(())
}
