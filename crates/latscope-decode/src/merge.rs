//! k-way merge of per-CPU event streams into one time-ordered stream, counting lost events per CPU.

use latscope_model::{CpuId, Event, EventKind};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// A time-ordered stream of events whose next event's time can be read without taking the event out.
pub trait EventStream: Iterator<Item = Event> {
    /// The time of the next event; `None` at the end.
    fn peek_ts(&mut self) -> Option<u64>;
    /// The next events that are at hand (decoded, contiguous), left in place for visiting without moving
    /// them; empty only at the end.
    fn front_run_mut(&mut self) -> &mut [Event];
    /// Drop the first `n` events of [`front_run_mut`](Self::front_run_mut) where they are.
    fn consume(&mut self, n: usize);
}

impl EventStream for std::vec::IntoIter<Event> {
    fn peek_ts(&mut self) -> Option<u64> {
        self.as_slice().first().map(|e| e.ts.0)
    }
    fn front_run_mut(&mut self) -> &mut [Event] {
        self.as_mut_slice()
    }
    fn consume(&mut self, n: usize) {
        if let Some(last) = n.checked_sub(1) {
            self.nth(last);
        }
    }
}

/// Merges streams that are each in time order. Ties go to the stream listed first, and a stream's own
/// order is kept, so the merge is stable. `Lost` events pass through and are counted per CPU.
///
/// The stream with the earliest next event is followed for as long as its events come before the
/// earliest next event of the others (kept in a heap), so the heap is touched only when the merge
/// switches streams, and an event is moved only when it is handed out.
pub struct Merge<I: EventStream> {
    streams: Vec<I>,
    /// Next event times of the streams other than `current`: (time, stream index), earliest on top.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    current: Option<usize>,
    lost: BTreeMap<CpuId, u64>,
    lost_unknown: Vec<CpuId>,
}

impl<I: EventStream> Merge<I> {
    /// Start merging; looks at the first event of each stream.
    pub fn new(mut streams: Vec<I>) -> Merge<I> {
        let mut heap = BinaryHeap::with_capacity(streams.len());
        for (i, s) in streams.iter_mut().enumerate() {
            if let Some(ts) = s.peek_ts() {
                heap.push(Reverse((ts, i)));
            }
        }
        Merge { heap, streams, current: None, lost: BTreeMap::new(), lost_unknown: Vec::new() }
    }

    /// Lost events counted so far, per CPU.
    pub fn lost(&self) -> &BTreeMap<CpuId, u64> {
        &self.lost
    }

    /// CPUs with a lost-events marker whose count was unknown.
    pub fn lost_unknown(&self) -> &[CpuId] {
        &self.lost_unknown
    }

    /// The underlying streams, to collect what they report.
    pub fn streams_mut(&mut self) -> &mut [I] {
        &mut self.streams
    }

    /// The stream whose next event comes next: the current one while it is before every other.
    fn pick(&mut self) -> Option<usize> {
        if let Some(i) = self.current {
            if let Some(ts) = self.streams[i].peek_ts() {
                match self.heap.peek() {
                    Some(&Reverse(other)) if other < (ts, i) => self.heap.push(Reverse((ts, i))),
                    _ => return Some(i),
                }
            }
        }
        let Reverse((_, i)) = self.heap.pop()?;
        self.current = Some(i);
        Some(i)
    }
}

impl<I: EventStream> Merge<I> {
    /// Hand every remaining event to `visit` in order, in place: the same order and lost counts as the
    /// iterator, without moving each event out of its stream (a consumer that only looks at the events,
    /// like `decode --stats`, saves the copies).
    ///
    /// The events of the chosen stream are taken as a run, up to the next event of the others, and
    /// dropped in place together.
    pub fn for_each_mut(&mut self, mut visit: impl FnMut(&mut Event)) {
        while let Some(i) = self.pick() {
            let others = self.heap.peek().map(|&Reverse(next)| next);
            let run = self.streams[i].front_run_mut();
            let mut n = 0;
            for event in run.iter_mut() {
                if n > 0 && others.is_some_and(|next| next < (event.ts.0, i)) {
                    break;
                }
                Self::count_lost(&mut self.lost, &mut self.lost_unknown, event);
                visit(event);
                n += 1;
            }
            self.streams[i].consume(n);
        }
    }

    fn count_lost(lost: &mut BTreeMap<CpuId, u64>, unknown: &mut Vec<CpuId>, event: &Event) {
        if let EventKind::Lost { count } = event.kind {
            match count {
                Some(c) => *lost.entry(event.cpu).or_insert(0) += c,
                None if !unknown.contains(&event.cpu) => unknown.push(event.cpu),
                None => {}
            }
        }
    }
}

impl<I: EventStream> Iterator for Merge<I> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let event = loop {
            let i = self.pick()?;
            if let Some(e) = self.streams[i].next() {
                break e;
            }
        };
        Self::count_lost(&mut self.lost, &mut self.lost_unknown, &event);
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{Flags, Nanos, TaskName};
    use std::sync::Arc;

    fn ev(ts: u64, cpu: u32, pid: i32, kind: EventKind) -> Event {
        Event {
            ts: Nanos(ts),
            cpu: CpuId(cpu),
            pid,
            tgid: None,
            comm: TaskName::from("x"),
            flags: Flags::default(),
            kind,
        }
    }
    fn other(ts: u64, cpu: u32, pid: i32) -> Event {
        ev(ts, cpu, pid, EventKind::Other { system: None, name: Arc::from("e"), fields: vec![] })
    }

    #[test]
    fn merges_in_order_stably_and_counts_lost() {
        let a = vec![other(1, 0, 1), other(5, 0, 2), other(5, 0, 3), ev(9, 0, 0, EventKind::Lost { count: Some(4) })];
        let b = vec![other(0, 1, 10), other(5, 1, 11), ev(6, 1, 0, EventKind::Lost { count: None }), other(7, 1, 12)];
        let c: Vec<Event> = vec![];
        let mut m = Merge::new(vec![a.into_iter(), b.into_iter(), c.into_iter()]);
        let got: Vec<(u64, i32)> = m.by_ref().map(|e| (e.ts.0, e.pid)).collect();
        assert_eq!(got, vec![(0, 10), (1, 1), (5, 2), (5, 3), (5, 11), (6, 0), (7, 12), (9, 0)]);
        assert_eq!(m.lost().get(&CpuId(0)), Some(&4));
        assert_eq!(m.lost_unknown(), &[CpuId(1)]);
    }

    #[test]
    fn visiting_in_place_gives_the_iterators_order_and_lost_counts() {
        let streams = || {
            vec![
                vec![other(1, 0, 1), other(5, 0, 2), ev(9, 0, 0, EventKind::Lost { count: Some(4) })].into_iter(),
                vec![other(0, 1, 10), other(5, 1, 11), ev(6, 1, 0, EventKind::Lost { count: None })].into_iter(),
            ]
        };
        let moved: Vec<(u64, i32)> = Merge::new(streams()).map(|e| (e.ts.0, e.pid)).collect();
        let mut m = Merge::new(streams());
        let mut visited = Vec::new();
        m.for_each_mut(|e| visited.push((e.ts.0, e.pid)));
        assert_eq!(visited, moved);
        assert_eq!((m.lost().get(&CpuId(0)), m.lost_unknown()), (Some(&4), &[CpuId(1)][..]));
    }
}
