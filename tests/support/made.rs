//! The event types a group's changes make (docs/api-contract.md, "Events"):
//! each group's test file makes its own types with its own changes and
//! checks them with [`TestApp::assert_made_events`]; `tests/tests/events.rs`
//! fails for a declared type that no suite makes this way.

use std::collections::BTreeSet;

use shared::ids::WorkspaceId;

use crate::TestApp;

impl TestApp {
    /// Every one of `types` is in workspace 1's event log, and every type
    /// in the log is a declared one (`events::TYPES`).
    pub async fn assert_made_events(&self, types: &[&str]) {
        self.assert_made_events_in(1, types).await;
    }

    /// The same in workspace `ws` (an operator's change is an event of the
    /// workspace changed, issue #44).
    pub async fn assert_made_events_in(&self, ws: u64, types: &[&str]) {
        let mut made = BTreeSet::new();
        let mut after = None;
        loop {
            let page = shared::domain::events::log_page(
                self.store.as_ref(),
                WorkspaceId(ws),
                after.clone(),
                None,
                1000,
            )
            .await
            .unwrap();
            made.extend(page.data.into_iter().map(|e| e.kind));
            if !page.has_more {
                break;
            }
            after = page.next_cursor;
        }
        for kind in made.iter().map(String::as_str).chain(types.iter().copied()) {
            assert!(
                shared::domain::events::TYPES.contains(&kind),
                "{kind} is no declared event type"
            );
        }
        assert!(
            !made.contains("webhook.ping"),
            "a ping is never in the log: {made:?}"
        );
        for kind in types {
            assert!(
                made.contains(*kind),
                "no {kind} in workspace {ws}'s log: {made:?}"
            );
        }
    }
}
