//! Contacts of a migration or of the demo, through `crm load`.

use async_trait::async_trait;

use super::input::ContactPatch;
use super::write::{Creation, insert, new_fields, update};
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::keys;
use crate::load::{LineType, Loadable, WithId};
use crate::store::Store;

/// A `contact` line: `id` and the create body of `POST /v3/contacts`. Loaded
/// again, the contact takes the fields the line names (no write when it has
/// them already); its phone stays its identity, so a line whose phone another
/// contact holds is refused, as the API refuses it. A line of a contact
/// merged or erased since changes nothing.
#[async_trait]
impl Loadable for WithId<ContactPatch> {
    const TYPE: &'static str = "contact";

    async fn load(self, store: &dyn Store, caller: &Caller) -> ApiResult<()> {
        let ws = caller.workspace_id;
        // A contact merged since lives on in its survivor: the line is loaded.
        if store
            .get(&keys::merged_contact(ws, self.id), true)
            .await?
            .is_some()
        {
            return Ok(());
        }
        let key = keys::contact(ws, self.id);
        self.create_or_update(
            store,
            &key,
            |id, line, stamps| async move {
                let fields = new_fields(line, Creation::Api)?;
                insert(store, caller, id, &fields, stamps).await
            },
            |id, line| async move {
                match update(store, caller, id, line).await {
                    // An erased contact takes no data again.
                    Err(e) if e.status == http::StatusCode::GONE => Ok(()),
                    done => done.map(drop),
                }
            },
        )
        .await
    }
}

/// The `crm load` lines of contacts: `contact`.
pub fn line_types() -> Vec<LineType> {
    vec![LineType::of::<WithId<ContactPatch>>()]
}
