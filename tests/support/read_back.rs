//! A keyed create whose answer was not kept (the store took the record but
//! not the answer): its retry answers as the first did, by reading what it
//! made (docs/api-contract.md, "Idempotency"). Each group's test file checks
//! its own creates with [`TestApp::assert_read_back`];
//! `tests/tests/idempotency.rs` fails for a route that declares a read-back
//! (`.reads_back(..)`) and that no suite checks.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::TestApp;

/// The answer headers a read-back repeats.
const MARKS: [&str; 3] = ["content-type", "x-contact-created", "x-welcome-duplicate"];

/// Keys unique within the test binary, whichever app they are sent to.
static KEYS: AtomicUsize = AtomicUsize::new(0);

impl TestApp {
    /// Sends `body` to `path` (a request to `route`, a route declaring a
    /// read-back) with a key, forgets the kept answer, retries: the retry is
    /// a replay with the first answer's status, marks and body, but for the
    /// fields that move on their own in the background (`moving`: a job's,
    /// a snapshot's). Returns the first answer's body.
    pub async fn assert_read_back(
        &self,
        route: &str,
        path: &str,
        body: &Value,
        moving: &[&str],
    ) -> Value {
        let declared = crm::groups()
            .iter()
            .flat_map(|g| g.routes())
            .any(|r| r.path == route && r.read_back.is_some());
        assert!(declared, "{route} declares no read-back");
        let key = format!("read-back-{}", KEYS.fetch_add(1, Ordering::Relaxed));
        let first = self.post_with_key(path, &key, body).await;
        assert!(
            first.status.is_success(),
            "{path}: {} {}",
            first.status,
            first.body
        );
        self.forget_answer(&key).await;
        let again = self.post_with_key(path, &key, body).await;
        assert!(again.replayed(), "{path}: {:?}", again.headers);
        assert_eq!(again.status, first.status, "{path}: {}", again.body);
        for mark in MARKS {
            assert_eq!(
                again.headers.get(mark),
                first.headers.get(mark),
                "{path}: {mark}"
            );
        }
        let (mut read, mut answered) = (again.body, first.body.clone());
        for field in moving {
            read.as_object_mut().unwrap().remove(*field);
            answered.as_object_mut().unwrap().remove(*field);
        }
        assert_eq!(read, answered, "{path}");
        first.body
    }

    /// Forgets the kept answer of `key`, as an answer the store could not
    /// keep leaves the record: done, to be read back.
    pub async fn forget_answer(&self, key: &str) {
        let record = self.key_record(key).await;
        let mut item = self
            .store
            .get(&record, true)
            .await
            .unwrap()
            .expect("the key's record");
        assert_eq!(item["state"], "done", "{item:?}");
        item.remove("sealed").expect("a kept answer");
        let write = shared::store::Write::Put {
            item,
            condition: None,
        };
        self.store.write(vec![write]).await.unwrap();
    }
}
