//! The write-ahead log of a store in a folder (`crm-store.wal` and
//! `crm-store-2.wal`).
//!
//! Why: a durable commit of the B-tree writes and syncs every page the
//! commit touched (a create touches a dozen: its items, their index entries,
//! the counters, the branches above them), and on this machine that was two
//! thirds of a create's CPU. The log makes a group durable with one small
//! sequential append and one `fdatasync`; the writes themselves wait in
//! memory ([`super::overlay`]) for a checkpoint, which writes them into the
//! engine in one durable commit, in the background.
//!
//! Two files, used in turn: while a checkpoint writes the writes of one
//! file's epoch into the engine, the writes that come meanwhile are logged in
//! the other file, in the next epoch. A file is started over only once the
//! engine holds its epoch's writes: at most two epochs are ever outstanding.
//!
//! What a record holds: one request's effects, the state after it of every
//! item it wrote, `(engine key, item bytes)` or `(engine key, deleted)`, in
//! order; a group's records are appended together, with one sync.
//!
//! Which records to replay: checkpoints are numbered, the engine keeps the
//! number of its last one, and a file's header holds the number of the
//! checkpoint its records come after (its epoch). After a crash the files of
//! the engine's last checkpoint or a later one are replayed, in epoch order:
//! they hold every group since, oldest first. A file of an earlier epoch
//! holds nothing the engine lacks. Every open is a checkpoint, so each run
//! logs in epochs of its own.
//!
//! Framing: a header (`CRMWAL` 0 1, the epoch as u64), then records
//! `[payload length u32][crc32 of payload u32][epoch u64][payload]`, little
//! endian. The log ends at the first record that is empty, fails its checksum
//! or is of another epoch. A record is synced before its group is visible to
//! readers or answered, so a torn tail (a crash mid-append) was never seen.
//!
//! The file is written full of zeros once (4 MB) and then overwritten in
//! place, never truncated: an `fdatasync` of blocks the file already has need
//! not also commit the file system's journal (it measured 117 µs against 200
//! µs for an append that grows the file). Starting over rewrites the header
//! alone; the records of earlier epochs left behind end the log.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The log's files in the folder.
pub const WAL_FILES: [&str; 2] = ["crm-store.wal", "crm-store-2.wal"];
const MAGIC: &[u8; 8] = b"CRMWAL\x00\x01";
/// The file's header: the magic, then the epoch.
const FILE_HEADER: u64 = 16;
/// A record's header: its payload's length, its checksum, its epoch.
const HEADER: usize = 16;
/// Bytes the file is written with before its first use.
const PREALLOCATED: u64 = 4 << 20;
const DELETED: u32 = u32::MAX;

/// The effects of one commit, in the order they were made. `off` collects
/// nothing (a store in memory, a migration).
pub(crate) struct Batch(Option<Vec<u8>>);

impl Batch {
    pub fn on() -> Self {
        Self(Some(Vec::new()))
    }

    pub fn off() -> Self {
        Self(None)
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        if let Some(out) = &mut self.0 {
            push(out, key);
            push(out, value);
        }
    }

    pub fn delete(&mut self, key: &[u8]) {
        if let Some(out) = &mut self.0 {
            push(out, key);
            out.extend_from_slice(&DELETED.to_le_bytes());
        }
    }

    /// Bytes of its record's payload.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.payload().len()
    }

    fn payload(&self) -> &[u8] {
        self.0.as_deref().unwrap_or_default()
    }
}

fn push(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// One effect of a record: an item's engine key and its bytes, or `None`
/// when it was deleted.
pub(super) type Effect<'a> = (&'a [u8], Option<&'a [u8]>);

/// The effects of a record's payload; `None` if it does not parse (it passed
/// its checksum, so only a bug would make it so).
pub(super) fn effects(mut payload: &[u8]) -> Option<Vec<Effect<'_>>> {
    fn take<'a>(input: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = input.split_at_checked(n)?;
        *input = rest;
        Some(head)
    }
    fn length(input: &mut &[u8]) -> Option<u32> {
        Some(u32::from_le_bytes(take(input, 4)?.try_into().ok()?))
    }
    let mut out = Vec::new();
    while !payload.is_empty() {
        let key_len = length(&mut payload)?;
        let key = take(&mut payload, key_len as usize)?;
        let value = match length(&mut payload)? {
            DELETED => None,
            n => Some(take(&mut payload, n as usize)?),
        };
        out.push((key, value));
    }
    Some(out)
}

/// The log: its two files, one of them taking the appends.
pub(super) struct Wal {
    files: [LogFile; 2],
    active: usize,
}

/// What opening the log found: each file's epoch and whole records.
pub(super) struct Opened {
    pub wal: Wal,
    /// `(epoch, records)` of each file with a header, oldest epoch first.
    pub epochs: Vec<(u64, Vec<Vec<u8>>)>,
}

impl Wal {
    /// Opens the log's files, created when missing, reading the records of
    /// epoch `from` and later: the others' the engine holds already.
    pub fn open(dir: &Path, from: u64) -> std::io::Result<Opened> {
        let [a, b] = WAL_FILES.map(|name| LogFile::open(dir, name, from));
        let mut found = [a?, b?];
        let epochs = found
            .iter_mut()
            .filter_map(|f| Some((f.epoch?, std::mem::take(&mut f.records))));
        let mut epochs: Vec<_> = epochs.collect();
        epochs.sort_by_key(|(epoch, _)| *epoch);
        let [a, b] = found.map(|f| f.wal);
        Ok(Opened {
            wal: Wal {
                files: [a, b],
                active: 0,
            },
            epochs,
        })
    }

    /// Appends the records of groups to the active file (one `write`, one
    /// `fdatasync`).
    pub fn append(&mut self, batches: &[&Batch]) -> std::io::Result<()> {
        self.files[self.active].append(batches)
    }

    /// Empties the active file, to hold the groups after checkpoint `epoch`
    /// (at open: the other file's epoch is then older, its records in the
    /// engine).
    pub fn start_over(&mut self, epoch: u64) -> std::io::Result<()> {
        self.files[self.active].start_over(epoch)
    }

    /// The folder (in tests, for their marker files).
    #[cfg(test)]
    pub fn dir(&self) -> &Path {
        &self.files[0].dir
    }

    /// Moves the appends to the other file, started over for the groups
    /// after checkpoint `epoch`. The engine must hold its records already.
    pub fn switch(&mut self, epoch: u64) -> std::io::Result<()> {
        self.files[1 - self.active].start_over(epoch)?;
        self.active = 1 - self.active;
        Ok(())
    }
}

/// One of the log's files.
pub(super) struct LogFile {
    file: File,
    epoch: u64,
    /// Bytes of records after the header.
    len: u64,
    /// The folder, where a test puts [`FAIL_MARKER`] to make appends fail.
    #[cfg(test)]
    dir: std::path::PathBuf,
}

/// In tests: while a file of this name is in the folder, appends fail as a
/// full or failing disk would make them.
#[cfg(test)]
pub(super) const FAIL_MARKER: &str = "fail-the-log";

/// What opening a file found.
pub(super) struct OpenedFile {
    pub wal: LogFile,
    /// The checkpoint the file's records come after; none for a new file.
    pub epoch: Option<u64>,
    /// The payloads of its whole records, oldest first.
    pub records: Vec<Vec<u8>>,
}

impl LogFile {
    /// Opens a file of the log, created when missing; its records are read
    /// when its epoch is `from` or later. A torn or corrupt tail is left
    /// where it is: the caller starts the file over once it has what it needs
    /// from it.
    pub fn open(dir: &Path, name: &str, from: u64) -> std::io::Result<OpenedFile> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(name))?;
        let size = file.metadata()?.len();
        // Read record by record, so memory holds the records, not the file;
        // after a clean close the epochs are past, and nothing is read.
        let mut reader = BufReader::with_capacity(64 * 1024, &file);
        let mut header = [0; FILE_HEADER as usize];
        let epoch = match reader.read_exact(&mut header) {
            Ok(()) if header.starts_with(MAGIC) => {
                Some(u64::from_le_bytes(header[8..].try_into().expect("8 bytes")))
            }
            _ => None,
        };
        let mut records = Vec::new();
        let mut at = FILE_HEADER;
        while let Some(e) = epoch.filter(|e| *e >= from)
            && let Some(payload) = next_record(&mut reader, e, size - at)
        {
            at += (HEADER + payload.len()) as u64;
            records.push(payload);
        }
        drop(reader);
        if size < PREALLOCATED {
            let zeros = vec![0; 64 * 1024];
            let mut end = size;
            while end < PREALLOCATED {
                let n = zeros.len().min((PREALLOCATED - end) as usize);
                file.write_all_at(&zeros[..n], end)?;
                end += n as u64;
            }
            file.sync_all()?;
            // A new file: its name is durable once its folder is synced.
            File::open(dir)?.sync_all()?;
        }
        let len = at - FILE_HEADER;
        let wal = Self {
            file,
            epoch: epoch.unwrap_or(0),
            len,
            #[cfg(test)]
            dir: dir.to_owned(),
        };
        Ok(OpenedFile {
            wal,
            epoch,
            records,
        })
    }

    /// Appends the records of groups (one `write`, one `fdatasync`). A
    /// batch with nothing to log adds no record.
    pub fn append(&mut self, batches: &[&Batch]) -> std::io::Result<()> {
        #[cfg(test)]
        if self.dir.join(FAIL_MARKER).exists() {
            return Err(std::io::Error::other("the disk failed (a test's doing)"));
        }
        let mut out = Vec::new();
        for payload in batches
            .iter()
            .map(|b| b.payload())
            .filter(|p| !p.is_empty())
        {
            let len = u32::try_from(payload.len()).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "a group of over 4 GiB")
            })?;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
            out.extend_from_slice(&self.epoch.to_le_bytes());
            out.extend_from_slice(payload);
        }
        if out.is_empty() {
            return Ok(());
        }
        let at = FILE_HEADER + self.len;
        let written = self
            .file
            .write_all_at(&out, at)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            // Whatever part of it landed must not be replayed.
            let end = [0; HEADER];
            let _ = (self.file.write_all_at(&end, at)).and_then(|()| self.file.sync_data());
            return Err(e);
        }
        self.len += out.len() as u64;
        Ok(())
    }

    /// Empties the file, to hold the groups after checkpoint `epoch`.
    pub fn start_over(&mut self, epoch: u64) -> std::io::Result<()> {
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&epoch.to_le_bytes());
        self.file.write_all_at(&header, 0)?;
        self.file.sync_data()?;
        self.epoch = epoch;
        self.len = 0;
        Ok(())
    }
}

/// The payload of the next whole record of `epoch`, if there is one within
/// the `left` bytes of the file.
fn next_record(reader: &mut impl Read, epoch: u64, left: u64) -> Option<Vec<u8>> {
    let mut header = [0; HEADER];
    reader.read_exact(&mut header).ok()?;
    let len = u32::from_le_bytes(header[..4].try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(header[4..8].try_into().ok()?);
    let of = u64::from_le_bytes(header[8..].try_into().ok()?);
    if len == 0 || of != epoch || (HEADER + len) as u64 > left {
        return None;
    }
    let mut payload = vec![0; len];
    reader.read_exact(&mut payload).ok()?;
    (crc32fast::hash(&payload) == crc).then_some(payload)
}

#[cfg(test)]
#[path = "wal_tests.rs"]
mod tests;
