//! The store while a checkpoint is under way or failing (a full or failing
//! disk, made by a test marker file: [`super::checkpointer::CHECKPOINT_FAIL_MARKER`]).

use std::time::{Duration, Instant};

use super::checkpointer::CHECKPOINT_FAIL_MARKER;
use super::wal::WAL_FILES;
use super::{DATA_FILE, EmbeddedStore};
use crate::store::*;
use serde_json::json;

fn put(sk: &str, value: i64) -> Write {
    let item = json!({ "pk": "T#k", "sk": sk, "v": value, "gsi1pk": "G", "gsi1sk": sk });
    Write::Put {
        item: item.as_object().unwrap().clone(),
        condition: None,
    }
}

async fn values(store: &EmbeddedStore) -> Vec<(String, i64)> {
    let page = store
        .query(&Query::new(crate::keys::GSI1, "G", SkRange::All))
        .await
        .unwrap();
    let field = |item: &Item, name: &str| item[name].clone();
    (page.items.iter())
        .map(|i| {
            (
                field(i, "sk").as_str().unwrap().to_owned(),
                field(i, "v").as_i64().unwrap(),
            )
        })
        .collect()
}

/// Polls `done` for up to 30 s (a test machine may be slow).
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "waited too long for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A copy of the folder's files as a crash would leave them.
fn image(dir: &std::path::Path, name: &str, files: &[&str]) -> std::path::PathBuf {
    let image = dir.with_extension(name);
    std::fs::create_dir_all(&image).unwrap();
    for file in files {
        std::fs::copy(dir.join(file), image.join(file)).unwrap();
    }
    image
}

/// A store in a new folder whose checkpoints fail (the marker stays), past
/// its first freeze: `a` and `b` = 1 in the frozen overlay and the log's
/// first file, then `b` = 2 and `c` = 2 in the new overlay and the other file.
async fn writing_past_a_failed_checkpoint() -> (std::path::PathBuf, EmbeddedStore) {
    writing_past_a_checkpoint_that("fails").await
}

/// [`writing_past_a_failed_checkpoint`], the checkpoints failing as `how`
/// says: `fails` (an error) or `panic`.
async fn writing_past_a_checkpoint_that(how: &str) -> (std::path::PathBuf, EmbeddedStore) {
    let dir = std::env::temp_dir().join(format!("crm-checkpoint-{}", crate::ids::new_ulid()));
    let every = Duration::from_millis(20);
    let store = EmbeddedStore::open_checkpointing(&dir, crate::keys::GSIS, every).unwrap();
    std::fs::write(dir.join(CHECKPOINT_FAIL_MARKER), how).unwrap();
    let first_log = std::fs::read(dir.join(WAL_FILES[1])).unwrap();
    store.write(vec![put("a", 1), put("b", 1)]).await.unwrap();
    // A checkpoint begins: the log moves to its other file.
    wait_for("the log's other file", || {
        std::fs::read(dir.join(WAL_FILES[1])).unwrap()[..16] != first_log[..16]
    });
    store.write(vec![put("b", 2), put("c", 2)]).await.unwrap();
    (dir, store)
}

/// Writes go on while a checkpoint cannot be made: into a new overlay, and
/// the log's other file. Reads see all of it, a crash replays both files in
/// order (the newer write of a key wins), and once the disk is back the
/// engine's file alone holds everything.
#[tokio::test]
async fn writes_go_on_while_a_checkpoint_fails_and_a_crash_replays_both_epochs() {
    let (dir, store) = writing_past_a_failed_checkpoint().await;
    store.write(vec![put("d", 3)]).await.unwrap();
    let all = [("a", 1), ("b", 2), ("c", 2), ("d", 3)].map(|(k, v)| (k.to_owned(), v));
    assert_eq!(values(&store).await, all);

    let mut files = vec![DATA_FILE];
    files.extend(WAL_FILES);
    let crashed = image(&dir, "crashed", &files);
    let engine_only = image(&dir, "engine-only", &[DATA_FILE]);
    {
        let bare = EmbeddedStore::open(&engine_only, crate::keys::GSIS).unwrap();
        assert_eq!(values(&bare).await, [], "no checkpoint could be made");
        let replayed = EmbeddedStore::open(&crashed, crate::keys::GSIS).unwrap();
        assert_eq!(values(&replayed).await, all, "both files, in order");
    }

    std::fs::remove_file(dir.join(CHECKPOINT_FAIL_MARKER)).unwrap();
    wait_for("the checkpoints", || {
        let bare = image(&dir, "later", &[DATA_FILE]);
        let store = EmbeddedStore::open(&bare, crate::keys::GSIS).unwrap();
        let found = futures_util::FutureExt::now_or_never(values(&store)).unwrap();
        drop(store);
        std::fs::remove_dir_all(&bare).unwrap();
        found == all
    });
    assert_eq!(values(&store).await, all);
    drop(store);
    for folder in [&dir, &crashed, &engine_only] {
        std::fs::remove_dir_all(folder).unwrap();
    }
}

/// A store closed while its checkpoints fail, the close's own failing too:
/// the log's two files still have every acknowledged write, and the next open
/// replays them in order (index entries with them).
#[tokio::test]
async fn a_close_whose_checkpoint_fails_leaves_both_files_to_replay() {
    let (dir, store) = writing_past_a_failed_checkpoint().await;
    drop(store);
    std::fs::remove_file(dir.join(CHECKPOINT_FAIL_MARKER)).unwrap();
    let all = [("a", 1), ("b", 2), ("c", 2)].map(|(k, v)| (k.to_owned(), v));
    for _ in 0..2 {
        let store = EmbeddedStore::open(&dir, crate::keys::GSIS).unwrap();
        assert_eq!(values(&store).await, all);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// While checkpoints fail, writes go on until what waits for one passes a
/// bound ([`super::writer`]'s `UNCHECKPOINTED`: 16 KB in tests); then they
/// are refused with 503, and resume once a checkpoint is made. Nothing
/// acknowledged is lost on the way.
#[tokio::test]
async fn writes_are_refused_past_a_bound_while_checkpoints_fail() {
    refused_past_the_bound_then_resumed("fails").await;
}

/// The same when a checkpoint panics (a debug build's, as `cargo run`
/// makes: release builds abort): it counts as failed, where the writer
/// waited for its answer forever and never refused a write.
#[tokio::test]
async fn writes_are_refused_past_a_bound_while_checkpoints_panic() {
    refused_past_the_bound_then_resumed("panic").await;
}

async fn refused_past_the_bound_then_resumed(how: &str) {
    let (dir, store) = writing_past_a_checkpoint_that(how).await;
    let padded = |sk: &str| {
        let item = json!({ "pk": "T#k", "sk": sk, "v": 0, "pad": "x".repeat(1000) });
        vec![Write::Put {
            item: item.as_object().unwrap().clone(),
            condition: None,
        }]
    };
    // A deadline, not a count: a panicking checkpoint's backtrace takes a
    // while to print, and the writes before its failure is known all pass.
    let (mut acknowledged, started) = (Vec::new(), Instant::now());
    let refused = loop {
        let sk = format!("p{:05}", acknowledged.len());
        match store.write(padded(&sk)).await {
            Ok(_) => acknowledged.push(sk),
            Err(e) => break e,
        }
        assert!(started.elapsed() < Duration::from_secs(10), "never refused");
    };
    assert!(matches!(refused, StoreError::Unavailable(_)), "{refused:?}");
    assert!(
        acknowledged.len() >= 5,
        "{} writes before",
        acknowledged.len()
    );

    std::fs::remove_file(dir.join(CHECKPOINT_FAIL_MARKER)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while store.write(padded("after")).await.is_err() {
        assert!(Instant::now() < deadline, "writes never resumed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for sk in &acknowledged {
        let key = Key::new("T#k", sk.as_str());
        assert!(store.get(&key, true).await.unwrap().is_some(), "{sk}");
    }
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A checkpoint due by size (4 MB in the overlay) while one is under way
/// waits for it, and the writes with it: memory and the log stay bounded
/// however slowly the checkpoint thread runs (on idle CPU only). Once the
/// checkpoint is made, the write that waited is made, nothing lost.
#[tokio::test]
async fn writes_wait_for_the_checkpoint_under_way_once_another_is_due_by_size() {
    let (dir, store) = writing_past_a_checkpoint_that("hold").await;
    let store = std::sync::Arc::new(store);
    // Dropped before the store, even by a failed assertion: the store's
    // close waits for the held checkpoint, so a failure would hang instead.
    let release = Release(dir.join(CHECKPOINT_FAIL_MARKER));
    let big = |sk: &str| {
        let item = json!({ "pk": "T#k", "sk": sk, "pad": "x".repeat(310_000) });
        vec![Write::Put {
            item: item.as_object().unwrap().clone(),
            condition: None,
        }]
    };
    // 14 × 310 KB: past 4 MB only with the last one.
    for i in 0..14 {
        let write = store.write(big(&format!("big{i:02}")));
        let written = tokio::time::timeout(Duration::from_secs(30), write).await;
        written.expect("a write before 4 MB waited").unwrap();
    }
    let waiting = tokio::spawn({
        let store = store.clone();
        async move { store.write(vec![put("e", 4)]).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "a write went on past a due checkpoint"
    );
    drop(release);
    waiting.await.unwrap().unwrap();
    let all = [("a", 1), ("b", 2), ("c", 2), ("e", 4)].map(|(k, v)| (k.to_owned(), v));
    assert_eq!(values(&store).await, all);
    let last = Key::new("T#k", "big13");
    assert!(store.get(&last, true).await.unwrap().is_some());
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Removes a test's marker file when dropped.
struct Release(std::path::PathBuf);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The checkpoint thread runs at nice 19 (Linux): requests' threads take
/// the CPU first. The writer keeps its priority: a nice value is a
/// thread's, not the process's.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_checkpoint_thread_runs_at_the_lowest_priority_and_the_writer_does_not() {
    let store = EmbeddedStore::in_memory(crate::keys::GSIS);
    // From /proc/self/task/<tid>/stat: (name, nice) of each thread.
    let threads = || -> Vec<(String, i32)> {
        let tasks = std::fs::read_dir("/proc/self/task").unwrap();
        (tasks.flatten())
            .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
            .map(|stat| {
                let (open, close) = (stat.find('(').unwrap(), stat.rfind(')').unwrap());
                let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
                // After the name: state is field 3 of stat(5), nice field 19.
                (
                    stat[open + 1..close].to_owned(),
                    fields[16].parse().unwrap(),
                )
            })
            .collect()
    };
    let nice_of = |prefix: &str| -> Vec<i32> {
        let all = threads();
        all.into_iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(_, n)| n)
            .collect()
    };
    // A thread has its name before it lowers its priority: wait for both.
    wait_for("the checkpoint threads at nice 19", || {
        let found = nice_of("crm-store-check");
        !found.is_empty() && found.iter().all(|&n| n == super::checkpointer::NICE)
    });
    // The writer keeps the priority of the thread that opened the store.
    // SAFETY: a plain system call on the calling thread (`who` 0).
    let ours = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let writers = nice_of("crm-store-write");
    assert!(
        !writers.is_empty() && writers.iter().all(|&n| n == ours),
        "{writers:?}, this thread {ours}"
    );
    drop(store);
}
