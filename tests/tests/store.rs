//! The store's semantics, the same on the embedded store and on DynamoDB Local:
//! conditions, all-or-nothing transactions, DynamoDB's limits, key order,
//! ranges, pages and indexes. What passes locally passes on DynamoDB. Each
//! test runs on the embedded store in memory, on disk, and on DynamoDB Local.

use api_tests::serde_json::{Value, json};
use api_tests::store_test;
use embedded_store::EmbeddedStore;
use shared::keys::GSI1;
use shared::store::{Condition, Index, Item, Key, Query, SkRange, Store, StoreError, Write};

fn item(pk: &str, sk: &str, extra: Value) -> Item {
    let mut item = Item::new();
    item.insert("pk".into(), pk.into());
    item.insert("sk".into(), sk.into());
    if let Value::Object(map) = extra {
        item.extend(map);
    }
    item
}

fn put(item: Item) -> Write {
    Write::Put {
        item,
        condition: None,
    }
}

fn sks(items: &[Item]) -> Vec<&str> {
    items.iter().map(|i| i["sk"].as_str().unwrap()).collect()
}

/// The sort keys of a query's items, read in pages of two, each resuming
/// after the last key of the one before.
async fn in_pages_of_two(s: &dyn Store, query: Query) -> Vec<String> {
    let mut query = Query {
        limit: Some(2),
        ..query
    };
    let mut seen = Vec::new();
    loop {
        let page = s.query(&query).await.unwrap();
        seen.extend(sks(&page.items).into_iter().map(str::to_owned));
        match page.last_key {
            Some(last) => query.start_after = Some(last),
            None => return seen,
        }
    }
}

store_test! {
    async fn conditions_guard_writes(app) {
        let s = app.store.as_ref();
        let key = Key::new("T#1", "a");
        s.write(vec![Write::Put { item: item("T#1", "a", json!({ "version": 1 })), condition: Some(Condition::NotExists) }]).await.unwrap();
        let again = s.write(vec![Write::Put { item: item("T#1", "a", json!({ "version": 9 })), condition: Some(Condition::NotExists) }]).await;
        assert!(matches!(again, Err(StoreError::ConditionFailed { index: 0 })), "{again:?}");
        let stale = s.write(vec![Write::Put { item: item("T#1", "a", json!({ "version": 2 })), condition: Some(Condition::VersionIs(7)) }]).await;
        assert!(matches!(stale, Err(StoreError::ConditionFailed { index: 0 })));
        s.write(vec![Write::Put { item: item("T#1", "a", json!({ "version": 2 })), condition: Some(Condition::VersionIs(1)) }]).await.unwrap();
        assert_eq!(s.get(&key, true).await.unwrap().unwrap()["version"], 2);
        let gone = s.write(vec![Write::Delete { key: Key::new("T#1", "zz"), condition: Some(Condition::Exists) }]).await;
        assert!(matches!(gone, Err(StoreError::ConditionFailed { index: 0 })));
    }
}

store_test! {
    /// A failed condition anywhere in a transaction writes nothing, and names its position.
    async fn transactions_are_all_or_nothing(app) {
        let s = app.store.as_ref();
        s.write(vec![put(item("T#1", "taken", json!({})))]).await.unwrap();
        let result = s
            .write(vec![
                put(item("T#1", "new", json!({}))),
                Write::Add { key: Key::new("T#1", "count"), attribute: "n", delta: 1 },
                Write::Put { item: item("T#1", "taken", json!({})), condition: Some(Condition::NotExists) },
            ])
            .await;
        assert!(matches!(result, Err(StoreError::ConditionFailed { index: 2 })), "{result:?}");
        assert!(s.get(&Key::new("T#1", "new"), true).await.unwrap().is_none());
        assert!(s.get(&Key::new("T#1", "count"), true).await.unwrap().is_none());
    }
}

store_test! {
    /// Numbers are decimals: a whole float reads back as an integer, on both stores.
    async fn numbers_read_back_as_dynamodb_keeps_them(app) {
        let s = app.store.as_ref();
        s.write(vec![put(item("T#n", "n", json!({ "whole": 3.0, "half": 2.5, "deep": { "list": [1.0, 0.25] } })))]).await.unwrap();
        let read = s.get(&Key::new("T#n", "n"), true).await.unwrap().unwrap();
        assert_eq!(read["whole"].to_string(), "3");
        assert_eq!(read["half"].to_string(), "2.5");
        assert_eq!(read["deep"].to_string(), r#"{"list":[1,0.25]}"#);
    }
}

store_test! {
    async fn counters_start_at_zero_and_add(app) {
        let s = app.store.as_ref();
        let key = Key::new("T#1", "count");
        for delta in [1, 1, 5, -2] {
            s.write(vec![Write::Add { key: key.clone(), attribute: "n", delta }]).await.unwrap();
        }
        assert_eq!(s.get(&key, true).await.unwrap().unwrap()["n"], 5);
    }
}

store_test! {
    /// DynamoDB refuses these; so does the embedded store.
    async fn limits_are_enforced(app) {
        let s = app.store.as_ref();
        let many: Vec<Write> = (0..101).map(|i| put(item("T#1", &format!("{i:03}"), json!({})))).collect();
        assert!(matches!(s.write(many).await, Err(StoreError::Invalid(_))));
        let twice = vec![put(item("T#1", "a", json!({}))), put(item("T#1", "a", json!({ "x": 1 })))];
        assert!(matches!(s.write(twice).await, Err(StoreError::Invalid(_))));
        let big = item("T#1", "big", json!({ "blob": "x".repeat(401 * 1024) }));
        assert!(matches!(s.write(vec![put(big)]).await, Err(StoreError::ItemTooLarge)));
        let hundred: Vec<Write> = (0..100).map(|i| put(item("T#1", &format!("{i:03}"), json!({})))).collect();
        s.write(hundred).await.unwrap();
    }
}

store_test! {
    /// Sort keys in byte order, ranges, both directions, and pages that resume.
    async fn queries_read_key_ranges_in_order(app) {
        let s = app.store.as_ref();
        let writes: Vec<Write> = ["a1", "a2", "a3", "b1", "b2", "c1"]
            .iter()
            .map(|sk| put(item("T#q", sk, json!({ "v": sk }))))
            .chain([put(item("T#other", "a0", json!({})))])
            .collect();
        s.write(writes).await.unwrap();
        let q = |range| Query::new(Index::TABLE, "T#q", range);
        let all = s.query(&q(SkRange::All)).await.unwrap();
        assert_eq!(sks(&all.items), ["a1", "a2", "a3", "b1", "b2", "c1"]);
        assert!(all.last_key.is_none());
        assert_eq!(sks(&s.query(&q(SkRange::Prefix("b".into()))).await.unwrap().items), ["b1", "b2"]);
        assert_eq!(sks(&s.query(&q(SkRange::Prefix("b".into())).backward()).await.unwrap().items), ["b2", "b1"]);
        assert_eq!(sks(&s.query(&q(SkRange::Between("a2".into(), "b1".into()))).await.unwrap().items), ["a2", "a3", "b1"]);
        assert_eq!(sks(&s.query(&q(SkRange::Between("a2".into(), "b1".into())).backward()).await.unwrap().items), ["b1", "a3", "a2"]);
        assert_eq!(sks(&s.query(&q(SkRange::AtLeast("b2".into()))).await.unwrap().items), ["b2", "c1"]);
        assert_eq!(sks(&s.query(&q(SkRange::AtLeast("b2".into())).backward()).await.unwrap().items), ["c1", "b2"]);
        assert_eq!(sks(&s.query(&q(SkRange::AtMost("a2".into()))).await.unwrap().items), ["a1", "a2"]);
        assert_eq!(sks(&s.query(&q(SkRange::AtMost("a2".into())).backward()).await.unwrap().items), ["a2", "a1"]);
        // A range that ends before it starts is empty (not an error).
        assert!(s.query(&q(SkRange::Between("b".into(), "a".into()))).await.unwrap().items.is_empty());

        // Pages of two, resuming after the last key, in both directions.
        for forward in [true, false] {
            let seen = in_pages_of_two(s, Query { forward, ..q(SkRange::All) }).await;
            let mut expected = vec!["a1", "a2", "a3", "b1", "b2", "c1"];
            if !forward {
                expected.reverse();
            }
            assert_eq!(seen, expected);
        }
        // Key-only reads return the keys.
        let keys = s.query(&Query { keys_only: true, ..q(SkRange::Prefix("c".into())) }).await.unwrap();
        assert_eq!(keys.items[0].get("v"), None);
        assert_eq!(keys.items[0]["sk"], "c1");
    }
}

store_test! {
    async fn secondary_indexes_follow_their_items(app) {
        let s = app.store.as_ref();
        let indexed = |sk: &str, g: &str| item("T#g", sk, json!({ "gsi1pk": "G", "gsi1sk": g }));
        s.write(vec![put(indexed("x", "2")), put(indexed("y", "1")), put(item("T#g", "z", json!({})))]).await.unwrap();
        let q = Query::new(GSI1, "G", SkRange::All);
        assert_eq!(sks(&s.query(&q).await.unwrap().items), ["y", "x"]);
        // Re-keying and deleting move the index entry.
        s.write(vec![put(indexed("y", "3"))]).await.unwrap();
        assert_eq!(sks(&s.query(&q).await.unwrap().items), ["x", "y"]);
        s.write(vec![Write::Delete { key: Key::new("T#g", "x"), condition: None }]).await.unwrap();
        assert_eq!(sks(&s.query(&q).await.unwrap().items), ["y"]);
        // Index pages resume too.
        s.write(vec![put(indexed("w", "4"))]).await.unwrap();
        let first = s.query(&Query { limit: Some(1), ..q.clone() }).await.unwrap();
        let rest = s.query(&Query { start_after: first.last_key.clone(), ..q.clone() }).await.unwrap();
        assert_eq!((sks(&first.items), sks(&rest.items)), (vec!["y"], vec!["w"]));
    }
}

store_test! {
    async fn batch_gets_skip_missing_keys(app) {
        let s = app.store.as_ref();
        s.write(vec![put(item("T#b", "1", json!({}))), put(item("T#b", "2", json!({})))]).await.unwrap();
        let keys = [Key::new("T#b", "1"), Key::new("T#b", "2"), Key::new("T#b", "3")];
        let mut found = s.batch_get(&keys).await.unwrap();
        found.sort_by(|a, b| a["sk"].as_str().cmp(&b["sk"].as_str()));
        assert_eq!(sks(&found), ["1", "2"]);
        // DynamoDB refuses a key named twice; so does the embedded store.
        let twice = [Key::new("T#b", "1"), Key::new("T#b", "1")];
        assert!(s.batch_get(&twice).await.is_err());
    }
}

/// `crm serve --data DIR`: what was written is there after a restart.
#[tokio::test]
async fn the_embedded_store_survives_a_restart() {
    let dir = std::env::temp_dir().join(format!("crm-store-test-{}", shared::ids::new_ulid()));
    {
        let s = EmbeddedStore::open(&dir, shared::keys::GSIS).unwrap();
        s.write(vec![
            put(item("T#p", "kept", json!({ "gsi1pk": "G", "gsi1sk": "1" }))),
            put(item("T#p", "gone", json!({}))),
        ])
        .await
        .unwrap();
        s.write(vec![Write::Delete {
            key: Key::new("T#p", "gone"),
            condition: None,
        }])
        .await
        .unwrap();
        s.write(vec![Write::Add {
            key: Key::new("T#p", "n"),
            attribute: "n",
            delta: 2,
        }])
        .await
        .unwrap();
    }
    // The engine's file is the whole store.
    let bare = api_tests::TempFolder::new("restart-bare");
    let data = embedded_store::DATA_FILE;
    std::fs::copy(dir.join(data), bare.0.join(data)).unwrap();
    let bare = EmbeddedStore::open(&bare.0, shared::keys::GSIS).unwrap();
    assert!(
        bare.get(&Key::new("T#p", "kept"), true)
            .await
            .unwrap()
            .is_some()
    );
    for _ in 0..2 {
        let s = EmbeddedStore::open(&dir, shared::keys::GSIS).unwrap();
        assert!(
            s.get(&Key::new("T#p", "kept"), true)
                .await
                .unwrap()
                .is_some()
        );
        assert!(
            s.get(&Key::new("T#p", "gone"), true)
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(
            s.get(&Key::new("T#p", "n"), true).await.unwrap().unwrap()["n"],
            2
        );
        let indexed = s.query(&Query::new(GSI1, "G", SkRange::All)).await.unwrap();
        assert_eq!(sks(&indexed.items), ["kept"]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

store_test! {
    /// Reads after deletes, overwrites and moved index entries: a delete
    /// hides the item, in either direction, page by page, and through an
    /// index whose entry moved.
    async fn reads_see_deletes_and_moved_index_entries(app) {
        let s = app.store.as_ref();
        let gsi = |sk: &str| json!({ "gsi1pk": "G", "gsi1sk": sk });
        let writes = ["a", "b", "c", "d"].map(|sk| put(item("T#m", sk, gsi(sk))));
        s.write(writes.to_vec()).await.unwrap();
        s.write(vec![
            Write::Delete {
                key: Key::new("T#m", "b"),
                condition: Some(Condition::Exists),
            },
            put(item("T#m", "c", json!({ "v": 2, "gsi1pk": "G", "gsi1sk": "z" }))),
            put(item("T#m", "e", gsi("e"))),
            put(item("T#m", "bb", gsi("bb"))),
        ])
        .await
        .unwrap();
        assert!(s.get(&Key::new("T#m", "b"), true).await.unwrap().is_none(), "deleted");
        assert_eq!(s.get(&Key::new("T#m", "c"), true).await.unwrap().unwrap()["v"], 2);
        let q = |range| Query::new(Index::TABLE, "T#m", range);
        assert_eq!(sks(&s.query(&q(SkRange::All)).await.unwrap().items), ["a", "bb", "c", "d", "e"]);
        assert_eq!(sks(&s.query(&q(SkRange::All).backward()).await.unwrap().items), ["e", "d", "c", "bb", "a"]);
        let between = q(SkRange::Between("b".into(), "d".into()));
        assert_eq!(sks(&s.query(&between).await.unwrap().items), ["bb", "c", "d"]);
        for forward in [true, false] {
            let mut seen = in_pages_of_two(s, Query { forward, ..q(SkRange::All) }).await;
            if !forward {
                seen.reverse();
            }
            assert_eq!(seen, ["a", "bb", "c", "d", "e"]);
        }
        // `c`'s index entry moved from "c" to "z"; `b`'s is gone.
        let indexed = s.query(&Query::new(GSI1, "G", SkRange::All)).await.unwrap();
        assert_eq!(sks(&indexed.items), ["a", "bb", "d", "e", "c"]);
    }
}

/// A folder of the first format (a JSON-lines log) is migrated once on open:
/// every live item and index entry is there, a torn last line (a crash
/// mid-append) loses only that write, and the log is kept aside.
#[tokio::test]
async fn a_folder_of_the_first_format_is_migrated() {
    let folder = api_tests::TempFolder::new("migrate");
    let log = [
        json!({ "put": [item("T#m", "a", json!({ "gsi1pk": "G", "gsi1sk": "2", "n": 1.0 })), item("T#m", "b", json!({}))] }).to_string(),
        json!({ "put": [item("T#m", "c", json!({ "gsi1pk": "G", "gsi1sk": "1" }))], "delete": [["T#m", "b"]] }).to_string(),
        r#"{"put":[{"pk":"T#m","sk":"torn""#.to_owned(),
    ]
    .join("\n");
    std::fs::write(folder.0.join("crm-store.jsonl"), log).unwrap();
    {
        let s = EmbeddedStore::open(&folder.0, shared::keys::GSIS).unwrap();
        let all = s
            .query(&Query::new(Index::TABLE, "T#m", SkRange::All))
            .await
            .unwrap();
        assert_eq!(sks(&all.items), ["a", "c"]);
        assert_eq!(all.items[0]["n"], 1, "numbers as DynamoDB keeps them");
        let indexed = s.query(&Query::new(GSI1, "G", SkRange::All)).await.unwrap();
        assert_eq!(sks(&indexed.items), ["c", "a"], "in index order");
        s.write(vec![put(item("T#m", "d", json!({})))])
            .await
            .unwrap();
    }
    assert!(!folder.0.join("crm-store.jsonl").exists());
    assert!(folder.0.join("crm-store.jsonl.migrated").exists());
    let s = EmbeddedStore::open(&folder.0, shared::keys::GSIS).unwrap();
    let all = s
        .query(&Query::new(Index::TABLE, "T#m", SkRange::All))
        .await
        .unwrap();
    assert_eq!(sks(&all.items), ["a", "c", "d"], "the migration ran once");
}

/// A crash: the folder as a running store leaves it (its file copied while it
/// is open, with no write under way). Every acknowledged write is in it:
/// each commit is durable before it is answered.
#[tokio::test]
async fn acknowledged_writes_are_in_the_file_of_a_running_store() {
    let live = api_tests::TempFolder::new("crash-live");
    let image = api_tests::TempFolder::new("crash-image");
    let s = EmbeddedStore::open(&live.0, shared::keys::GSIS).unwrap();
    s.write(vec![
        put(item("T#c", "kept", json!({ "gsi1pk": "G", "gsi1sk": "1" }))),
        put(item("T#c", "gone", json!({}))),
    ])
    .await
    .unwrap();
    for delta in [2, 3] {
        let add = Write::Add {
            key: Key::new("T#c", "n"),
            attribute: "n",
            delta,
        };
        s.write(vec![add]).await.unwrap();
    }
    s.write(vec![Write::Delete {
        key: Key::new("T#c", "gone"),
        condition: None,
    }])
    .await
    .unwrap();
    // A write refused by its condition leaves nothing.
    let refused = Write::Put {
        item: item("T#c", "kept", json!({ "refused": true })),
        condition: Some(Condition::NotExists),
    };
    assert!(s.write(vec![refused]).await.is_err());
    let data = embedded_store::DATA_FILE;
    std::fs::copy(live.0.join(data), image.0.join(data)).unwrap();
    let kept = Key::new("T#c", "kept");
    for _ in 0..2 {
        let s = EmbeddedStore::open(&image.0, shared::keys::GSIS).unwrap();
        let item = s.get(&kept, true).await.unwrap().expect("kept");
        assert_eq!(item.get("refused"), None);
        assert!(
            s.get(&Key::new("T#c", "gone"), true)
                .await
                .unwrap()
                .is_none()
        );
        let n = s.get(&Key::new("T#c", "n"), true).await.unwrap().unwrap();
        assert_eq!(n["n"], 5, "each addition once");
        let indexed = s.query(&Query::new(GSI1, "G", SkRange::All)).await.unwrap();
        assert_eq!(
            sks(&indexed.items),
            ["kept"],
            "index entries with their items"
        );
    }
    drop(s);
}

/// A folder of the second format (an engine file and a write-ahead log
/// whose last records the file lacks, as a crash left it: the fixture was
/// made by that format's store) is migrated once on open: the log's writes
/// are applied with their index entries, and its files removed.
#[tokio::test]
async fn a_folder_of_the_second_format_is_migrated() {
    let folder = api_tests::TempFolder::new("migrate-2");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/store-format-2");
    for file in ["crm-store.redb", "crm-store.wal", "crm-store-2.wal"] {
        std::fs::copy(fixture.join(file), folder.0.join(file)).unwrap();
    }
    for reopen in [false, true] {
        let s = EmbeddedStore::open(&folder.0, shared::keys::GSIS).unwrap();
        let all = s
            .query(&Query::new(Index::TABLE, "T#f", SkRange::All))
            .await
            .unwrap();
        assert_eq!(sks(&all.items), ["a", "c", "d", "n"], "reopened: {reopen}");
        assert_eq!(all.items[1]["v"], 2, "c as the log left it");
        assert_eq!(all.items[3]["n"], 5, "each addition once");
        let indexed = s.query(&Query::new(GSI1, "G", SkRange::All)).await.unwrap();
        assert_eq!(sks(&indexed.items), ["c", "a", "d"], "c's entry moved");
        assert!(!folder.0.join("crm-store.wal").exists());
        s.write(vec![put(item("T#x", "e", json!({})))])
            .await
            .unwrap();
    }
}

/// A torn write at the end of the engine's file (bytes past its last commit,
/// as a crash while the file grows leaves them) loses nothing committed.
#[tokio::test]
async fn a_torn_tail_of_the_engine_file_loses_nothing_committed() {
    let folder = api_tests::TempFolder::new("torn");
    {
        let s = EmbeddedStore::open(&folder.0, shared::keys::GSIS).unwrap();
        for i in 0..20 {
            s.write(vec![put(item(
                "T#t",
                &format!("{i:02}"),
                json!({ "gsi1pk": "G", "gsi1sk": format!("{i:02}") }),
            ))])
            .await
            .unwrap();
        }
    }
    let file = folder.0.join("crm-store.redb");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend((0..8192u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8));
    std::fs::write(&file, bytes).unwrap();
    let s = EmbeddedStore::open(&folder.0, shared::keys::GSIS).unwrap();
    let all = s
        .query(&Query::new(Index::TABLE, "T#t", SkRange::All))
        .await
        .unwrap();
    assert_eq!(all.items.len(), 20);
    let indexed = s.query(&Query::new(GSI1, "G", SkRange::All)).await.unwrap();
    assert_eq!(indexed.items.len(), 20);
    s.write(vec![put(item("T#t", "after", json!({})))])
        .await
        .unwrap();
}

/// A job the local queue accepted before the process stopped (here: its
/// runner never finished) runs when the next process starts.
#[test]
fn a_local_job_accepted_before_a_crash_runs_after_restart() {
    use shared::queue::{JobMessage, JobQueue, JobRunner, LocalQueue};
    use std::sync::Arc;

    struct Stuck;
    #[async_trait::async_trait]
    impl JobRunner for Stuck {
        async fn run(&self, _: &dyn Store, _: &dyn JobQueue, _: &JobMessage) -> Result<(), String> {
            std::future::pending().await
        }
    }

    let folder = api_tests::TempFolder::new("jobs");
    let request: shared::domain::imports::ImportRequest = serde_json::from_value(json!({
        "contacts": [{ "name": "Ana", "phone": "21 98888-0001" }, { "name": "Rui", "phone": "21 98888-0002" }]
    }))
    .unwrap();
    let caller = shared::auth::Caller::system(1, "test");
    let job_id = {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let id = runtime.block_on(async {
            let store: shared::store::SharedStore =
                Arc::new(EmbeddedStore::open(&folder.0, shared::keys::GSIS).unwrap());
            let queue = LocalQueue::start(store.clone(), Arc::new(Stuck)).await;
            let job = shared::domain::imports::start(
                store.as_ref(),
                &queue as &dyn JobQueue,
                &caller,
                request,
            )
            .await
            .unwrap();
            job.id
        });
        // The process "dies": its tasks (and the stuck run) are dropped with the runtime.
        drop(runtime);
        id
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store: shared::store::SharedStore =
            Arc::new(EmbeddedStore::open(&folder.0, shared::keys::GSIS).unwrap());
        let stored = shared::domain::imports::get(store.as_ref(), &caller, &job_id)
            .await
            .unwrap();
        assert_eq!(stored.status, shared::domain::imports::JobStatus::Queued);
        let _queue = LocalQueue::start(
            store.clone(),
            Arc::new(shared::domain::jobs::Jobs::from_env()),
        )
        .await;
        let mut done = None;
        for _ in 0..200 {
            let job = shared::domain::imports::get(store.as_ref(), &caller, &job_id)
                .await
                .unwrap();
            if job.status == shared::domain::imports::JobStatus::Done {
                done = Some(job);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        let job = done.expect("the job ran after the restart");
        assert_eq!(job.created, 2);
        // Its message is gone from the queue once it ran.
        let left = store
            .query(&Query::new(
                Index::TABLE,
                shared::keys::LOCAL_JOBS,
                SkRange::All,
            ))
            .await
            .unwrap();
        assert!(left.items.is_empty() || wait_empty(store.as_ref()).await);
    });
}

/// The queue removes a message right after its run; give it a moment.
async fn wait_empty(store: &dyn Store) -> bool {
    for _ in 0..200 {
        let left = store
            .query(&Query::new(
                Index::TABLE,
                shared::keys::LOCAL_JOBS,
                SkRange::All,
            ))
            .await
            .unwrap();
        if left.items.is_empty() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    false
}

store_test! {
    /// Ranges read exactly their keys, forward and backward, across pages.
    async fn ranges_start_and_stop_where_they_say(app) {
        let s = app.store.as_ref();
        let sks = ["a", "a#1", "a$", "ab", "b", "b#2", "c"];
        for sk in sks {
            s.write(vec![put(item("T#r", sk, json!({})))]).await.unwrap();
        }
        let read = |range: SkRange, forward: bool| async move {
            let mut query = Query::new(Index::TABLE, "T#r", range);
            query.forward = forward;
            query.limit = Some(2);
            let mut out = Vec::new();
            loop {
                let page = s.query(&query).await.unwrap();
                out.extend(page.items.iter().map(|i| i["sk"].as_str().unwrap().to_owned()));
                match page.last_key {
                    Some(last) => query.start_after = Some(last),
                    None => break,
                }
            }
            out
        };
        assert_eq!(read(SkRange::Prefix("a".into()), true).await, ["a", "a#1", "a$", "ab"]);
        assert_eq!(read(SkRange::Prefix("a#".into()), true).await, ["a#1"]);
        assert_eq!(read(SkRange::Between("a$".into(), "b".into()), true).await, ["a$", "ab", "b"]);
        assert_eq!(read(SkRange::Between("a$".into(), "b".into()), false).await, ["b", "ab", "a$"]);
        assert_eq!(read(SkRange::AtMost("ab".into()), false).await, ["ab", "a$", "a#1", "a"]);
        assert_eq!(read(SkRange::AtLeast("b".into()), true).await, ["b", "b#2", "c"]);
        assert_eq!(read(SkRange::AtLeast("b".into()), false).await, ["c", "b#2", "b"]);
        assert!(read(SkRange::Between("x".into(), "z".into()), true).await.is_empty());
        assert!(read(SkRange::Prefix("zz".into()), false).await.is_empty());
    }
}

store_test! {
    /// `page::merged` reads shards of one family as one range: the first
    /// `want` items of the union in key order, both ways, however the items
    /// are spread (evenly, all in one shard, shards empty), in at most two
    /// Queries a shard.
    async fn merged_shards_read_as_one_range(app) {
        let s = app.store.as_ref();
        const SHARDS: usize = 8;
        type Spread = fn(usize) -> usize;
        let spreads: [(&str, Spread); 3] = [
            ("even", |i| (i.wrapping_mul(2_654_435_761) >> 7) % SHARDS),
            ("one shard", |_| 5),
            ("two of eight", |i| if i % 3 == 0 { 1 } else { 6 }),
        ];
        for (n, (spread, shard_of)) in spreads.iter().enumerate() {
            let pk = |shard: usize| format!("M#{n}#S{shard}");
            let writes: Vec<Write> = (0..120).map(|i| put(item(&pk(shard_of(i)), &format!("{i:04}"), json!({})))).collect();
            for chunk in writes.chunks(25) {
                s.write(chunk.to_vec()).await.unwrap();
            }
            for forward in [true, false] {
                for want in [1, 5, 17, 40, 119, 120, 200] {
                    let shards = (0..SHARDS)
                        .map(|shard| {
                            let query = Query::new(Index::TABLE, pk(shard), SkRange::All);
                            if forward { query } else { query.backward() }
                        })
                        .collect();
                    let before = app.metrics();
                    let items = shared::page::merged(s, shards, want).await.unwrap();
                    let cost = app.metrics() - before;
                    let mut expected: Vec<String> = (0..120).map(|i| format!("{i:04}")).collect();
                    if !forward {
                        expected.reverse();
                    }
                    expected.truncate(want);
                    assert_eq!(sks(&items), expected, "{spread}, forward {forward}, want {want}");
                    assert!(cost.queries as usize <= 2 * SHARDS, "{spread}, want {want}: {cost:?}");
                }
            }
        }
    }
}
