//! Reading the write-ahead log of the second format, for its migration.
//!
//! Two files, used in turn, each a header (`CRMWAL` 0, the format byte, the
//! epoch as u64; format 2 pads the header to a 4 KB block) and then records
//! `[payload length u32][crc32 of payload u32][epoch u64][payload]`, little
//! endian; in format 2 a group of records ends with a padding record (its
//! length's top bit set). A file ends at the first record that is empty,
//! fails its checksum or is of another epoch. The engine file kept the
//! number of its last checkpoint; the files of that epoch and later hold
//! what it lacks, oldest epoch first. A record's payload is its effects:
//! `[key length u32][engine key][value length u32][item bytes]`, the value
//! length `u32::MAX` for a deleted item.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use redb::{Database, ReadableDatabase, TableDefinition};
use shared::store::StoreError;

use crate::engine;

pub(super) const FILES: [&str; 2] = ["crm-store.wal", "crm-store-2.wal"];
const MAGIC: &[u8; 7] = b"CRMWAL\x00";
const BLOCK: u64 = 4096;
const HEADER: usize = 16;
const PADDING: u32 = 1 << 31;
const DELETED: u32 = u32::MAX;

/// The engine file's record of its last checkpoint.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// The number of the engine file's last checkpoint (0 before the first).
pub(super) fn last_checkpoint(db: &Database) -> Result<u64, StoreError> {
    let txn = db.begin_read().map_err(engine)?;
    let meta = match txn.open_table(META) {
        Ok(meta) => meta,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
        Err(e) => return Err(engine(e)),
    };
    Ok(meta
        .get("checkpoint")
        .map_err(engine)?
        .map_or(0, |v| v.value()))
}

/// The records of epoch `from` and later, oldest epoch first.
pub(super) fn unapplied(dir: &Path, from: u64) -> std::io::Result<Vec<Vec<u8>>> {
    let mut epochs = Vec::new();
    for name in FILES {
        let path = dir.join(name);
        if path.exists()
            && let Some((epoch, records)) = read(&path)?
            && epoch >= from
        {
            epochs.push((epoch, records));
        }
    }
    epochs.sort_by_key(|(epoch, _)| *epoch);
    Ok(epochs.into_iter().flat_map(|(_, r)| r).collect())
}

/// A file's epoch and whole records; `None` for a file without a header.
fn read(path: &Path) -> std::io::Result<Option<(u64, Vec<Vec<u8>>)>> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut header = [0; HEADER];
    if reader.read_exact(&mut header).is_err() || !header.starts_with(MAGIC) {
        return Ok(None);
    }
    let epoch = u64::from_le_bytes(header[8..].try_into().expect("8 bytes"));
    let (start, padded) = match header[7] {
        1 => (HEADER as u64, false),
        2 => (BLOCK, true),
        format => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} is a log of format {format}: open it with the crm that wrote it",
                    path.display()
                ),
            ));
        }
    };
    std::io::copy(
        &mut (&mut reader).take(start - HEADER as u64),
        &mut std::io::sink(),
    )?;
    let mut at = start;
    let mut records = Vec::new();
    while let Some((len, payload)) =
        next_record(&mut reader, epoch, padded, size.saturating_sub(at))
    {
        at += (HEADER + len) as u64;
        records.extend(payload);
    }
    Ok(Some((epoch, records)))
}

/// The next record: its payload's length, and the payload unless it is padding.
fn next_record(
    reader: &mut impl Read,
    epoch: u64,
    padded: bool,
    left: u64,
) -> Option<(usize, Option<Vec<u8>>)> {
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
    (crc32fast::hash(&payload) == crc).then_some((len, (!padding).then_some(payload)))
}

/// One effect of a record: an item's engine key and its bytes, or `None`
/// when it was deleted.
pub(super) type Effect<'a> = (&'a [u8], Option<&'a [u8]>);

/// A record's effects; `None` if the payload does not parse.
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
