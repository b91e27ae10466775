//! The tokio context (`Builder::tokio_context`, feature `tokio-compat`): tokio's spawn, time and
//! net work from tickless tasks on every core, and their wakes come through the inboxes.

use std::io;
use std::time::Duration;

use tickless::Builder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[test]
fn tokio_spawn_time_and_net_work_from_tickless_tasks_on_every_core() -> io::Result<()> {
    let rt = Builder::new().cores(2).tokio_context(true).build()?;
    for core in 0..2 {
        let out = rt.handle(core).spawn(async move {
            assert_eq!(tickless::core_id(), core);
            tokio::time::sleep(Duration::from_millis(1)).await;
            let spawned = tokio::spawn(async { 40 }).await.unwrap();
            // A tokio TCP echo, polled by tokio's reactor, awaited by a tickless task.
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let addr = listener.local_addr()?;
            let server = tokio::spawn(async move {
                let (mut s, _) = listener.accept().await?;
                let mut buf = [0u8; 2];
                s.read_exact(&mut buf).await?;
                s.write_all(&buf).await?;
                io::Result::Ok(())
            });
            let mut c = tokio::net::TcpStream::connect(addr).await?;
            c.write_all(b"hi").await?;
            let mut back = [0u8; 2];
            c.read_exact(&mut back).await?;
            server.await.unwrap()?;
            assert_eq!(&back, b"hi");
            io::Result::Ok(spawned + 2)
        });
        // Core 0 runs inside block_on; core 1 on its own.
        let got = if core == 0 {
            rt.block_on(out)
        } else {
            out.join()
        };
        assert_eq!(got.unwrap()?, 42);
    }
    // Every wake from tokio's thread went through an inbox.
    let s = rt.stats().total;
    assert!(
        s.remote_wakes_sent + s.remote_wakes_avoided >= 4,
        "tokio's wakes reach the cores across threads: {s:?}"
    );
    Ok(())
}

#[test]
fn without_the_switch_tokio_calls_fail_as_on_any_non_tokio_thread() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let err = rt.block_on(async {
        tickless::spawn(async { tokio::time::sleep(Duration::from_millis(1)).await })
            .await
            .unwrap_err()
    });
    assert!(
        err.is_panic(),
        "tokio's own panic, caught as the task's result"
    );
    Ok(())
}

#[test]
fn the_tokio_runtime_goes_away_with_the_tickless_one() -> io::Result<()> {
    let rt = Builder::new().cores(2).tokio_context(true).build()?;
    let pending = rt
        .handle(1)
        .spawn(async { tokio::time::sleep(Duration::from_secs(3600)).await });
    rt.block_on(async { tokio::task::yield_now().await });
    assert_eq!(rt.shutdown(Duration::from_secs(10)), Ok(()));
    assert!(pending.join().unwrap_err().is_cancelled());
    Ok(())
}
