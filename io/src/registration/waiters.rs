//! The tasks waiting on one registration, per direction.

use std::collections::VecDeque;
use std::task::Waker;

use crate::ready::Direction;

/// The tasks waiting in one direction: the first in a slot of its own, so that the usual lone
/// waiter costs no list; any others (tasks sharing a stream) in a list after it, in the order
/// they came. `more` is empty whenever `first` is.
#[derive(Default)]
pub(super) struct Waiters {
    /// The first task to wait.
    first: Option<Waker>,
    /// The tasks that waited after it.
    more: Vec<Waker>,
}

impl Waiters {
    /// The index of `dir`'s waiters in [`ScheduledIo::waiters`].
    #[inline]
    pub(super) fn of(dir: Direction) -> usize {
        match dir {
            Direction::Read => 0,
            Direction::Write => 1,
        }
    }

    /// Whether no task waits.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Adds the task of `waker`, unless a waker that wakes it is stored already.
    #[inline]
    pub(super) fn add(&mut self, waker: &Waker) {
        match &self.first {
            None => self.first = Some(waker.clone()),
            Some(first) if first.will_wake(waker) => {}
            Some(_) => {
                if !self.more.iter().any(|w| w.will_wake(waker)) {
                    self.more.push(waker.clone());
                }
            }
        }
    }

    /// Moves every waker into `wake`, in the order the tasks waited.
    ///
    /// Always inlined into the reactor's dispatch (one waiter is the usual case): apart from
    /// it, in a module of its own, the compiler had stopped inlining it.
    #[inline(always)]
    pub(super) fn move_into(&mut self, wake: &mut VecDeque<Waker>) {
        if let Some(first) = self.first.take() {
            wake.push_back(first);
            if !self.more.is_empty() {
                wake.extend(self.more.drain(..));
            }
        }
    }
}
