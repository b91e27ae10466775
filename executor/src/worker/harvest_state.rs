//! What a core that harvests keeps between its looks at its peers (`worker::harvest`, where
//! the looks are): each peer's poll word as last seen, the wakers of a harvest, the counters.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::task::Waker;

/// What a core knows of one peer between its looks.
#[derive(Clone, Copy)]
pub(crate) struct Seen {
    /// The peer's poll word at the last look.
    pub(crate) word: u64,
    /// When this core first saw that word (its clock, ns; the loop's last reading where no
    /// fresh one was at hand, which is older: the peer may then be harvested early, never
    /// late).
    pub(crate) since: u64,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen {
            word: u64::MAX,
            since: 0,
        }
    }
}

/// A core's harvesting state (`Builder::harvest_after` set).
pub(crate) struct Harvest {
    /// How long a peer's poll word stays unmoved before this core takes its ready I/O, ns.
    pub(crate) after: u64,
    /// Each peer as last seen, by core index.
    pub(crate) seen: RefCell<Vec<Seen>>,
    /// The wakers of one harvest, kept to reuse the allocation.
    pub(crate) wake: RefCell<VecDeque<Waker>>,
    /// Looks at a peer's epoll set.
    pub(crate) looks: Cell<u64>,
    /// Of those, looks that took events.
    pub(crate) harvests: Cell<u64>,
    /// Events taken.
    pub(crate) events: Cell<u64>,
}

impl Harvest {
    /// A core's, harvesting a peer whose word stays unmoved `after` ns.
    pub(crate) fn new(after: u64) -> Harvest {
        Harvest {
            after,
            seen: RefCell::new(Vec::new()),
            wake: RefCell::new(VecDeque::new()),
            looks: Cell::new(0),
            harvests: Cell::new(0),
            events: Cell::new(0),
        }
    }
}
