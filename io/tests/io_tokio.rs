//! tokio's I/O traits on the byte-stream types (feature `tokio`).
#![cfg(feature = "tokio")]

mod common;

use std::future::poll_fn;
use std::io;
use std::pin::Pin;

use common::run;
use tickless_io::{pipe, UnixStream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

#[test]
fn tokio_traits_move_bytes_and_shut_down() -> io::Result<()> {
    run(async {
        let (mut a, mut b) = UnixStream::pair()?;
        let n = poll_fn(|cx| Pin::new(&mut a).poll_write(cx, b"tokio")).await?;
        assert_eq!(n, 5);
        poll_fn(|cx| Pin::new(&mut a).poll_shutdown(cx)).await?;

        let mut storage = [0u8; 16];
        let mut buf = ReadBuf::new(&mut storage);
        poll_fn(|cx| Pin::new(&mut b).poll_read(cx, &mut buf)).await?;
        assert_eq!(buf.filled(), b"tokio");
        // End of file: a successful read that fills nothing.
        poll_fn(|cx| Pin::new(&mut b).poll_read(cx, &mut buf)).await?;
        assert_eq!(buf.filled(), b"tokio");

        let (mut w, mut r) = pipe()?;
        poll_fn(|cx| Pin::new(&mut w).poll_write(cx, b"p")).await?;
        let mut one = [0u8; 1];
        let mut buf = ReadBuf::new(&mut one);
        poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf)).await?;
        assert_eq!(buf.filled(), b"p");
        Ok(())
    })
}
