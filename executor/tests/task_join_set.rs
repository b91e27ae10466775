//! `JoinSet`: results in the order tasks finish, only ready tasks polled, aborted on drop.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tickless::task::JoinSet;
use tickless::time::sleep;
use tickless::Builder;

/// Counts drops of the futures that hold it.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn results_come_in_the_order_tasks_finish() -> io::Result<()> {
    let rt = Builder::new().cores(1).start_paused(true).build()?;
    let order = rt.block_on(async {
        let mut set = JoinSet::new();
        for (i, ms) in [(0u32, 30u64), (1, 10), (2, 20)] {
            set.spawn(async move {
                sleep(Duration::from_millis(ms)).await;
                i
            });
        }
        assert_eq!(set.len(), 3);
        let mut order = Vec::new();
        while let Some(r) = set.join_next().await {
            order.push(r.unwrap());
        }
        assert!(set.is_empty());
        assert!(set.join_next().await.is_none(), "empty: None at once");
        order
    });
    assert_eq!(order, [1, 2, 0]);
    Ok(())
}

#[test]
fn dropping_the_set_aborts_its_tasks() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    let drops = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let mut set = JoinSet::new();
        for _ in 0..5 {
            let guard = DropCount(drops.clone());
            set.spawn(async move {
                let _guard = guard;
                std::future::pending::<()>().await
            });
        }
        tickless::task::yield_now().await;
        drop(set);
        for _ in 0..3 {
            tickless::task::yield_now().await;
        }
    });
    assert_eq!(
        drops.load(Ordering::SeqCst),
        5,
        "every task's future dropped"
    );
    Ok(())
}

#[test]
fn shutdown_and_detach() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let mut set = JoinSet::<()>::new();
        set.spawn(std::future::pending());
        set.spawn(std::future::pending());
        set.shutdown().await;
        assert!(set.is_empty());

        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        set.spawn(async move {
            tickless::task::yield_now().await;
            r.fetch_add(1, Ordering::SeqCst);
        });
        set.detach_all();
        assert!(set.is_empty());
        drop(set);
        for _ in 0..3 {
            tickless::task::yield_now().await;
        }
        assert_eq!(ran.load(Ordering::SeqCst), 1, "a detached task runs on");
    });
    Ok(())
}

#[test]
fn panics_and_aborts_come_back_as_errors() -> io::Result<()> {
    let rt = Builder::new().cores(1).build()?;
    rt.block_on(async {
        let mut set = JoinSet::new();
        set.spawn(async { panic!("one bad task") });
        let r = set.join_next().await.unwrap();
        assert!(r.unwrap_err().is_panic());
        set.spawn(std::future::pending::<()>());
        assert!(set.try_join_next().is_none(), "not finished");
        set.abort_all();
        assert!(set.join_next().await.unwrap().unwrap_err().is_cancelled());
    });
    Ok(())
}

#[test]
fn join_all_and_tasks_on_other_cores() -> io::Result<()> {
    let rt = Builder::new().cores(2).build()?;
    let core1 = rt.handle(1);
    let mut cores = rt.block_on(async {
        let mut set = JoinSet::new();
        for _ in 0..4 {
            set.spawn_on(async { tickless::core_id() }, &core1);
        }
        set.spawn(async { tickless::core_id() });
        set.join_all().await
    });
    cores.sort();
    assert_eq!(cores, [0, 1, 1, 1, 1]);
    Ok(())
}

#[test]
fn many_tasks_join_in_deadline_order_with_one_wake_each() -> io::Result<()> {
    // 1,000 tasks finishing one at a time: each finish wakes the set's awaiter (the main
    // future) about once, and results come in finishing order.
    let rt = Builder::new().cores(1).start_paused(true).build()?;
    let joined = rt.block_on(async {
        let mut set = JoinSet::new();
        for i in 0..1000u64 {
            set.spawn(async move {
                sleep(Duration::from_micros(i + 1)).await;
                i
            });
        }
        let mut n = 0;
        while let Some(r) = set.join_next().await {
            assert_eq!(r.unwrap(), n);
            n += 1;
        }
        n
    });
    assert_eq!(joined, 1000);
    let s = rt.stats().total;
    // Each task: polled at spawn and once when its timer fires (2,000), plus the main future
    // about once per finished task.
    assert!(s.polls <= 2000 + 1000 + 10, "polls: {}", s.polls);
    Ok(())
}

#[test]
fn a_set_collects_from_an_iterator_of_futures() -> io::Result<()> {
    let rt = Builder::new().cores(1).start_paused(true).build()?;
    let out = rt.block_on(async {
        // Collected as on tokio: each future spawned into the set, joined as it finishes.
        let mut set: JoinSet<u64> = [30u64, 10, 20]
            .into_iter()
            .map(|ms| async move {
                sleep(Duration::from_millis(ms)).await;
                ms
            })
            .collect();
        assert_eq!(set.len(), 3);
        let mut out = Vec::new();
        while let Some(done) = set.join_next().await {
            out.push(done.expect("a collected task"));
        }
        out
    });
    assert_eq!(out, [10, 20, 30]);
    Ok(())
}
