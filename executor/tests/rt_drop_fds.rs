//! Dropping a runtime closes every file descriptor it opened: its own (epoll, timerfd,
//! eventfd) and those of the I/O objects its dropped tasks owned. Counted in `/proc/self/fd`.
//!
//! Alone in its binary, and the tests here take turns: any other test running in parallel
//! would open descriptors and skew the count.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use tickless::net::{TcpListener, TcpStream, UnixStream};
use tickless::time::sleep;
use tickless::{spawn_local, yield_now, Runtime};

/// Serialises the tests of this binary.
static FD_LOCK: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    FD_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Open descriptors of this process (the directory handle used to count them included, the
/// same at every count).
fn open_fds() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/fd")?.count())
}

/// Counts its drops.
struct DropGuard(Arc<AtomicUsize>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_dropped_runtime_with_pending_tasks_leaves_no_descriptor_open() -> io::Result<()> {
    let _serial = serial();
    let before = open_fds()?;
    let drops = Arc::new(AtomicUsize::new(0));
    let rt = Runtime::new()?;
    rt.block_on(async {
        // Tasks parked on timers.
        for _ in 0..10_000 {
            let guard = DropGuard(drops.clone());
            drop(spawn_local(async move {
                let _guard = guard;
                sleep(Duration::from_secs(3600)).await;
            }));
        }
        // Tasks parked on pipes that never get data.
        for _ in 0..100 {
            let guard = DropGuard(drops.clone());
            let (w, mut r) = tickless::io::pipe()?;
            drop(spawn_local(async move {
                let _guard = guard;
                let _writer = w;
                let mut buf = [0u8; 1];
                r.read(&mut buf).await
            }));
        }
        // A listener parked in accept, and a connected TCP pair parked in a read.
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mut client = TcpStream::connect(addr).await?;
        let (server, _) = listener.accept().await?;
        client.write_all(b"x").await?;
        let guard = DropGuard(drops.clone());
        drop(spawn_local(async move {
            let _guard = guard;
            let _server = server;
            listener.accept().await
        }));
        let guard = DropGuard(drops.clone());
        drop(spawn_local(async move {
            let _guard = guard;
            let mut buf = [0u8; 2];
            client.read_exact(&mut buf).await
        }));
        // Unix sockets too.
        let (a, mut b) = UnixStream::pair()?;
        let guard = DropGuard(drops.clone());
        drop(spawn_local(async move {
            let _guard = guard;
            let _a = a;
            let mut buf = [0u8; 1];
            b.read(&mut buf).await
        }));
        yield_now().await;
        Ok::<_, io::Error>(())
    })?;
    assert!(open_fds()? > before, "the runtime opened nothing?");
    drop(rt);
    assert_eq!(drops.load(Ordering::SeqCst), 10_000 + 100 + 3);
    assert_eq!(
        open_fds()?,
        before,
        "descriptors leaked by a dropped runtime"
    );
    Ok(())
}

#[test]
fn fifty_runtimes_in_a_row_leave_no_descriptor_open() -> io::Result<()> {
    let _serial = serial();
    let before = open_fds()?;
    for _ in 0..50 {
        let rt = Runtime::new()?;
        rt.block_on(async {
            // Arm the timerfd, park in epoll once and use a pipe.
            sleep(Duration::from_micros(50)).await;
            let (mut w, mut r) = tickless::io::pipe()?;
            w.write_all(b"ok").await?;
            let mut buf = [0u8; 2];
            r.read_exact(&mut buf).await?;
            assert_eq!(&buf, b"ok");
            // And leave a task pending on each.
            drop(spawn_local(async move {
                let _w = w;
                r.read(&mut buf).await
            }));
            Ok::<_, io::Error>(())
        })?;
        drop(rt);
    }
    assert_eq!(open_fds()?, before, "descriptors leaked over 50 runtimes");
    Ok(())
}

#[test]
fn a_core_s_descriptors_close_with_it_even_while_its_handles_live_on() -> io::Result<()> {
    let _serial = serial();
    let before = open_fds()?;
    let rt = tickless::Builder::new().cores(2).build()?;
    let handles = (rt.handle(0), rt.handle(1));
    let task = handles.1.spawn(std::future::pending::<()>());
    drop(rt);
    assert_eq!(
        open_fds()?,
        before,
        "epoll, timerfd and eventfd of both cores closed, handles alive"
    );
    // A handle of a gone core refuses work; nothing reopens or writes a descriptor.
    assert!(task.join().unwrap_err().is_cancelled());
    assert!(handles.1.spawn(async {}).join().unwrap_err().is_cancelled());
    assert_eq!(open_fds()?, before);
    Ok(())
}
