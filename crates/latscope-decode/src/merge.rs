//! k-way merge of per-CPU event streams into one time-ordered stream, counting lost events per CPU.

use latscope_model::{CpuId, Event, EventKind};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Merges streams that are each in time order. Ties go to the stream listed first, and a stream's own
/// order is kept, so the merge is stable. `Lost` events pass through and are counted per CPU.
///
/// The stream with the earliest head is followed for as long as its events come before the earliest head
/// of the others (kept in a heap), so the heap is touched only when the merge switches streams.
pub struct Merge<I: Iterator<Item = Event>> {
    streams: Vec<Peeked<I>>,
    /// Heads of the streams other than `current`: (time, stream index), earliest on top.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    current: Option<usize>,
    lost: BTreeMap<CpuId, u64>,
    lost_unknown: Vec<CpuId>,
}

/// A stream with its next event read ahead.
struct Peeked<I> {
    stream: I,
    head: Option<Event>,
}

impl<I: Iterator<Item = Event>> Merge<I> {
    /// Start merging; reads the first event of each stream.
    pub fn new(streams: Vec<I>) -> Merge<I> {
        let mut m = Merge {
            heap: BinaryHeap::with_capacity(streams.len()),
            streams: Vec::with_capacity(streams.len()),
            current: None,
            lost: BTreeMap::new(),
            lost_unknown: Vec::new(),
        };
        for (i, mut stream) in streams.into_iter().enumerate() {
            let head = stream.next();
            if let Some(e) = &head {
                m.heap.push(Reverse((e.ts.0, i)));
            }
            m.streams.push(Peeked { stream, head });
        }
        m
    }

    /// Lost events counted so far, per CPU.
    pub fn lost(&self) -> &BTreeMap<CpuId, u64> {
        &self.lost
    }

    /// CPUs with a lost-events marker whose count was unknown.
    pub fn lost_unknown(&self) -> &[CpuId] {
        &self.lost_unknown
    }

    /// The underlying streams.
    pub fn streams(&self) -> impl Iterator<Item = &I> {
        self.streams.iter().map(|p| &p.stream)
    }

    /// The underlying streams, to collect what they report.
    pub fn streams_mut(&mut self) -> impl Iterator<Item = &mut I> {
        self.streams.iter_mut().map(|p| &mut p.stream)
    }

    /// The stream whose head comes next: the current one while it is before every other head.
    fn pick(&mut self) -> Option<usize> {
        if let Some(i) = self.current {
            if let Some(ts) = self.streams[i].head.as_ref().map(|e| e.ts.0) {
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

impl<I: Iterator<Item = Event>> Iterator for Merge<I> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        let i = self.pick()?;
        let s = &mut self.streams[i];
        let event = std::mem::replace(&mut s.head, s.stream.next())?;
        if let EventKind::Lost { count } = event.kind {
            match count {
                Some(c) => *self.lost.entry(event.cpu).or_insert(0) += c,
                None if !self.lost_unknown.contains(&event.cpu) => self.lost_unknown.push(event.cpu),
                None => {}
            }
        }
        Some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{Flags, Nanos};
    use std::sync::Arc;

    fn ev(ts: u64, cpu: u32, pid: i32, kind: EventKind) -> Event {
        Event { ts: Nanos(ts), cpu: CpuId(cpu), pid, tgid: None, comm: Arc::from("x"), flags: Flags::default(), kind }
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
}
