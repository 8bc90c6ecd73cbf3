//! The log's writes: whole aligned blocks, each write durable when it
//! returns.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// The unit of the log's writes: a group starts a block of its own.
pub(super) const BLOCK: usize = 4096;

/// The file opened for durable writes: each returns once it is on the disk
/// (`O_DSYNC`), from the caller's buffer straight to the disk (`O_DIRECT`)
/// where the file system allows it.
pub(super) fn open_for_writes(path: &Path, direct: bool) -> std::io::Result<File> {
    let open = |flags| {
        let mut options = OpenOptions::new();
        options
            .read(true)
            .write(true)
            .custom_flags(flags)
            .open(path)
    };
    #[cfg(target_os = "linux")]
    if direct && let Ok(file) = open(libc::O_DSYNC | libc::O_DIRECT) {
        // Some file systems open with `O_DIRECT` and refuse its writes: one
        // is tried here (the first block, as it is), not at the first group.
        let mut first = Blocks::zeroed(BLOCK);
        let tried = (file.read_exact_at(first.as_mut(), 0))
            .and_then(|()| file.write_all_at(first.as_ref(), 0));
        if tried.is_ok() {
            return Ok(file);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = direct;
    tracing::info!(
        file = %path.display(),
        "the store's log writes through the page cache (the file system refused O_DIRECT)"
    );
    open(libc::O_DSYNC)
}

/// Bytes at a block-aligned address, as `O_DIRECT` writes need.
pub(super) struct Blocks {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl Blocks {
    pub(super) fn zeroed(len: usize) -> Self {
        let buf = vec![0; len + BLOCK - 1];
        let addr = buf.as_ptr() as usize;
        let start = addr.next_multiple_of(BLOCK) - addr;
        Self { buf, start, len }
    }

    pub(super) fn as_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

impl AsRef<[u8]> for Blocks {
    fn as_ref(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }
}

/// A group's records on their way to the disk.
pub(super) struct LogWrite {
    pub at: u64,
    pub bytes: Blocks,
    #[cfg(test)]
    pub fail: bool,
}

impl LogWrite {
    /// Writes the group's blocks; durable when it returns `Ok`.
    pub(super) fn run(mut self, file: &File) -> std::io::Result<()> {
        let written = file.write_all_at(self.bytes.as_ref(), self.at);
        // In tests, the blocks land and the disk reports a failure all the
        // same: what lands must not be replayed either.
        #[cfg(test)]
        let written = match self.fail {
            true => Err(std::io::Error::other("the disk failed (a test's doing)")),
            false => written,
        };
        if written.is_err() {
            // Whatever part of it landed must not be replayed.
            let first = &mut self.bytes.as_mut()[..BLOCK];
            first.fill(0);
            let _ = file.write_all_at(first, self.at);
        }
        written
    }
}
