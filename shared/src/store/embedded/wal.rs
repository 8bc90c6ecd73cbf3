//! The write-ahead log of a store in a folder (`crm-store.wal` and
//! `crm-store-2.wal`).
//!
//! Why: a durable commit of the B-tree writes and syncs every page the
//! commit touched (a create touches a dozen: its items, their index entries,
//! the counters, the branches above them), and on this machine that was two
//! thirds of a create's CPU. The log makes a group durable with one small
//! sequential synced write; the writes themselves wait in
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
//! Framing: a header block (`CRMWAL` 0 2, the epoch as u64, zeros to 4 KB),
//! then records `[payload length u32][crc32 of payload u32][epoch u64]
//! [payload]`, little endian. A group's records start a block of their own
//! and end with a padding record (its length's top bit set, zeros for
//! payload) to the next 4 KB boundary. The log ends at the first record that
//! is empty, fails its checksum or is of another epoch. A group is synced
//! before it is visible to readers or answered, so a torn tail (a crash
//! mid-append) was never seen. (Files of format 1, a 16-byte header and no
//! padding, read the same way.)
//!
//! Why whole blocks: a group is written with one `O_DIRECT | O_DSYNC`
//! write, durable when it returns, from the writer's buffer straight to the
//! disk: one system call and no page cache, where a buffered append needed a
//! `write` and an `fdatasync` (84 µs against 91 µs alone on this machine's
//! disk; durable creates about 9% faster under load, with less CPU each:
//! docs/bench-results.md). `O_DIRECT` writes whole aligned blocks, and a
//! group never rewrites the block of an acknowledged one (a torn write could
//! take it along). Where `O_DIRECT` is refused (some file systems; outside
//! Linux), the same writes go through the page cache with `O_DSYNC`.
//!
//! The file is written full of zeros once (16 MB) and then overwritten in
//! place, never truncated: a synced write to blocks the file already has need
//! not also commit the file system's journal (it measured 117 µs against 200
//! µs for an append that grows the file). A checkpoint is due before the
//! file is full. Starting over rewrites the header alone; the records of
//! earlier epochs left behind end the log.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

#[path = "wal_io.rs"]
mod io;
#[path = "wal_payload.rs"]
mod payload;
use io::{BLOCK, Blocks, LogWrite, open_for_writes};
pub(crate) use payload::Batch;
#[cfg(test)]
use payload::Effect;
pub(super) use payload::effects;

/// The log's files in the folder.
pub const WAL_FILES: [&str; 2] = ["crm-store.wal", "crm-store-2.wal"];
const MAGIC: &[u8; 7] = b"CRMWAL\x00";
/// The format written, after the magic; 1 had no blocks.
const FORMAT: u8 = 2;
/// The file's header (the magic, the format, then the epoch) takes a block...
const FILE_HEADER: u64 = BLOCK as u64;
/// ...and took 16 bytes in format 1.
const FILE_HEADER_1: u64 = 16;
/// A record's header: its payload's length, its checksum, its epoch.
const HEADER: usize = 16;
/// The top bit of a record's length marks padding to the end of a block.
const PADDING: u32 = 1 << 31;
/// Bytes the file is written with before its first use; a checkpoint is due
/// before the active file is [`Wal::nearly_full`].
const PREALLOCATED: u64 = 16 << 20;

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

    /// Appends the records of groups to the active file, durably, in
    /// blocks of their own after the last group's (nothing when no batch has
    /// a record).
    pub fn append(&mut self, batches: &[&Batch]) -> std::io::Result<()> {
        self.files[self.active].append(batches)
    }

    /// Whether the active file is close to its preallocated size: past it,
    /// each write would grow the file (and commit the file system's journal).
    pub fn nearly_full(&self) -> bool {
        self.files[self.active].len >= PREALLOCATED - FILE_HEADER - PREALLOCATED / 8
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
    /// Opened for synced writes that bypass the page cache where it can.
    file: File,
    epoch: u64,
    /// Bytes of records after the header: whole blocks.
    len: u64,
    /// Whether the file was started over since it was opened: until then
    /// its records may still be needed, and appends are refused.
    started: bool,
    /// The folder, where a test puts [`FAIL_MARKER`] to make appends fail.
    #[cfg(test)]
    dir: std::path::PathBuf,
}

/// In tests: while a file of this name is in the folder, appends fail as a
/// full or failing disk would make them.
#[cfg(test)]
pub(super) const FAIL_MARKER: &str = "fail-the-log";

/// In tests: a file of this name in the folder makes the log open its files
/// without `O_DIRECT`, as on a file system that refuses it.
#[cfg(test)]
pub(super) const BUFFERED_MARKER: &str = "no-direct-io";

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
        let path = dir.join(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        let size = file.metadata()?.len();
        // Read record by record, so memory holds the records, not the file;
        // after a clean close the epochs are past, and nothing is read.
        let mut reader = BufReader::with_capacity(64 * 1024, &file);
        let mut header = [0; FILE_HEADER_1 as usize];
        let (epoch, format) = match reader.read_exact(&mut header) {
            Ok(()) if header.starts_with(MAGIC) => {
                let epoch = u64::from_le_bytes(header[8..].try_into().expect("8 bytes"));
                (Some(epoch), header[7])
            }
            _ => (None, FORMAT),
        };
        let start = match format {
            1 => FILE_HEADER_1,
            FORMAT => FILE_HEADER,
            // Its records would be lost, or misread: a newer crm wrote it.
            _ => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "{} is a log of format {format}: open it with the crm that wrote it",
                        path.display()
                    ),
                ));
            }
        };
        let mut records = Vec::new();
        if let Some(e) = epoch.filter(|e| *e >= from) {
            std::io::copy(
                &mut (&mut reader).take(start - FILE_HEADER_1),
                &mut std::io::sink(),
            )?;
            let mut at = start;
            let padded = format == FORMAT;
            while let Some(record) = next_record(&mut reader, e, padded, size.saturating_sub(at)) {
                at += (HEADER + record.len) as u64;
                records.extend(record.payload);
            }
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
        // In tests, a marker file stands for a file system without `O_DIRECT`.
        #[cfg(test)]
        let direct = !dir.join(BUFFERED_MARKER).exists();
        #[cfg(not(test))]
        let direct = true;
        let wal = Self {
            file: open_for_writes(&path, direct)?,
            epoch: epoch.unwrap_or(0),
            // Appends start over the records read, once the caller has
            // started the file over (`started`).
            len: 0,
            started: false,
            #[cfg(test)]
            dir: dir.to_owned(),
        };
        Ok(OpenedFile {
            wal,
            epoch,
            records,
        })
    }

    /// The write of a group's records, at the file's next block; none when
    /// no batch has a record.
    fn prepare(&mut self, batches: &[&Batch]) -> Option<LogWrite> {
        let payloads = batches
            .iter()
            .map(|b| b.payload())
            .filter(|p| !p.is_empty());
        let size: usize = payloads.clone().map(|p| HEADER + p.len()).sum();
        if size == 0 {
            return None;
        }
        // Padding of at least a header's bytes, to the next block.
        let pad = (size + HEADER).next_multiple_of(BLOCK) - size;
        let mut bytes = Blocks::zeroed(size + pad);
        let out = bytes.as_mut();
        let mut at = 0;
        let mut put = |len: u32, payload: &[u8]| {
            out[at..at + 4].copy_from_slice(&len.to_le_bytes());
            out[at + 4..at + 8].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
            out[at + 8..at + 16].copy_from_slice(&self.epoch.to_le_bytes());
            out[at + HEADER..at + HEADER + payload.len()].copy_from_slice(payload);
            at += HEADER + payload.len();
        };
        for payload in payloads {
            // Records stay under a request's 100 items of 400 KB: far below 2 GiB.
            put(payload.len() as u32, payload);
        }
        put(PADDING | (pad - HEADER) as u32, &[0; BLOCK][..pad - HEADER]);
        let write = LogWrite {
            at: FILE_HEADER + self.len,
            bytes,
            #[cfg(test)]
            fail: self.dir.join(FAIL_MARKER).exists(),
        };
        self.len += (size + pad) as u64;
        Some(write)
    }

    /// Appends the records of groups, durably.
    pub fn append(&mut self, batches: &[&Batch]) -> std::io::Result<()> {
        if !self.started {
            // A bug: the records read at open would be written over.
            return Err(std::io::Error::other("the log's file was not started over"));
        }
        let write = self.prepare(batches);
        write.map_or(Ok(()), |w| w.run(&self.file))
    }

    /// Empties the file, to hold the groups after checkpoint `epoch`.
    pub fn start_over(&mut self, epoch: u64) -> std::io::Result<()> {
        let mut header = Blocks::zeroed(BLOCK);
        let out = header.as_mut();
        out[..7].copy_from_slice(MAGIC);
        out[7] = FORMAT;
        out[8..16].copy_from_slice(&epoch.to_le_bytes());
        self.file.write_all_at(header.as_ref(), 0)?;
        self.epoch = epoch;
        self.len = 0;
        self.started = true;
        Ok(())
    }
}

/// A whole record of a file: its payload's length, and the payload unless
/// it was padding.
struct Record {
    len: usize,
    payload: Option<Vec<u8>>,
}

/// The next whole record of `epoch`, if there is one within the `left` bytes
/// of the file; padding records only where the format has them (`padded`).
fn next_record(reader: &mut impl Read, epoch: u64, padded: bool, left: u64) -> Option<Record> {
    let mut header = [0; HEADER];
    reader.read_exact(&mut header).ok()?;
    let len = u32::from_le_bytes(header[..4].try_into().ok()?);
    let crc = u32::from_le_bytes(header[4..8].try_into().ok()?);
    let of = u64::from_le_bytes(header[8..].try_into().ok()?);
    let (padding, len) = (len & PADDING != 0, (len & !PADDING) as usize);
    if (len == 0 && !padding) || (padding && !padded) || of != epoch || (HEADER + len) as u64 > left
    {
        return None;
    }
    let mut payload = vec![0; len];
    reader.read_exact(&mut payload).ok()?;
    (crc32fast::hash(&payload) == crc).then_some(Record {
        len,
        payload: (!padding).then_some(payload),
    })
}

#[cfg(test)]
#[path = "wal_tests.rs"]
mod tests;
