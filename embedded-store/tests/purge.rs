//! Purging: what was deleted or overwritten is in no byte of the folder once
//! `purge` answers; what is live is all there, in the file and after a
//! reopen; writes sent during a purge wait for it and are kept; a purge
//! stopped on the way (its partial file left) is done again on open.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use embedded_store::{DATA_FILE, EmbeddedStore};
use serde_json::json;
use shared::store::{Index, Item, Key, Query, SkRange, Store, Write};

const BY_EMAIL: Index = Index {
    name: Some("gsi1"),
    pk: "gsi1pk",
    sk: "gsi1sk",
};
const INDEXES: &[Index] = &[BY_EMAIL];

/// A folder of its own under the system's temporary folder, removed on drop.
struct Folder(PathBuf);

impl Folder {
    fn new(what: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path =
            std::env::temp_dir().join(format!("crm-purge-{what}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The files of `dir` that hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let bytes = std::fs::read(p).unwrap();
            bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
        .collect()
}

fn person(sk: &str, email: &str, notes: &str) -> Write {
    let mut item = Item::new();
    item.insert("pk".into(), "PEOPLE".into());
    item.insert("sk".into(), sk.into());
    item.insert("gsi1pk".into(), "EMAIL".into());
    item.insert("gsi1sk".into(), email.into());
    item.insert("notes".into(), json!(notes));
    Write::Put {
        item,
        condition: None,
    }
}

async fn people(store: &EmbeddedStore) -> Vec<String> {
    let page = store
        .query(&Query::new(Index::TABLE, "PEOPLE", SkRange::All))
        .await
        .unwrap();
    page.items
        .iter()
        .map(|i| i["sk"].as_str().unwrap().to_owned())
        .collect()
}

/// A person written, rewritten and deleted leaves their bytes in the file
/// (earlier versions in freed pages, their index entries) until the purge;
/// after it, none; the others are all there, by key and by index, and after
/// a reopen.
#[tokio::test]
async fn a_purge_leaves_no_byte_of_what_was_deleted() {
    let folder = Folder::new("deleted");
    let store = EmbeddedStore::open(&folder.0, INDEXES).unwrap();
    for n in 0..50 {
        let sk = format!("kept-{n:02}");
        store
            .write(vec![person(&sk, &format!("{sk}@example.com"), "x")])
            .await
            .unwrap();
    }
    for n in 0..5 {
        let email = format!("zuleika.{n}@example.com");
        store
            .write(vec![person("gone", &email, "Zuleika prefers calls")])
            .await
            .unwrap();
    }
    store
        .write(vec![Write::Delete {
            key: Key::new("PEOPLE", "gone"),
            condition: None,
        }])
        .await
        .unwrap();
    assert!(
        !files_holding(&folder.0, "zuleika").is_empty(),
        "the engine keeps what it freed until it is purged"
    );

    store.purge().await.unwrap();
    assert_eq!(files_holding(&folder.0, "zuleika"), Vec::<PathBuf>::new());
    assert!(folder.0.join(DATA_FILE).is_file());
    assert_eq!(people(&store).await.len(), 50);
    let by_email = store
        .query(&Query::new(BY_EMAIL, "EMAIL", SkRange::All))
        .await
        .unwrap();
    assert_eq!(by_email.items.len(), 50);
    // Writes after it go to the new file, and stay.
    store
        .write(vec![person("after", "after@example.com", "y")])
        .await
        .unwrap();
    drop(store);

    assert_eq!(files_holding(&folder.0, "zuleika"), Vec::<PathBuf>::new());
    let store = EmbeddedStore::open(&folder.0, INDEXES).unwrap();
    assert!(!store.repaired_on_open());
    assert_eq!(people(&store).await.len(), 51);
}

/// Writes sent while a purge runs wait for it and are all kept; reads go
/// on meanwhile and see every acknowledged write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_during_a_purge_are_kept() {
    let folder = Folder::new("during");
    let store = Arc::new(EmbeddedStore::open(&folder.0, INDEXES).unwrap());
    for n in 0..500 {
        let sk = format!("a-{n:03}");
        store
            .write(vec![person(
                &sk,
                &format!("{sk}@example.com"),
                &"x".repeat(500),
            )])
            .await
            .unwrap();
    }
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for n in 0..25 {
                    let sk = format!("w{w}-{n:02}");
                    store
                        .write(vec![person(&sk, &format!("{sk}@example.com"), "z")])
                        .await
                        .unwrap();
                    assert!(people(&store).await.contains(&sk), "{sk} read back");
                }
            })
        })
        .collect();
    for _ in 0..3 {
        store.purge().await.unwrap();
    }
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(people(&store).await.len(), 600);
    drop(Arc::into_inner(store).expect("the last handle"));
    let store = EmbeddedStore::open(&folder.0, INDEXES).unwrap();
    assert_eq!(people(&store).await.len(), 600);
}

/// A purge stopped on the way leaves its partial file: the next open
/// removes it and purges again before any write (the file is then another
/// one), without reading the data to open.
#[cfg(unix)]
#[tokio::test]
async fn a_purge_stopped_on_the_way_is_done_again_on_open() {
    use std::os::unix::fs::MetadataExt;

    let folder = Folder::new("stopped");
    {
        let store = EmbeddedStore::open(&folder.0, INDEXES).unwrap();
        store
            .write(vec![person("gone", "zuleika@example.com", "Zuleika")])
            .await
            .unwrap();
        store
            .write(vec![Write::Delete {
                key: Key::new("PEOPLE", "gone"),
                condition: None,
            }])
            .await
            .unwrap();
    }
    // The partial file of a purge stopped by a crash.
    let partial = folder.0.join("crm-store.redb.purging");
    std::fs::write(&partial, b"partial").unwrap();
    let before = std::fs::metadata(folder.0.join(DATA_FILE)).unwrap().ino();

    let store = EmbeddedStore::open(&folder.0, INDEXES).unwrap();
    assert!(!store.repaired_on_open());
    // A write waits for the purge owed; once it is acknowledged, the
    // purge is done.
    store
        .write(vec![person("next", "next@example.com", "n")])
        .await
        .unwrap();
    assert!(!partial.exists());
    let after = std::fs::metadata(folder.0.join(DATA_FILE)).unwrap().ino();
    assert_ne!(before, after, "the file rewritten");
    assert_eq!(files_holding(&folder.0, "zuleika"), Vec::<PathBuf>::new());
    assert_eq!(people(&store).await, ["next"]);
}
