//! The buffer a [`File`](super::File) moves to its blocking job and back: the bytes a read
//! brought in that the caller has not taken yet, or the bytes of the write in flight.

use std::io::{self, Read, Seek, SeekFrom, Write};

/// The most bytes one blocking job reads or writes.
pub(super) const MAX_BUF: usize = 16 * 1024;

/// Bytes read ahead (`data[pos..]` not yet given to the caller) or to be written (all of
/// `data`, with `pos` 0).
#[derive(Debug, Default)]
pub(super) struct Buf {
    /// The bytes; capacity stays at most [`MAX_BUF`] and is reused from job to job.
    data: Vec<u8>,
    /// How many of them the caller has taken.
    pos: usize,
}

impl Buf {
    /// Bytes held and not yet taken.
    pub(super) fn len(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Whether no byte is held.
    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Moves as many held bytes as fit into `dst`; returns how many.
    pub(super) fn copy_to(&mut self, dst: &mut [u8]) -> usize {
        let n = self.len().min(dst.len());
        dst[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        if self.pos == self.data.len() {
            self.clear();
        }
        n
    }

    /// Takes up to [`MAX_BUF`] bytes of `src` into the empty buffer; returns how many.
    pub(super) fn copy_from(&mut self, src: &[u8]) -> usize {
        assert!(
            self.is_empty(),
            "broken invariant: a write into a non-empty buffer"
        );
        let n = src.len().min(MAX_BUF);
        self.data.extend_from_slice(&src[..n]);
        n
    }

    /// Drops the held bytes; returns how many there were (how far the file's cursor is ahead
    /// of the caller's position).
    pub(super) fn discard(&mut self) -> usize {
        let n = self.len();
        self.clear();
        n
    }

    /// Empties the buffer, keeping its capacity.
    fn clear(&mut self) {
        self.data.clear();
        self.pos = 0;
    }

    /// Reads up to `len` bytes (at most [`MAX_BUF`]) from `file` into the empty buffer,
    /// retrying `Interrupted`; returns how many (0 at end of file).
    pub(super) fn read_from(&mut self, mut file: impl Read, len: usize) -> io::Result<usize> {
        assert!(
            self.is_empty(),
            "broken invariant: a read into a non-empty buffer"
        );
        self.data.resize(len.min(MAX_BUF), 0);
        let res = loop {
            match file.read(&mut self.data) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                res => break res,
            }
        };
        self.data.truncate(*res.as_ref().unwrap_or(&0));
        res
    }

    /// Writes every held byte to `file` and empties the buffer, whether or not it succeeded.
    pub(super) fn write_to(&mut self, mut file: impl Write) -> io::Result<()> {
        let res = file.write_all(&self.data[self.pos..]);
        self.clear();
        res
    }

    /// Drops the read-ahead and moves `file`'s cursor back over it, to the caller's position:
    /// what every operation other than a read does first.
    pub(super) fn give_back(&mut self, file: impl Seek) -> io::Result<()> {
        rewind(file, self.discard())
    }
}

/// Moves `file`'s cursor back by `ahead` bytes (the read-ahead a buffer dropped), if any.
pub(super) fn rewind(mut file: impl Seek, ahead: usize) -> io::Result<()> {
    match ahead {
        0 => Ok(()),
        // At most MAX_BUF: the cast cannot wrap.
        _ => file.seek(SeekFrom::Current(-(ahead as i64))).map(drop),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    #[test]
    fn read_ahead_is_handed_out_in_pieces_then_cleared() {
        let mut buf = Buf::default();
        let mut src = Cursor::new(vec![7u8; 10]);
        assert_eq!(buf.read_from(&mut src, 6).unwrap(), 6);
        let mut dst = [0u8; 4];
        assert_eq!(buf.copy_to(&mut dst), 4);
        assert_eq!(buf.len(), 2);
        assert_eq!(buf.copy_to(&mut dst), 2);
        assert!(buf.is_empty());
        assert_eq!((buf.data.len(), buf.pos), (0, 0), "cleared once taken");
    }

    #[test]
    fn reads_and_writes_are_capped() {
        let mut buf = Buf::default();
        assert_eq!(buf.copy_from(&[1u8; MAX_BUF + 5]), MAX_BUF);
        let mut out = Vec::new();
        buf.write_to(&mut out).unwrap();
        assert_eq!(out.len(), MAX_BUF);
        assert!(buf.is_empty());
        let mut src = Cursor::new(vec![0u8; MAX_BUF * 2]);
        assert_eq!(buf.read_from(&mut src, usize::MAX).unwrap(), MAX_BUF);
    }

    #[test]
    fn giving_back_moves_the_cursor_over_the_unread_bytes() {
        let mut buf = Buf::default();
        let mut file = Cursor::new(vec![0u8; 100]);
        buf.read_from(&mut file, 30).unwrap();
        buf.copy_to(&mut [0u8; 12]);
        assert_eq!(file.position(), 30);
        buf.give_back(&mut file).unwrap();
        assert_eq!(file.position(), 12, "where the caller is");
        assert!(buf.is_empty());
        buf.give_back(&mut file).unwrap();
        assert_eq!(file.position(), 12, "nothing held: no seek");
    }

    #[test]
    fn a_failed_read_leaves_the_buffer_empty() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("broken"))
            }
        }
        let mut buf = Buf::default();
        assert!(buf.read_from(Broken, 10).is_err());
        assert!(buf.is_empty());
    }
}
