//! A core whose thread dies: here core 1's epoll instance is swapped for `/dev/null` under it
//! (no test hook: `dup2` over its descriptor), so that its next `epoll_wait` fails and the
//! core panics in the runtime itself. Its pending handles must resolve, later spawns onto it
//! must resolve at once instead of hanging, the other core must run on, and `shutdown` must
//! report the death.
//!
//! One test alone in this file (its own process): no other runtime may create epoll
//! instances while the test looks for core 1's.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_lite::future::pending;
use tickless::{Builder, CorePanic, ShutdownError};

/// What core 1 panics with when its epoll instance is gone.
const EPOLL_FAILED: &str = "polling the core's epoll instance failed";

/// This process's epoll descriptors, in increasing order.
fn eventpoll_fds() -> io::Result<Vec<i32>> {
    let mut fds = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let entry = entry?;
        let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        // The directory's own descriptor is gone by the time it is read: skip what fails.
        if std::fs::read_link(entry.path()).is_ok_and(|l| l == *"anon_inode:[eventpoll]") {
            fds.push(fd);
        }
    }
    fds.sort_unstable();
    Ok(fds)
}

/// Hang guard: waits (really) until `cond` holds. A count of short sleeps, not a deadline
/// asserted on.
fn wait_for(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..200_000 {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    panic!("never happened: {what}");
}

/// Whether this process still has core 1's thread.
fn core1_thread_alive() -> bool {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return true;
    };
    tasks.filter_map(Result::ok).any(|t| {
        std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "tickless-core-1")
    })
}

/// Counts its drops.
struct Guard(Arc<AtomicUsize>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_core_that_dies_resolves_its_handles_refuses_spawns_and_is_reported() -> io::Result<()> {
    let before = eventpoll_fds()?;
    // No tokio context: its runtime has an epoll descriptor of its own per core.
    let rt = Builder::new().cores(2).tokio_context(false).build()?;
    let created: Vec<i32> = eventpoll_fds()?
        .into_iter()
        .filter(|fd| !before.contains(fd))
        .collect();
    // Each core has its epoll instance and a duplicate of it, which its registrations use to
    // leave the set when they are dropped on another thread.
    assert_eq!(
        created.len(),
        4,
        "two epoll descriptors per core: {created:?}"
    );
    // Core 0's are created on this thread first, core 1's after them on its own thread, each
    // instance before its duplicate.
    let core1_epoll = created[2];
    assert!(core1_thread_alive());

    // A task waiting on core 1 when it dies, holding a guard.
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = Guard(drops.clone());
    let waiting = rt.handle(1).spawn(async move {
        let _guard = guard;
        pending::<()>().await
    });
    assert_eq!(rt.handle(1).spawn(async { 1 }).join().unwrap(), 1);
    let h1 = rt.handle(1);
    wait_for("core 1 sleeps", || h1.is_parked());

    // Core 1 sleeps in `epoll_wait` on its instance; its next call gets /dev/null instead.
    let null = std::fs::File::open("/dev/null")?;
    // SAFETY: `dup2` onto a descriptor this process owns (core 1's epoll instance, which the
    // runtime keeps open and closes once, at its end: it then closes our duplicate instead).
    let dup = unsafe { libc::dup2(null.as_raw_fd(), core1_epoll) };
    assert_eq!(dup, core1_epoll, "{}", io::Error::last_os_error());
    drop(null);

    // Wake it: the wake lands on the old instance (still held by the sleeping call), the core
    // turns, and its next `epoll_wait` fails: it panics.
    let woken = rt.handle(1).spawn(async {});
    wait_for("the waiting task's handle resolves", || {
        waiting.is_finished()
    });
    assert!(waiting.join().unwrap_err().is_cancelled());
    assert_eq!(drops.load(Ordering::SeqCst), 1, "its future was dropped");
    wait_for("the waking spawn resolves", || woken.is_finished());
    // It ran or was cancelled, depending on when the core died; it must not hang.
    let _ = woken.join();

    // Once the dead core's thread is gone (it closed its inbox on its way out), later spawns
    // onto it resolve at once, as cancelled.
    wait_for("core 1's thread ends", || !core1_thread_alive());
    assert!(!rt.handle(1).is_parked(), "a dead core does not sleep");
    for _ in 0..3 {
        let late = rt.handle(1).spawn(async { 2 });
        assert!(
            late.is_finished(),
            "a spawn onto a dead core resolves at once"
        );
        assert!(late.join().unwrap_err().is_cancelled());
    }
    let at = tickless::time::Instant::now() + Duration::from_secs(20);
    let late_at = rt.handle(1).spawn_at(at, async { 3 });
    assert!(late_at.is_finished());
    assert!(late_at.join().unwrap_err().is_cancelled());
    let pinned = rt.handle(1).spawn_pinned(|| async { 4 });
    assert!(pinned.join().unwrap_err().is_cancelled());

    // Core 0 runs on, and so do spawns onto it.
    assert_eq!(rt.block_on(async { 5 }), 5);
    let on_0 = rt.handle(0).spawn(async { 6 });
    assert_eq!(rt.block_on(on_0).unwrap(), 6);

    // An accept loop on core 0 places no connection on the dead core, however loaded core 0
    // is (a placed spawn there would be refused: its handle cancelled).
    let served_on = rt.block_on(async {
        let parked: Vec<_> = (0..20)
            .map(|_| tickless::task::spawn_local(pending::<()>()))
            .collect();
        let listener = tickless::net::TcpListener::bind("127.0.0.1:0").await?;
        let _client = std::net::TcpStream::connect(listener.local_addr()?)?;
        let (stream, _) = listener.accept().await?;
        let task = tickless::spawn(async move {
            drop(stream);
            tickless::core_id()
        });
        let core = task.await;
        for p in &parked {
            p.abort();
        }
        io::Result::Ok(core)
    })?;
    assert_eq!(served_on.expect("served, not refused"), 0);

    // The shutdown reports the death, with the panic's message.
    let err: ShutdownError = rt.shutdown(Duration::from_secs(10)).unwrap_err();
    assert!(err.stuck.is_empty(), "{err:?}");
    match &err.panicked[..] {
        [CorePanic { core: 1, message }] => {
            assert!(message.contains(EPOLL_FAILED), "{message:?}")
        }
        other => panic!("expected core 1's death alone, got {other:?}"),
    }
    assert!(err.to_string().contains("core 1 died"), "{err}");
    Ok(())
}
