//! The log's files: records read back, torn and corrupt tails, epochs.

use super::*;
const WAL_FILE: &str = WAL_FILES[0];

/// A fresh folder of this test's own.
fn folder(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("crm-wal-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn batch(effects: &[Effect<'_>]) -> Batch {
    let mut b = Batch::on();
    for (key, value) in effects {
        match value {
            Some(v) => b.put(key, v),
            None => b.delete(key),
        }
    }
    b
}

#[test]
fn a_record_reads_back_as_its_effects_in_order() {
    let written: Vec<Effect<'_>> = vec![(b"a", Some(b"{}")), (b"b", None), (b"a", Some(b""))];
    let b = batch(&written);
    assert_eq!(effects(b.payload()).unwrap(), written);
    assert!(effects(&b.payload()[..5]).is_none(), "a short payload");
}

#[test]
fn a_log_reads_back_until_a_torn_or_corrupt_record() {
    let dir = folder("torn");
    let opened = LogFile::open(&dir, WAL_FILE, 0).unwrap();
    assert_eq!(
        (opened.epoch, opened.records.len()),
        (None, 0),
        "a new file"
    );
    let mut wal = opened.wal;
    wal.start_over(7).unwrap();
    let first = batch(&[(b"k1", Some(b"v1"))]);
    wal.append(&[&first, &Batch::off()]).unwrap();
    let (second, third) = (batch(&[(b"k2", None)]), batch(&[(b"k3", Some(b"v3"))]));
    wal.append(&[&second, &third]).unwrap();
    let opened = LogFile::open(&dir, WAL_FILE, 0).unwrap();
    assert_eq!((opened.epoch, opened.records.len()), (Some(7), 3));
    assert_eq!(
        effects(&opened.records[1]).unwrap(),
        vec![(&b"k2"[..], None)]
    );
    drop(wal);

    // Each group starts a block; a crash mid-append: the third record's
    // last byte never landed.
    let path = dir.join(WAL_FILE);
    let second_group = FILE_HEADER as usize + BLOCK;
    let torn = second_group + HEADER + second.len() + HEADER + third.len() - 1;
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[torn] ^= 0xFF;
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(LogFile::open(&dir, WAL_FILE, 0).unwrap().records.len(), 2);

    // A flipped byte fails the checksum: that record and all after it go.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[FILE_HEADER as usize + HEADER] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(LogFile::open(&dir, WAL_FILE, 0).unwrap().records.len(), 0);

    // A group whose write never landed (its block holds what was there
    // before: here a record of epoch 7) ends the log: the group after it is
    // not read.
    let mut wal = LogFile::open(&dir, WAL_FILE, 0).unwrap().wal;
    wal.start_over(8).unwrap();
    let lost = wal.prepare(&[&first]).unwrap();
    wal.append(&[&second]).unwrap();
    assert_eq!(LogFile::open(&dir, WAL_FILE, 0).unwrap().records.len(), 0);
    lost.run(&wal.file).unwrap();
    assert_eq!(LogFile::open(&dir, WAL_FILE, 0).unwrap().records.len(), 2);
}

#[test]
fn a_file_of_format_1_reads_back() {
    let dir = folder("format-1");
    let payload = batch(&[(b"k1", Some(b"v1"))]).payload().to_vec();
    let mut bytes = b"CRMWAL\x00\x01".to_vec();
    bytes.extend_from_slice(&3u64.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    bytes.extend_from_slice(&3u64.to_le_bytes());
    bytes.extend_from_slice(&payload);
    std::fs::write(dir.join(WAL_FILE), &bytes).unwrap();
    let opened = LogFile::open(&dir, WAL_FILE, 3).unwrap();
    assert_eq!((opened.epoch, opened.records), (Some(3), vec![payload]));
}

#[test]
fn the_two_files_read_back_oldest_epoch_first() {
    let dir = folder("two");
    let mut wal = Wal::open(&dir, 0).unwrap().wal;
    wal.start_over(4).unwrap();
    wal.append(&[&batch(&[(b"k1", None)])]).unwrap();
    wal.switch(5).unwrap();
    wal.append(&[&batch(&[(b"k2", None)]), &batch(&[(b"k3", None)])])
        .unwrap();
    let epochs = Wal::open(&dir, 0).unwrap().epochs;
    let seen: Vec<_> = epochs.iter().map(|(e, r)| (*e, r.len())).collect();
    assert_eq!(seen, [(4, 1), (5, 2)]);
    // The first file again, for epoch 6: epoch 4's records are gone.
    wal.switch(6).unwrap();
    let epochs = Wal::open(&dir, 0).unwrap().epochs;
    let seen: Vec<_> = epochs.iter().map(|(e, r)| (*e, r.len())).collect();
    assert_eq!(seen, [(5, 2), (6, 0)]);
}

#[test]
fn starting_over_ends_the_log_before_the_records_of_earlier_epochs() {
    let dir = folder("over");
    let mut wal = LogFile::open(&dir, WAL_FILE, 0).unwrap().wal;
    wal.start_over(1).unwrap();
    let long = batch(&[(b"k1", Some(b"a longer value")), (b"k2", None)]);
    wal.append(&[&long, &long]).unwrap();
    wal.append(&[&long]).unwrap();
    wal.start_over(2).unwrap();
    let opened = LogFile::open(&dir, WAL_FILE, 0).unwrap();
    assert_eq!((opened.epoch, opened.records.len()), (Some(2), 0));
    let mut wal = opened.wal;
    assert!(wal.append(&[&long]).is_err(), "not started over since open");
    wal.start_over(2).unwrap();
    // Over epoch 1's first group; its second, whole, stays in the next block.
    wal.append(&[&batch(&[(b"k3", None)])]).unwrap();
    let opened = LogFile::open(&dir, WAL_FILE, 0).unwrap();
    assert_eq!(
        opened.records.len(),
        1,
        "epoch 1's records stay behind, unread"
    );
    assert!(std::fs::metadata(dir.join(WAL_FILE)).unwrap().len() >= PREALLOCATED);
}

#[test]
fn groups_of_any_size_fill_whole_blocks() {
    let dir = folder("blocks");
    let mut wal = LogFile::open(&dir, WAL_FILE, 0).unwrap().wal;
    wal.start_over(1).unwrap();
    // A record of 4,080 bytes leaves 16 for the padding: its header alone.
    let exact = vec![7; BLOCK - 2 * HEADER - 9];
    let large = vec![8; 3 * BLOCK];
    let (a, b, c) = (
        batch(&[(b"a", Some(&exact))]),
        batch(&[(b"b", Some(&large))]),
        batch(&[(b"c", None)]),
    );
    assert_eq!(HEADER + a.len(), BLOCK - HEADER);
    for group in [&a, &b, &c] {
        wal.append(&[group]).unwrap();
        assert_eq!(wal.len % BLOCK as u64, 0);
    }
    assert_eq!(wal.len, (BLOCK + 4 * BLOCK + BLOCK) as u64);
    let records = LogFile::open(&dir, WAL_FILE, 0).unwrap().records;
    let keys: Vec<_> = records
        .iter()
        .map(|r| effects(r).unwrap()[0].0.to_vec())
        .collect();
    assert_eq!(keys, [b"a", b"b", b"c"]);
    assert_eq!(effects(&records[1]).unwrap()[0].1, Some(&large[..]));
}

#[test]
fn a_failed_write_is_not_read_back() {
    let dir = folder("failed");
    let mut wal = LogFile::open(&dir, WAL_FILE, 0).unwrap().wal;
    wal.start_over(1).unwrap();
    wal.append(&[&batch(&[(b"k1", None)])]).unwrap();
    // The blocks land, and the disk reports a failure all the same.
    std::fs::write(dir.join(FAIL_MARKER), "").unwrap();
    let failed = batch(&[(b"k2", Some(b"v2"))]);
    assert!(wal.append(&[&failed, &failed]).is_err());
    let records = LogFile::open(&dir, WAL_FILE, 0).unwrap().records;
    assert_eq!(records.len(), 1, "only the group before it");
}

/// Where the file system refuses `O_DIRECT`, the log is written through the
/// page cache, synced all the same (`O_DSYNC`).
#[test]
fn a_log_without_o_direct_reads_back() {
    let dir = folder("buffered");
    std::fs::write(dir.join(BUFFERED_MARKER), "").unwrap();
    let mut wal = LogFile::open(&dir, WAL_FILE, 0).unwrap().wal;
    wal.start_over(3).unwrap();
    wal.append(&[&batch(&[(b"k1", Some(b"v1"))])]).unwrap();
    wal.append(&[&batch(&[(b"k2", None)])]).unwrap();
    let opened = LogFile::open(&dir, WAL_FILE, 0).unwrap();
    assert_eq!((opened.epoch, opened.records.len()), (Some(3), 2));
}

#[test]
fn a_log_of_an_unknown_format_stops_the_open() {
    let dir = folder("format-9");
    let mut bytes = b"CRMWAL\x00\x09".to_vec();
    bytes.extend_from_slice(&3u64.to_le_bytes());
    std::fs::write(dir.join(WAL_FILE), &bytes).unwrap();
    let refused = LogFile::open(&dir, WAL_FILE, 0).err().expect("refused");
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidData);
    assert!(refused.to_string().contains("format 9"), "{refused}");
}
