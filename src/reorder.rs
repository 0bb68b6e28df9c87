//! A reorder buffer: items worked on in parallel, finished in any order,
//! handed on in index order, with a bound on how many are in the buffer.
//!
//! Workers take the next index to work on from a shared counter (so
//! items start in index order) and may not start an item more than
//! `ahead` past the oldest one not yet handed on: a worker that would
//! waits until it is. The buffer therefore holds at most `ahead`
//! finished items, whatever the number of items, and memory follows the
//! threads, not the work. Item `i` is handed on (to `sink`, one at a
//! time, under the buffer's lock) as soon as items `< i` have been.
//!
//! Which worker does what never changes what is handed on, nor its
//! order: only when.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Why the work stopped before every item was handed on.
#[derive(Debug, PartialEq, Eq)]
pub enum Halted<E> {
    /// An item's work gave nothing (it was interrupted): how many items
    /// had finished.
    Cancelled { finished: usize },
    /// The sink refused an item.
    Sink(E),
}

struct State<T, S, E> {
    /// The next index to start.
    next_start: usize,
    /// The oldest index not yet handed on; `pending[0]` is its slot.
    next_out: usize,
    pending: VecDeque<Option<T>>,
    finished: usize,
    sink: S,
    halted: Option<Halted<E>>,
}

/// Works on items `0..n` with `work` on every thread of rayon's pool,
/// handing each result to `sink` in index order (see the module
/// documentation). `work` returning `None` (an interrupted item) stops
/// the rest: items not yet started are skipped. `sink` returning an
/// error does too.
pub fn in_order<T: Send, S, E: Send>(
    n: usize,
    ahead: usize,
    work: impl Fn(usize) -> Option<T> + Sync,
    sink: S,
) -> Result<(), Halted<E>>
where
    S: FnMut(T) -> Result<(), E> + Send,
{
    let ahead = ahead.max(1);
    let state = Mutex::new(State {
        next_start: 0,
        next_out: 0,
        pending: VecDeque::with_capacity(ahead),
        finished: 0,
        sink,
        halted: None,
    });
    let moved = Condvar::new();
    let worker = || {
        let _wake = Wake {
            state: &state,
            moved: &moved,
        };
        loop {
            let i = {
                let mut s = lock(&state);
                while s.halted.is_none() && s.next_start < n && s.next_start >= s.next_out + ahead {
                    s = moved.wait(s).unwrap_or_else(|e| e.into_inner());
                }
                if s.halted.is_some() || s.next_start >= n {
                    return;
                }
                s.next_start += 1;
                s.pending.push_back(None);
                s.next_start - 1
            };
            let done = work(i);
            let mut s = lock(&state);
            let s = &mut *s;
            match done {
                None => {
                    if s.halted.is_none() {
                        s.halted = Some(Halted::Cancelled {
                            finished: s.finished,
                        });
                    }
                }
                Some(t) => {
                    s.finished += 1;
                    if let Some(Halted::Cancelled { finished }) = &mut s.halted {
                        *finished = s.finished;
                    }
                    s.pending[i - s.next_out] = Some(t);
                    while s.halted.is_none() && s.pending.front().is_some_and(Option::is_some) {
                        let Some(Some(t)) = s.pending.pop_front() else {
                            unreachable!("the front was checked");
                        };
                        s.next_out += 1;
                        if let Err(e) = (s.sink)(t) {
                            s.halted = Some(Halted::Sink(e));
                        }
                    }
                }
            }
            moved.notify_all();
        }
    };
    rayon::broadcast(|_| worker());
    let s = state.into_inner().unwrap_or_else(|e| e.into_inner());
    match s.halted {
        Some(h) => Err(h),
        None => Ok(()),
    }
}

/// Halts the work and wakes the waiting workers when its worker panics
/// (rayon then hands the panic on), so that none waits for an item that
/// will never be handed on.
struct Wake<'a, T, S, E> {
    state: &'a Mutex<State<T, S, E>>,
    moved: &'a Condvar,
}

impl<T, S, E> Drop for Wake<'_, T, S, E> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut s = lock(self.state);
            if s.halted.is_none() {
                s.halted = Some(Halted::Cancelled {
                    finished: s.finished,
                });
            }
            drop(s);
            self.moved.notify_all();
        }
    }
}

/// The buffer's lock, even if a worker panicked holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn hands_items_on_in_order_with_a_bounded_buffer() {
        let in_work = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let mut out = Vec::new();
        let r: Result<(), Halted<()>> = in_order(
            200,
            3,
            |i| {
                let now = in_work.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // Later items finish sooner: the buffer reorders them.
                std::thread::sleep(std::time::Duration::from_micros(((i * 7) % 5) as u64 * 50));
                in_work.fetch_sub(1, Ordering::SeqCst);
                Some(i)
            },
            |i| {
                out.push(i);
                Ok(())
            },
        );
        assert_eq!(r, Ok(()));
        assert_eq!(out, (0..200).collect::<Vec<_>>());
        assert!(most.load(Ordering::SeqCst) <= 3);
    }

    #[test]
    fn a_panic_stops_the_others_and_is_handed_on() {
        let r = std::panic::catch_unwind(|| {
            let _: Result<(), Halted<()>> = in_order(
                100,
                2,
                |i| {
                    assert_ne!(i, 3, "item 3 panics");
                    Some(i)
                },
                |_| Ok(()),
            );
        });
        assert!(r.is_err());
    }

    #[test]
    fn a_cancelled_item_or_a_refusing_sink_stops_the_rest() {
        let r: Result<(), Halted<()>> = in_order(50, 2, |i| (i != 10).then_some(i), |_| Ok(()));
        match r {
            Err(Halted::Cancelled { finished }) => assert!((10..=12).contains(&finished)),
            other => panic!("{other:?}"),
        }
        let mut seen = 0;
        let r = in_order(50, 2, Some, |i| {
            seen += 1;
            if i == 5 { Err("full") } else { Ok(()) }
        });
        assert_eq!(r, Err(Halted::Sink("full")));
        assert_eq!(seen, 6);
    }
}
