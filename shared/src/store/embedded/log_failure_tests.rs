//! The store when its log fails (a full or failing disk, made by a test
//! marker file: [`super::wal::FAIL_MARKER`]).

use super::{EmbeddedStore, wal::FAIL_MARKER};
use crate::store::*;
use serde_json::json;

fn put(sk: &str, value: i64) -> Write {
    let item = json!({ "pk": "T#f", "sk": sk, "v": value });
    Write::Put {
        item: item.as_object().unwrap().clone(),
        condition: None,
    }
}

async fn value(store: &EmbeddedStore, sk: &str) -> Option<i64> {
    let item = store.get(&Key::new("T#f", sk), true).await.unwrap()?;
    item.get("v").and_then(serde_json::Value::as_i64)
}

/// A failed append stops the writes (503s), reads go on at the last
/// acknowledged state, and after the close and a new open the failed
/// transaction is there whole or not at all: never its other item over
/// an older record replayed from the log.
#[tokio::test]
async fn a_failed_log_stops_writes_and_a_reopen_is_consistent() {
    let dir = std::env::temp_dir().join(format!("crm-log-fails-{}", crate::ids::new_ulid()));
    let hour = std::time::Duration::from_secs(3600);
    let indexes = crate::keys::GSIS;
    let store = EmbeddedStore::open_checkpointing(&dir, indexes, hour).unwrap();
    store.write(vec![put("a", 1)]).await.unwrap();

    std::fs::write(dir.join(FAIL_MARKER), "").unwrap();
    let failed = store.write(vec![put("a", 2), put("b", 2)]).await;
    assert!(
        matches!(failed, Err(StoreError::Unavailable(_))),
        "{failed:?}"
    );
    let after = store.write(vec![put("c", 3)]).await;
    assert!(
        matches!(after, Err(StoreError::Unavailable(_))),
        "{after:?}"
    );
    assert_eq!(
        value(&store, "a").await,
        Some(1),
        "reads show what was acknowledged"
    );
    assert_eq!(value(&store, "b").await, None);
    drop(store);

    std::fs::remove_file(dir.join(FAIL_MARKER)).unwrap();
    for _ in 0..2 {
        let store = EmbeddedStore::open(&dir, indexes).unwrap();
        let seen = (value(&store, "a").await, value(&store, "b").await);
        assert!(
            seen == (Some(1), None) || seen == (Some(2), Some(2)),
            "the failed transaction half-applied: {seen:?}"
        );
        assert_eq!(value(&store, "c").await, None, "refused once stopped");
        store.write(vec![put("d", 4)]).await.unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
