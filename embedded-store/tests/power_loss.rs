//! Power losses, on a disk simulated through the engine's storage trait:
//! what a write acknowledged is on the disk, whatever the disk did with the
//! writes it had not synced (kept some, dropped others, tore one), and a
//! transaction is there whole or not at all. A failed sync fails its
//! commit, which leaves nothing.

use std::sync::{Arc, Mutex};

use embedded_store::{EmbeddedStore, StorageBackend};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use shared::store::{Index, Item, Key, Query, SkRange, Store, StoreError, Write};

const INDEXES: &[Index] = &[];

#[derive(Debug, Clone)]
enum Op {
    Write(u64, Vec<u8>),
    SetLen(u64),
}

/// A disk: what is durable, what the writer sees, and what it did since
/// the last sync.
#[derive(Debug, Default)]
struct Platters {
    durable: Vec<u8>,
    current: Vec<u8>,
    unsynced: Vec<Op>,
    fail_syncs: bool,
}

#[derive(Debug, Clone, Default)]
struct Disk(Arc<Mutex<Platters>>);

fn out_of_range() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, "out of range")
}

fn apply(bytes: &mut Vec<u8>, op: &Op) {
    match op {
        Op::SetLen(len) => bytes.resize(*len as usize, 0),
        Op::Write(at, data) => {
            let end = *at as usize + data.len();
            if bytes.len() < end {
                bytes.resize(end, 0);
            }
            bytes[*at as usize..end].copy_from_slice(data);
        }
    }
}

impl StorageBackend for Disk {
    fn len(&self) -> Result<u64, std::io::Error> {
        Ok(self.0.lock().unwrap().current.len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        let disk = self.0.lock().unwrap();
        let source = disk
            .current
            .get(offset as usize..offset as usize + out.len())
            .ok_or_else(out_of_range)?;
        out.copy_from_slice(source);
        Ok(())
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        let mut disk = self.0.lock().unwrap();
        disk.current.resize(len as usize, 0);
        disk.unsynced.push(Op::SetLen(len));
        Ok(())
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        let mut disk = self.0.lock().unwrap();
        if disk.fail_syncs {
            return Err(std::io::Error::other("the disk failed a sync"));
        }
        disk.durable = disk.current.clone();
        disk.unsynced.clear();
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        let mut disk = self.0.lock().unwrap();
        let end = offset as usize + data.len();
        let target = disk
            .current
            .get_mut(offset as usize..end)
            .ok_or_else(out_of_range)?;
        target.copy_from_slice(data);
        disk.unsynced.push(Op::Write(offset, data.to_vec()));
        Ok(())
    }
}

impl Disk {
    /// The disk after a power loss now: what was synced, and of what was
    /// not, a random part (any of the writes, in any order, one of them torn).
    fn after_power_loss(&self, rng: &mut StdRng) -> Disk {
        let disk = self.0.lock().unwrap();
        let mut bytes = disk.durable.clone();
        for op in &disk.unsynced {
            match op {
                Op::Write(at, data) if rng.random_bool(0.3) => {
                    let torn = rng.random_range(0..=data.len());
                    apply(&mut bytes, &Op::Write(*at, data[..torn].to_vec()));
                }
                op if rng.random_bool(0.5) => apply(&mut bytes, op),
                _ => {}
            }
        }
        Disk(Arc::new(Mutex::new(Platters {
            durable: bytes.clone(),
            current: bytes,
            ..Platters::default()
        })))
    }
}

fn put(pk: &str, sk: &str) -> Write {
    let mut item = Item::new();
    item.insert("pk".into(), pk.into());
    item.insert("sk".into(), sk.into());
    item.insert("body".into(), json!("x".repeat(300)));
    Write::Put {
        item,
        condition: None,
    }
}

/// Four writers, each committing an item and its counter together; power
/// lost at moments along the way, each loss tried with several fates of the
/// writes not synced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_power_losses_whole() {
    let disk = Disk::default();
    let store = Arc::new(EmbeddedStore::on_backend(disk.clone(), INDEXES).unwrap());
    let acknowledged = Arc::new(Mutex::new(Vec::<(usize, usize)>::new()));
    let writers: Vec<_> = (0..4)
        .map(|client| {
            let (store, acknowledged) = (store.clone(), acknowledged.clone());
            tokio::spawn(async move {
                for n in 0..60 {
                    let count = Write::Add {
                        key: Key::new("N", format!("{client}")),
                        attribute: "n",
                        delta: 1,
                    };
                    store
                        .write(vec![put(&format!("W#{client}"), &format!("{n:03}")), count])
                        .await
                        .unwrap();
                    acknowledged.lock().unwrap().push((client, n));
                }
            })
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(7);
    let mut images = Vec::new();
    while images.len() < 12 {
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
        // Read before the image: every write acknowledged by now is synced.
        let acked = acknowledged.lock().unwrap().clone();
        for _ in 0..3 {
            images.push((acked.clone(), disk.after_power_loss(&mut rng)));
        }
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let last = acknowledged.lock().unwrap().clone();
    images.push((last, disk.after_power_loss(&mut rng)));
    assert!(
        images.iter().any(|(acked, _)| !acked.is_empty()),
        "no write was acknowledged in time"
    );

    for (acked, image) in images {
        let after =
            EmbeddedStore::on_backend(image, INDEXES).expect("the store opens after a power loss");
        assert!(
            !after.repaired_on_open(),
            "opening after a power loss read the whole file"
        );
        for client in 0..4 {
            let items = after
                .query(&Query::new(
                    Index::TABLE,
                    format!("W#{client}"),
                    SkRange::All,
                ))
                .await
                .unwrap()
                .items;
            for (_, n) in acked.iter().filter(|(c, _)| *c == client) {
                let sk = format!("{n:03}");
                assert!(
                    items.iter().any(|i| i["sk"] == sk.as_str()),
                    "acknowledged {client}/{n} lost"
                );
            }
            let counted = after
                .get(&Key::new("N", format!("{client}")), true)
                .await
                .unwrap()
                .map_or(0, |i| i["n"].as_u64().unwrap());
            assert_eq!(
                counted,
                items.len() as u64,
                "a transaction half there for {client}"
            );
        }
    }
}

/// A sync that fails fails its commit: the write is refused (503), nothing
/// of it is on the disk after a restart, and nothing panics.
#[tokio::test]
async fn a_failed_sync_leaves_nothing() {
    let disk = Disk::default();
    let store = EmbeddedStore::on_backend(disk.clone(), INDEXES).unwrap();
    store.write(vec![put("W", "before")]).await.unwrap();
    disk.0.lock().unwrap().fail_syncs = true;
    let failed = store.write(vec![put("W", "failed")]).await;
    assert!(
        matches!(failed, Err(StoreError::Unavailable(_))),
        "{failed:?}"
    );
    let again = store.write(vec![put("W", "again")]).await;
    assert!(
        matches!(again, Err(StoreError::Unavailable(_))),
        "{again:?}"
    );
    drop(store);
    let image = disk.after_power_loss(&mut StdRng::seed_from_u64(1));
    let after = EmbeddedStore::on_backend(image, INDEXES).unwrap();
    let items = after
        .query(&Query::new(Index::TABLE, "W", SkRange::All))
        .await
        .unwrap()
        .items;
    let sks: Vec<_> = items.iter().map(|i| i["sk"].as_str().unwrap()).collect();
    assert_eq!(sks, ["before"]);
}
