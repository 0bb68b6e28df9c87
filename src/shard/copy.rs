//! The copy pass of `stormsim merge`: the shards' rows of one table, put
//! back in item order without holding them.
//!
//! Item `k` of a run split into `N` shards is in shard `k mod N`, at
//! position `k div N` there ([`place`]): the shards take the items round
//! robin, and each shard writes its items' rows in order, one after the
//! other. The check pass (`super::scan`) records where each item's rows
//! end in each shard's file ([`Spans`]); the merged table is then the
//! header and, for `k = 0, 1, …`, the bytes of item `k` in its shard's
//! file, copied in pieces ([`Interleaved::copy`]).
//!
//! Reading item after item goes round the shards, and through each
//! shard's file front to back, so each file is read once, in order,
//! without seeking. The files of the first [`KEPT_OPEN`] shards stay open
//! between their items; a shard past them (a split into thousands of
//! shards of a few runs each) is opened for each of its items and closed
//! again, so a merge never holds more than that many files open.

use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;

/// The most shard files of one table kept open between their items.
pub const KEPT_OPEN: usize = 128;
/// The bytes copied at a time.
const PIECE: usize = 1 << 16;

/// Where one table's rows of each item of a shard lie in the shard's
/// file: the rows start after the header, at `start`, and item `j` of the
/// shard (its `j`-th in order) ends at `ends[j]`, where the next begins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spans {
    pub start: u64,
    pub ends: Vec<u64>,
}

impl Spans {
    /// The bytes of the shard's `j`-th item; `None` past its items.
    pub fn of(&self, j: usize) -> Option<Range<u64>> {
        let end = *self.ends.get(j)?;
        let start = match j {
            0 => self.start,
            _ => self.ends[j - 1],
        };
        Some(start..end)
    }

    /// Whether some item has rows.
    pub fn any_rows(&self) -> bool {
        self.ends.last().is_some_and(|&end| end > self.start)
    }
}

/// Item `k` among `n` shards: (its shard, its position in that shard).
pub fn place(k: usize, n: usize) -> (usize, usize) {
    (k % n, k / n)
}

/// Why an item's bytes could not be copied.
#[derive(Debug)]
pub enum CopyError<E> {
    /// The item is in no shard's spans (the manifests were checked: this
    /// is a bug, reported rather than a panic).
    NoItem(usize),
    /// A shard's file could not be read, or ended before the item's
    /// bytes (it was cut after the check pass): the shard and the error.
    Read(usize, io::Error),
    /// The bytes could not be written.
    Write(E),
}

/// One table's copies in the shards, read in item order.
pub struct Interleaved<'a, R, F> {
    spans: Vec<&'a Spans>,
    open: F,
    /// The shards' open files and where each is.
    readers: Vec<Option<(R, u64)>>,
    buf: Vec<u8>,
}

impl<'a, R: Read + Seek, F: FnMut(usize) -> io::Result<R>> Interleaved<'a, R, F> {
    /// The table of the shards whose spans are `spans` (in shard order),
    /// each shard's file opened by `open(shard)` when needed.
    pub fn new(spans: Vec<&'a Spans>, open: F) -> Self {
        let readers = (0..spans.len().min(KEPT_OPEN)).map(|_| None).collect();
        Interleaved {
            spans,
            open,
            readers,
            buf: vec![0; PIECE],
        }
    }

    /// Passes the bytes of item `k` to `write`, in pieces of at most
    /// 64 KiB, in order.
    pub fn copy<E>(
        &mut self,
        k: usize,
        mut write: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), CopyError<E>> {
        let (shard, j) = place(k, self.spans.len().max(1));
        let range = self
            .spans
            .get(shard)
            .and_then(|s| s.of(j))
            .ok_or(CopyError::NoItem(k))?;
        if range.is_empty() {
            return Ok(());
        }
        let read = |e| CopyError::Read(shard, e);
        let mut opened = None;
        let (reader, at) = match self.readers.get_mut(shard) {
            Some(slot) => match slot {
                Some(r) => r,
                None => slot.insert(((self.open)(shard).map_err(read)?, 0)),
            },
            None => opened.insert(((self.open)(shard).map_err(read)?, 0)),
        };
        if *at != range.start {
            reader.seek(SeekFrom::Start(range.start)).map_err(read)?;
            *at = range.start;
        }
        while *at < range.end {
            let want = usize::try_from(range.end - *at).map_or(PIECE, |n| n.min(PIECE));
            let piece = &mut self.buf[..want];
            match reader.read(piece) {
                Ok(0) => {
                    return Err(read(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the file ends before the rows found when it was checked",
                    )));
                }
                Ok(n) => {
                    *at += n as u64;
                    write(&piece[..n]).map_err(CopyError::Write)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(read(e)),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::io::Cursor;

    /// Shard files of `n` shards of `total` items: a header, then item
    /// `k`'s rows (`k` rows of `k:`), with the spans the check pass would
    /// record.
    fn shards(total: usize, n: usize) -> Vec<(Vec<u8>, Spans)> {
        (0..n)
            .map(|i| {
                let mut bytes = b"h\n".to_vec();
                let mut spans = Spans {
                    start: 2,
                    ends: Vec::new(),
                };
                for k in (i..total).step_by(n) {
                    for _ in 0..k % 4 {
                        bytes.extend_from_slice(format!("{k}:row\n").as_bytes());
                    }
                    spans.ends.push(bytes.len() as u64);
                }
                (bytes, spans)
            })
            .collect()
    }

    fn merged(total: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for k in 0..total {
            for _ in 0..k % 4 {
                out.extend_from_slice(format!("{k}:row\n").as_bytes());
            }
        }
        out
    }

    #[test]
    fn items_go_round_the_shards() {
        assert_eq!(place(0, 3), (0, 0));
        assert_eq!(place(4, 3), (1, 1));
        assert_eq!(place(8, 3), (2, 2));
        assert_eq!(place(5, 1), (0, 5));
    }

    #[test]
    fn spans_give_each_items_bytes() {
        let s = Spans {
            start: 10,
            ends: vec![10, 25, 40],
        };
        assert_eq!(s.of(0), Some(10..10));
        assert_eq!(s.of(1), Some(10..25));
        assert_eq!(s.of(2), Some(25..40));
        assert_eq!(s.of(3), None);
        assert!(s.any_rows());
        assert!(
            !Spans {
                start: 5,
                ends: vec![5, 5]
            }
            .any_rows()
        );
        assert!(!Spans::default().any_rows());
    }

    /// Every split, with many shards kept open and with more than
    /// `KEPT_OPEN` (reopened for each item), gives the rows in item order,
    /// each file read front to back: each opened file seeks only to its
    /// first rows.
    #[test]
    fn rows_come_back_in_item_order_for_every_split() {
        for (total, n) in [(1, 1), (10, 1), (10, 3), (23, 7), (40, 40), (400, 150)] {
            let files = shards(total, n);
            let opened = RefCell::new(vec![0usize; n]);
            let spans: Vec<&Spans> = files.iter().map(|(_, s)| s).collect();
            let mut table = Interleaved::new(spans, |i| {
                opened.borrow_mut()[i] += 1;
                Ok(Cursor::new(files[i].0.clone()))
            });
            let mut out = Vec::new();
            for k in 0..total {
                table
                    .copy(k, |b| -> Result<(), ()> {
                        out.extend_from_slice(b);
                        Ok(())
                    })
                    .unwrap();
            }
            assert_eq!(
                String::from_utf8(out).unwrap(),
                String::from_utf8(merged(total)).unwrap(),
                "{total} items in {n} shards"
            );
            for (i, &times) in opened.borrow().iter().enumerate() {
                let with_rows = (i..total).step_by(n).filter(|k| k % 4 > 0).count();
                if i < KEPT_OPEN {
                    assert!(times <= 1, "shard {i} of {n} opened {times} times");
                } else {
                    assert_eq!(times, with_rows, "shard {i} of {n}");
                }
            }
        }
    }

    #[test]
    fn a_file_cut_after_the_check_is_an_error_not_a_short_table() {
        let files = shards(12, 2);
        let mut cut = files[1].0.clone();
        cut.truncate(cut.len() - 3);
        let spans: Vec<&Spans> = files.iter().map(|(_, s)| s).collect();
        let mut table = Interleaved::new(spans, |i| {
            Ok(Cursor::new(if i == 1 {
                cut.clone()
            } else {
                files[0].0.clone()
            }))
        });
        let mut sink = |_: &[u8]| -> Result<(), ()> { Ok(()) };
        for k in 0..11 {
            table.copy(k, &mut sink).unwrap();
        }
        match table.copy(11, &mut sink) {
            Err(CopyError::Read(1, e)) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            table.copy(12, &mut sink),
            Err(CopyError::NoItem(12))
        ));
    }

    #[test]
    fn write_errors_stop_the_copy() {
        let files = shards(6, 2);
        let spans: Vec<&Spans> = files.iter().map(|(_, s)| s).collect();
        let mut table = Interleaved::new(spans, |i| Ok(Cursor::new(files[i].0.clone())));
        let got = table.copy(3, |_| Err("disk full"));
        assert!(matches!(got, Err(CopyError::Write("disk full"))));
    }
}
