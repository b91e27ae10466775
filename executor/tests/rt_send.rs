//! A `Runtime` is `Send` and `Sync`, as tokio's: core 0 runs on whichever thread calls
//! `block_on`, one thread at a time, and `!Send` tasks stay on the thread that spawned them.
// The tests hand a task's handle out of one `block_on` to await it in another, on purpose.
#![allow(clippy::async_yields_async)]

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use tickless::runtime::Placement;
use tickless::{Builder, Runtime};

#[test]
fn a_runtime_is_send_and_sync() {
    fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Runtime>();
}

/// tokio's pattern for a synchronous wrapper: a client that owns its runtime.
struct BlockingClient {
    rt: Runtime,
}

impl BlockingClient {
    fn call<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }
}

#[test]
fn a_blocking_client_that_owns_a_runtime_moves_to_another_thread_with_its_tasks(
) -> std::io::Result<()> {
    let client = BlockingClient {
        rt: Builder::new()
            .cores(1)
            .placement(Placement::Local)
            .build()?,
    };
    // A task spawned on this thread, still waiting when `block_on` returns.
    let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
    let task = client.call(async move {
        tickless::spawn(async move { rx.await.map(|v| (v * 2, tickless::core_id())) })
    });
    let before = client.rt.stats().cores[0].polls;
    // The client moves to another thread, whose `block_on` runs core 0 and so the task.
    let (out, polls) = thread::spawn(move || {
        let out = client.call(async move {
            tx.send(21).unwrap();
            task.await
        });
        (out, client.rt.stats().cores[0].polls)
    })
    .join()
    .unwrap();
    assert_eq!(out.unwrap().unwrap(), (42, 0));
    // The task's second poll and the `block_on` future's, on the other thread.
    assert!(polls >= before + 2, "{before} -> {polls}");
    Ok(())
}

#[test]
fn block_on_from_two_threads_at_once_runs_one_after_the_other() -> std::io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let inside = AtomicUsize::new(0);
    let most = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                rt.block_on(async {
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    for _ in 0..50 {
                        // Yields to the loop (and the other core), never leaving `block_on`.
                        tickless::task::yield_now().await;
                        let id = tickless::spawn(async { tickless::core_id() })
                            .await
                            .unwrap();
                        assert!(id < 2);
                    }
                    inside.fetch_sub(1, Ordering::SeqCst);
                    done.fetch_add(1, Ordering::SeqCst);
                });
            });
        }
    });
    assert_eq!(done.load(Ordering::SeqCst), 4);
    // Core 0 ran one `block_on` at a time.
    assert_eq!(most.load(Ordering::SeqCst), 1);
    Ok(())
}

#[test]
fn block_on_on_another_thread_while_a_spawn_local_task_lives_panics_and_leaves_the_runtime_usable(
) -> std::io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
    let local = rt.block_on(async move {
        let here = Rc::new(Cell::new(1)); // not `Send`
        tickless::spawn_local(async move { here.get() + rx.await.unwrap() })
    });
    thread::scope(|s| {
        let err = s
            .spawn(|| rt.block_on(async { 0 }))
            .join()
            .expect_err("block_on on another thread must refuse");
        let msg = err
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or("");
        assert!(
            msg.contains("1 `spawn_local` task(s) alive"),
            "unexpected message: {msg}"
        );
    });
    // The lease was given back by the panic: this thread runs core 0 again, and the task.
    tx.send(41).unwrap();
    assert_eq!(rt.block_on(local).unwrap(), 42);
    // With no local task alive, another thread may now run it.
    let rt = thread::spawn(move || {
        assert_eq!(rt.block_on(async { tickless::core_id() }), 0);
        rt
    })
    .join()
    .unwrap();
    rt.shutdown(Duration::from_secs(10)).unwrap();
    Ok(())
}

/// Counts the drops of what it guards.
struct CountDrop(Arc<AtomicUsize>);

impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_runtime_shut_down_on_another_thread_leaks_live_spawn_local_futures_and_says_so(
) -> std::io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let dropped = Arc::new(AtomicUsize::new(0));
    let (local, sent) = rt.block_on({
        let dropped = dropped.clone();
        async move {
            let guard = CountDrop(dropped.clone());
            let here = Rc::new(()); // not `Send`
            let local = tickless::spawn_local(async move {
                let _keep = (here, guard);
                std::future::pending::<u32>().await
            });
            // A `Send` task of core 0 is dropped as usual wherever the runtime is.
            let guard = CountDrop(dropped);
            let sent = tickless::spawn(async move {
                let _keep = guard;
                std::future::pending::<u32>().await
            });
            (local, sent)
        }
    });
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(rt.shutdown(Duration::from_secs(10))).unwrap());
    let err = rx.recv().unwrap().unwrap_err();
    assert_eq!(err.leaked_local, 1);
    assert!(err.stuck.is_empty() && err.panicked.is_empty() && err.blocking == 0);
    assert!(err
        .to_string()
        .contains("1 `spawn_local` future(s) of core 0 leaked"));
    // The `Send` task's future was dropped; the bound one's destructor never ran.
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    // Both handles resolve, as cancelled.
    let other = Runtime::new()?;
    assert!(other.block_on(local).unwrap_err().is_cancelled());
    assert!(other.block_on(sent).unwrap_err().is_cancelled());
    Ok(())
}

#[test]
fn a_runtime_shut_down_on_another_thread_with_no_local_task_drops_everything() -> std::io::Result<()>
{
    let rt = Builder::new().cores(1).build()?;
    let dropped = Arc::new(AtomicUsize::new(0));
    let guard = CountDrop(dropped.clone());
    let task = rt.block_on(async move {
        tickless::spawn_local(async move {
            let _keep = (Rc::new(()), guard);
            7
        })
        .await
    });
    assert_eq!(task.unwrap(), 7);
    let res = thread::spawn(move || rt.shutdown(Duration::from_secs(10)))
        .join()
        .unwrap();
    assert_eq!(res, Ok(()));
    assert_eq!(dropped.load(Ordering::SeqCst), 1);
    Ok(())
}

#[test]
fn a_pinning_runtime_pins_another_block_on_thread_to_core_0_s_cpu_for_the_call(
) -> std::io::Result<()> {
    let cpu = tickless_io::internal::cpu::allowed_cpus;
    let allowed = cpu()?;
    // The building thread may run on the last CPU only (so that its affinity differs from
    // this thread's), and core 0 is pinned to it.
    let last = *allowed.last().unwrap();
    // Built on a thread of its own, which it pins for its life; used and dropped here.
    let rt = thread::spawn(move || {
        tickless_io::internal::cpu::set_current_affinity(&[last])?;
        Builder::new().cores(1).pin(true).build()
    })
    .join()
    .unwrap()?;
    let inside = rt.block_on(async move { cpu().unwrap() });
    assert_eq!(inside, vec![last]);
    assert_eq!(cpu()?, allowed, "given back when `block_on` returned");
    drop(rt);
    assert_eq!(
        cpu()?,
        allowed,
        "the drop restores nothing on a thread it did not pin"
    );
    Ok(())
}

#[test]
fn stats_from_another_thread_while_block_on_runs_do_not_wait_for_it() -> std::io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let polls = rt.block_on(async {
        tickless::task::yield_now().await;
        // Another thread asks while this one holds core 0: it gets the published counters
        // at once (waiting for this `block_on` would never end: it waits for that thread).
        thread::scope(|s| s.spawn(|| rt.stats().cores[0].polls).join().unwrap())
    });
    // Published at core 0's last idle transition, so never ahead of the live count.
    assert!(polls <= rt.stats().cores[0].polls);
    Ok(())
}

#[test]
fn the_shutdown_error_says_how_many_bound_futures_were_leaked() {
    let leak =
        "`spawn_local` future(s) of core 0 leaked, not dropped: the runtime was shut down on \
                another thread than the one that spawned them";
    let err = |stuck: Vec<usize>, blocking, leaked_local| tickless::ShutdownError {
        stuck,
        panicked: vec![],
        blocking,
        leaked_local,
    };
    assert_eq!(err(vec![], 0, 2).to_string(), format!("2 {leak}"));
    assert_eq!(
        err(vec![], 1, 1).to_string(),
        format!(
            "1 blocking job still running at the shutdown timeout (its thread was left running, \
             detached); 1 {leak}"
        )
    );
    assert_eq!(
        err(vec![3], 0, 1).to_string(),
        format!(
            "cores [3] did not stop within the shutdown timeout (a task never yields?); 1 {leak}"
        )
    );
    assert_eq!(
        err(vec![3], 0, 0).to_string(),
        "cores [3] did not stop within the shutdown timeout (a task never yields?)"
    );
}

/// The message of a panic caught from `f`.
fn panic_message(f: impl FnOnce()) -> String {
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("panics");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn join_on_the_thread_that_runs_core_0_panics_wherever_core_0_moved() {
    // A guard against a hang, not a measurement: a `join` that failed to panic would wait
    // for ever.
    let (done, finished) = mpsc::channel();
    thread::spawn(move || {
        // No tokio context: with one, a thread of the runtime's runs core 0 outside `block_on`.
        let rt = Builder::new()
            .cores(1)
            .tokio_context(false)
            .build()
            .unwrap();
        // Outside `block_on`, on the thread that last ran core 0 (here, built it): joining a
        // task of core 0 would wait for itself.
        let task = rt.handle(0).spawn(async { 1 });
        let first = panic_message(|| drop(task.join()));
        let second = thread::spawn(move || {
            rt.block_on(async {});
            // Core 0 moved here: the same holds on this thread now.
            let task = rt.handle(0).spawn(async { 2 });
            panic_message(|| drop(task.join()))
        })
        .join()
        .unwrap();
        done.send((first, second)).unwrap();
    });
    let (first, second) = finished
        .recv_timeout(Duration::from_secs(20))
        .expect("`join` on core 0's own thread waited instead of panicking");
    assert!(first.contains("would wait for itself"), "{first}");
    assert!(second.contains("would wait for itself"), "{second}");
}

/// Core 0's counters read from another thread while a thread is in `block_on` are the ones it
/// published (at its last park, or when the last `block_on` ended): never behind a reading
/// taken before. (Before, core 0 never published: they read 0, then jumped back.)
#[test]
fn core_0_s_counters_read_during_another_block_on_never_go_back() -> std::io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        for _ in 0..100 {
            tickless::task::yield_now().await;
        }
    });
    let before = rt.stats().cores[0];
    assert!(before.polls >= 100);
    let during =
        rt.block_on(async { thread::scope(|s| s.spawn(|| rt.stats().cores[0]).join().unwrap()) });
    assert!(
        during.polls >= before.polls && during.idles >= before.idles,
        "read {during:?} during, {before:?} before"
    );
    assert!(during.polls <= rt.stats().cores[0].polls);
    Ok(())
}

/// A server on every core, its runtime shut down on another thread than the one that ran core
/// 0: core 0's accept loop is a thread-bound task, leaked rather than dropped there, with its
/// listener. The listener is shut down all the same, so the port takes no connection that
/// nobody would serve: every connect is refused. (Before: 10 of 10 connects completed and hung,
/// and a new server on the port lost a share of its connections to the dead socket.)
#[test]
fn a_runtime_shut_down_on_another_thread_leaves_no_listener_open() -> std::io::Result<()> {
    let (rt, server) = two_cores_serving()?;
    let addr = server.local_addr();
    // Core 0 starts its accept loop (a `spawn_local` task of this thread) in this thread's
    // `block_on`, at its first turns.
    rt.block_on(async {
        for _ in 0..10 {
            tickless::task::yield_now().await;
        }
    });
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(rt.shutdown(Duration::from_secs(10))).unwrap());
    let err = rx
        .recv()
        .unwrap()
        .expect_err("core 0's accept loop is leaked");
    assert!(err.leaked_local >= 1, "{err}");
    drop(server);
    for i in 0..10 {
        let connect = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5));
        assert!(
            connect.is_err(),
            "connect {i} to the stopped server's port completed: a listener is still open"
        );
    }
    Ok(())
}

/// A server stopped as usual takes its listeners out of the register a leaking shutdown reads
/// (`ShutIfLeaked`'s drop): the descriptors it closed, which the next sockets reuse, are not
/// shut down later by a shutdown that leaks something else. (Found by cargo mutants: with the
/// register kept, this test's listeners on the reused numbers refused connections.)
#[test]
fn a_server_stopped_before_a_leaking_shutdown_leaves_later_sockets_alone() -> std::io::Result<()> {
    let (rt, server) = two_cores_serving()?;
    rt.block_on(async {
        // Core 0's loop starts (and adopts nothing), then the server stops: every loop ends.
        tickless::task::yield_now().await;
        server.shutdown(Duration::from_secs(10)).await
    })?;
    // The lowest free numbers: those the loops' listeners and duplicates had.
    let listeners: Vec<std::net::TcpListener> = (0..8)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<_>>()?;
    // A bound future leaked by a shutdown on another thread: the register is read.
    rt.block_on(async {
        drop(tickless::spawn_local(std::future::pending::<()>()));
    });
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || tx.send(rt.shutdown(Duration::from_secs(10))).unwrap());
    let err = rx.recv().unwrap().expect_err("the bound future is leaked");
    assert_eq!(err.leaked_local, 1, "{err}");
    for (i, listener) in listeners.iter().enumerate() {
        let addr = listener.local_addr()?;
        let connect = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5));
        assert!(connect.is_ok(), "listener {i} was shut down: {connect:?}");
    }
    Ok(())
}

/// A two-core runtime with a server on every core, its connections closed at once.
fn two_cores_serving() -> std::io::Result<(tickless::Runtime, tickless::net::Server)> {
    let rt = Builder::new().cores(2).build()?;
    let server = tickless::net::serve_per_core(
        &rt,
        "127.0.0.1:0".parse().unwrap(),
        |_stream, _conn| async {},
    )?;
    Ok((rt, server))
}
