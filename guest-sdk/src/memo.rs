//! What a writer read from a table's metadata files, kept for the next writer of the same
//! plugin instance.
//!
//! The host has one instance write a round's splits one after another, so reading and
//! parsing the table's schema or metadata when each writer opens was a fixed cost of every
//! split. Formats name such a file after its version and never rewrite it (a change is a new
//! file), so a writer still finds the current file as before, which sees any change, and
//! only its read and parse are saved.

use std::cell::RefCell;

use crate::Result;
use crate::storage::ObjectMeta;

/// The last value read from one metadata file, keyed by the table's id and the file's name,
/// size and modification time: a table dropped and created again (a new id), a file written
/// again, or another table written through the same instance (native tests do that) is read
/// afresh. One per kind of file, in a `thread_local!` (a plugin instance is one thread).
pub struct FileMemo<T>(RefCell<Option<(i64, ObjectMeta, T)>>);

impl<T: Clone> FileMemo<T> {
    /// An empty memo.
    pub const fn new() -> Self {
        Self(RefCell::new(None))
    }

    /// The value of `file` of table `table_id`: the one kept if it was read from that very
    /// file, otherwise `read()`'s, which is then kept (an error is not).
    pub fn get_or_read(
        &self,
        table_id: i64,
        file: &ObjectMeta,
        read: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        if let Some((_, _, value)) = self
            .0
            .borrow()
            .as_ref()
            .filter(|(id, kept, _)| *id == table_id && kept == file)
        {
            return Ok(value.clone());
        }
        let value = read()?;
        *self.0.borrow_mut() = Some((table_id, file.clone(), value.clone()));
        Ok(value)
    }
}

impl<T: Clone> Default for FileMemo<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn file(path: &str, size: u64) -> ObjectMeta {
        ObjectMeta {
            path: path.into(),
            size,
            last_modified: 7,
        }
    }

    #[test]
    fn a_value_is_read_again_unless_table_and_file_are_the_same() {
        let memo = FileMemo::new();
        let reads = std::cell::Cell::new(0);
        let read = |v: &'static str| {
            reads.set(reads.get() + 1);
            Ok(v)
        };
        assert_eq!(memo.get_or_read(1, &file("s-0", 10), || read("a")), Ok("a"));
        assert_eq!(memo.get_or_read(1, &file("s-0", 10), || read("x")), Ok("a"));
        assert_eq!(reads.get(), 1);
        // Another file, the same file rewritten, another table: each read afresh.
        assert_eq!(memo.get_or_read(1, &file("s-1", 10), || read("b")), Ok("b"));
        assert_eq!(memo.get_or_read(1, &file("s-1", 11), || read("c")), Ok("c"));
        assert_eq!(memo.get_or_read(2, &file("s-1", 11), || read("d")), Ok("d"));
        assert_eq!(reads.get(), 4);
        // A failed read keeps nothing.
        let failed = memo.get_or_read(3, &file("s-0", 1), || Err(Error::corrupt("bad")));
        assert!(failed.is_err());
        assert_eq!(memo.get_or_read(3, &file("s-0", 1), || read("e")), Ok("e"));
    }
}
