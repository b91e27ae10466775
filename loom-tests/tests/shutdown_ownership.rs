//! Shutdown by ownership (`tickless`'s `worker::shutdown`), on the production code: the
//! shutdown loop (`shut_down`), the inbox's close, the schedule function every task's waker
//! calls, and the join slot a blocking job completes, against a model core that keeps its live
//! tasks as the real one does.
//!
//! A task of the core is woken on another thread (a remote wake) and completed on a third (a
//! blocking job's result) while the core shuts down. Whatever the interleaving, the task's
//! future is dropped exactly once, and on the core's thread: a wake in flight when the core
//! would close is waited for, never refused with the task's future still alive (in production,
//! dropping a local task's future on another thread aborts the process). And a task spawned
//! onto the core from another thread (a placed spawn, `Handle::spawn`) while it shuts down is
//! dropped once: by the core, or, refused, by its spawner, never polled.
#![cfg(loom)]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
// `std`'s `Arc`, as in the executor: the schedule function's metadata is one.
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use loom::sync::Mutex;
use loom::thread::{self, ThreadId};
use tickless::loom_exports::{
    schedule, shut_down, spawn_remote, Driver, Due, JoinSlot, Owner, Peers, Runnable, Shared,
    TaskMeta,
};
use tickless_io::internal::Reactor;
use tickless_timer::internal::Op;

/// The threads the model task's future was dropped on.
#[derive(Default)]
struct Trace {
    /// The thread of each drop of the future.
    dropped_on: Vec<ThreadId>,
}

/// The model core: a run queue and a live-task set, as `Core` keeps them; its loop is not run
/// (the core is shutting down).
struct ModelCore {
    shared: Arc<Shared>,
    queue: RefCell<VecDeque<Runnable>>,
    /// Wakers of the polled tasks whose futures are alive (`Core::tasks`).
    live: Arc<Mutex<Vec<Waker>>>,
    ops: RefCell<Vec<Op<Due>>>,
}

impl ModelCore {
    /// A core with nothing queued, its inbox woken through `reactor`'s unparker.
    fn new(reactor: &Reactor) -> ModelCore {
        ModelCore {
            shared: Arc::new(Shared::for_model(reactor.unparker())),
            queue: RefCell::new(VecDeque::new()),
            live: Arc::new(Mutex::new(Vec::new())),
            ops: RefCell::new(Vec::new()),
        }
    }
}

impl Driver for ModelCore {
    type Unpark = tickless_io::internal::Unparker;

    fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
    fn main_poll_starts(&self) {}
    fn run_tasks(&self) -> usize {
        unreachable!("the model core only shuts down")
    }
    fn ops_buffer(&self) -> &RefCell<Vec<Op<Due>>> {
        &self.ops
    }
    fn apply(&self, op: Op<Due>) {
        match op {
            Op::Now(Due::Schedule(runnable)) => self.queue.borrow_mut().push_back(runnable),
            other => drop(other),
        }
    }
    fn expire_timers(&self) -> bool {
        false
    }
    fn has_ready_tasks(&self) -> bool {
        !self.queue.borrow().is_empty()
    }
    fn poll_io_now(&self) {}
    fn idle(&self) {}
    fn flush_rearm(&self) -> Option<u64> {
        None
    }
    fn publish(&self) {}
    fn block(&self, _: Option<u64>) {}
}

impl Owner for ModelCore {
    fn wake_live(&self) {
        let wakers = self.live.lock().unwrap().clone();
        for w in wakers {
            w.wake();
        }
    }
    fn drop_queued(&self) {
        loop {
            let next = self.queue.borrow_mut().pop_front();
            match next {
                Some(runnable) => drop(runnable),
                None => return,
            }
        }
    }
    fn has_live(&self) -> bool {
        !self.live.lock().unwrap().is_empty()
    }
}

/// The task's future: at its first poll it joins the live set (as the harness does); it waits for a blocking job's result; its drop leaves the live set
/// and records the thread.
struct ModelTask {
    live: Arc<Mutex<Vec<Waker>>>,
    trace: Arc<Mutex<Trace>>,
    job: Arc<JoinSlot<u32>>,
    polled: bool,
}

impl Future for ModelTask {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if !self.polled {
            self.polled = true;
            self.live.lock().unwrap().push(cx.waker().clone());
        }
        match self.job.poll_take(cx) {
            // Stays pending even when the job is done: only the shutdown ends it.
            Poll::Ready(_) | Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for ModelTask {
    fn drop(&mut self) {
        self.live.lock().unwrap().clear();
        self.trace
            .lock()
            .unwrap()
            .dropped_on
            .push(thread::current().id());
    }
}

#[test]
fn a_remote_wake_and_a_job_completion_racing_shutdown_leave_the_future_to_the_core() {
    loom::model(|| {
        let reactor = Reactor::new().expect("an epoll instance and an eventfd");
        let core = ModelCore::new(&reactor);
        let shared = core.shared.clone();
        let trace = Arc::new(Mutex::new(Trace::default()));
        let job = Arc::new(JoinSlot::new());
        let future = ModelTask {
            live: core.live.clone(),
            trace: trace.clone(),
            job: job.clone(),
            polled: false,
        };
        let (runnable, task) = async_task::Builder::new()
            .metadata(TaskMeta::for_model(
                &shared,
                Peers::for_model(vec![shared.clone()]),
            ))
            .spawn(move |_| future, schedule);
        task.detach();
        // The first poll, on the core: the task is live, idle, its waker held elsewhere.
        runnable.run();
        // The remote waker reads the task's waker where the core keeps it (under the same
        // lock), so that loom orders its wake against the core's shutdown steps: the wake's
        // own state change is async-task's, which loom does not see.
        let live = core.live.clone();
        let remote = thread::spawn(move || {
            let waker = live.lock().unwrap().first().cloned();
            if let Some(w) = waker {
                w.wake();
            }
        });
        let pool = thread::spawn(move || {
            let _unclaimed = job.complete(7);
        });
        shut_down(&core);
        remote.join().unwrap();
        pool.join().unwrap();

        let core_thread = thread::current().id();
        let dropped_on = std::mem::take(&mut trace.lock().unwrap().dropped_on);
        assert_eq!(
            dropped_on,
            vec![core_thread],
            "the future is dropped once, on the core"
        );
        drop(reactor);
    });
}

/// A `Send` future that records where it was dropped, and whether it was ever polled.
struct Placed {
    trace: Arc<Mutex<Trace>>,
    polled: Arc<Mutex<bool>>,
}

impl Future for Placed {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        *self.polled.lock().unwrap() = true;
        Poll::Pending
    }
}

impl Drop for Placed {
    fn drop(&mut self) {
        self.trace
            .lock()
            .unwrap()
            .dropped_on
            .push(thread::current().id());
    }
}

#[test]
fn a_spawn_from_another_thread_racing_shutdown_is_dropped_once_unpolled() {
    loom::model(|| {
        let reactor = Reactor::new().expect("an epoll instance and an eventfd");
        let core = ModelCore::new(&reactor);
        let shared = core.shared.clone();
        let trace = Arc::new(Mutex::new(Trace::default()));
        let polled = Arc::new(Mutex::new(false));
        let future = Placed {
            trace: trace.clone(),
            polled: polled.clone(),
        };
        // The spawner: `spawn`'s placement, or a `Handle::spawn`, is this call.
        let spawner = thread::spawn(move || {
            let peers = Peers::for_model(vec![shared.clone()]);
            drop(spawn_remote(&peers, &shared, future, None, true))
        });
        shut_down(&core);
        spawner.join().unwrap();
        assert_eq!(trace.lock().unwrap().dropped_on.len(), 1, "dropped once");
        assert!(!*polled.lock().unwrap(), "never polled");
        drop(reactor);
    });
}
