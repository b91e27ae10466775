//! `TicklessIo`'s `hyper::rt::Read` (tickless-http's `hyper_rt`): the stream reads straight into hyper's
//! uninitialised buffer, through its tokio `AsyncRead`; what hyper is told it got, a short
//! read, end of file, a full buffer, a reader that cheats, and a request served over a Unix
//! stream pair.

use std::future::poll_fn;
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_lite::AsyncWriteExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::rt::{Read, ReadBuf};
use hyper::service::service_fn;
use hyper::{Request, Response};
use tickless::net::UnixStream;
use tickless::{spawn_local, Runtime};
use tickless_http::hyper_rt::TicklessIo;

/// Reads once through hyper's `Read` into `buf`.
async fn read_once<T: Read + Unpin>(io: &mut T, buf: &mut ReadBuf<'_>) -> io::Result<()> {
    poll_fn(|cx| Pin::new(&mut *io).poll_read(cx, buf.unfilled())).await
}

#[test]
fn reads_land_in_hyper_uninitialised_buffer() -> io::Result<()> {
    Runtime::new()?.block_on(async {
        let (mut a, b) = UnixStream::pair()?;
        let mut io = TicklessIo::new(b);

        // A short read into 8 KiB of uninitialised memory: hyper is told exactly what came.
        let mut storage = vec![MaybeUninit::<u8>::uninit(); 8 * 1024];
        let mut buf = ReadBuf::uninit(&mut storage);
        a.write_all(b"GET / HTTP/1.1\r\n").await?;
        read_once(&mut io, &mut buf).await?;
        assert_eq!(buf.filled(), b"GET / HTTP/1.1\r\n");
        // Later reads append.
        a.write_all(b"\r\n").await?;
        read_once(&mut io, &mut buf).await?;
        assert_eq!(buf.filled(), b"GET / HTTP/1.1\r\n\r\n");

        // More than fits: the buffer fills exactly, the rest comes next.
        let sent: Vec<u8> = (0..=255u8).cycle().take(100).collect();
        a.write_all(&sent).await?;
        let mut small = [MaybeUninit::<u8>::uninit(); 64];
        let mut buf = ReadBuf::uninit(&mut small);
        read_once(&mut io, &mut buf).await?;
        assert_eq!(buf.filled(), &sent[..64]);
        // No room left: ready at once, nothing read.
        read_once(&mut io, &mut buf).await?;
        assert_eq!(buf.filled().len(), 64);
        let mut buf = ReadBuf::uninit(&mut small);
        read_once(&mut io, &mut buf).await?;
        assert_eq!(buf.filled(), &sent[64..]);

        // End of file: a successful read that fills nothing.
        a.write_all(b"bye").await?;
        a.close().await?;
        let mut buf = ReadBuf::uninit(&mut small);
        read_once(&mut io, &mut buf).await?;
        assert_eq!(buf.filled(), b"bye");
        read_once(&mut io, &mut buf).await?;
        assert_eq!(buf.filled(), b"bye");
        Ok(())
    })
}

/// Where [`Swapper`]'s own buffer is, kept for the leak checker.
static SWAPPED: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());

/// A reader that fills a `ReadBuf` of its own instead of the one it is given.
struct Swapper;

impl tokio::io::AsyncRead for Swapper {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mine: &'static mut [u8] = Box::leak(Box::new([1u8; 16]));
        // Reachable from a static, so LeakSanitizer (the ASan run) does not count it as lost.
        SWAPPED.store(mine.as_mut_ptr(), Ordering::Relaxed);
        *buf = tokio::io::ReadBuf::new(mine);
        buf.set_filled(16);
        Poll::Ready(Ok(()))
    }
}

#[test]
#[should_panic(expected = "the reader replaced the ReadBuf")]
fn a_reader_that_swaps_the_buffer_is_caught() {
    let mut io = TicklessIo::new(Swapper);
    let mut storage = [MaybeUninit::<u8>::uninit(); 64];
    let mut buf = ReadBuf::uninit(&mut storage);
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let _ = Pin::new(&mut io).poll_read(&mut cx, buf.unfilled());
}

#[test]
fn serves_a_request_over_a_unix_stream_pair() -> io::Result<()> {
    Runtime::new()?.block_on(async {
        let (server_side, client_side) = UnixStream::pair()?;
        let service = service_fn(|req: Request<Incoming>| async move {
            let body = req.into_body().collect().await?.to_bytes();
            let reply = format!("got {} bytes", body.len());
            Ok::<_, hyper::Error>(Response::new(Full::new(Bytes::from(reply))))
        });
        let server = spawn_local(async move {
            hyper::server::conn::http1::Builder::new()
                .serve_connection(TicklessIo::new(server_side), service)
                .await
        });
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(TicklessIo::new(client_side))
                .await
                .map_err(io::Error::other)?;
        let client_conn = spawn_local(conn);
        // A body much larger than one read, so that hyper's buffer fills and refills.
        let upload = Bytes::from(vec![b'x'; 300 * 1024]);
        let req = Request::post("http://localhost/")
            .body(Full::new(upload))
            .map_err(io::Error::other)?;
        let resp = sender.send_request(req).await.map_err(io::Error::other)?;
        assert_eq!(resp.status(), 200);
        let body = resp.into_body().collect().await.map_err(io::Error::other)?;
        assert_eq!(body.to_bytes(), "got 307200 bytes");

        let req = Request::get("http://localhost/")
            .body(Full::new(Bytes::new()))
            .map_err(io::Error::other)?;
        let resp = sender.send_request(req).await.map_err(io::Error::other)?;
        let body = resp.into_body().collect().await.map_err(io::Error::other)?;
        assert_eq!(body.to_bytes(), "got 0 bytes");

        drop(sender);
        client_conn.await?.map_err(io::Error::other)?;
        server.await?.map_err(io::Error::other)?;
        Ok(())
    })
}
