//! A model task of the executor's models (it leaves its waker out and never completes), and
//! counts of the tasks handed over.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use loom::sync::Mutex;
use tickless::loom_exports::{Due, Shared};
use tickless_timer::internal::Op;

/// The model task: leaves its waker where the waking thread finds it; never completes.
pub struct Idle {
    pub waker: Arc<Mutex<Option<Waker>>>,
}

impl Future for Idle {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// How many tasks `ops` hands over to run.
pub fn tasks_in(ops: &[Op<Due>]) -> usize {
    ops.iter()
        .filter(|op| matches!(op, Op::Now(Due::Schedule(_))))
        .count()
}

/// How many tasks the inbox of `shared` holds now.
pub fn tasks_left(shared: &Shared) -> usize {
    let mut ops = Vec::new();
    shared.inbox().drain_locked(&mut ops);
    tasks_in(&ops)
}
