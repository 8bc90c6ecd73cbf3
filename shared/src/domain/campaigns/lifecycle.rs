//! The lifecycle: transitions as writes conditional on the version read, so
//! two concurrent `start`s give one start, never two runs.

use super::record::{Campaign, CampaignStatus};
use super::write::{WHAT, ready_to_schedule, save};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::keys;
use crate::keys::CampaignId;
use crate::record::{self, CommitError};
use crate::store::Store;

/// The transitions, by their path (`POST /v3/campaigns/{id}/{action}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Schedule,
    Start,
    Pause,
    Resume,
    Cancel,
    Finish,
    Fail,
}

impl Action {
    pub fn parse(text: &str) -> ApiResult<Action> {
        Ok(match text {
            "schedule" => Action::Schedule,
            "start" => Action::Start,
            "pause" => Action::Pause,
            "resume" => Action::Resume,
            "cancel" => Action::Cancel,
            "finish" => Action::Finish,
            "fail" => Action::Fail,
            _ => {
                return Err(ApiError::not_found(
                    "campaign action (schedule, start, pause, resume, cancel, finish, fail)",
                ));
            }
        })
    }

    /// The statuses it moves from, and to.
    pub fn moves(self) -> (&'static [CampaignStatus], CampaignStatus) {
        use CampaignStatus::*;
        match self {
            Action::Schedule => (&[Draft], Scheduled),
            Action::Start => (&[Scheduled], Running),
            Action::Pause => (&[Running], Paused),
            Action::Resume => (&[Paused], Running),
            Action::Cancel => (&[Draft, Scheduled, Running, Paused], Canceled),
            Action::Finish => (&[Running, Paused], Finished),
            Action::Fail => (&[Scheduled, Running, Paused], Failed),
        }
    }
}

/// A transition, on the condition that nobody moved the campaign in between.
pub async fn transition(
    store: &dyn Store,
    caller: &Caller,
    id: CampaignId,
    action: Action,
) -> ApiResult<Campaign> {
    let current: Campaign =
        record::find(store, &keys::campaign(caller.workspace_id, id), true, WHAT).await?;
    let (from, to) = action.moves();
    if !from.contains(&current.status) {
        return Err(ApiError::conflict(format!(
            "a {} campaign cannot move to {}",
            current.status.as_str(),
            to.as_str()
        )));
    }
    let mut next = current.clone();
    next.status = to;
    if action == Action::Schedule {
        let f = &next.fields;
        ready_to_schedule(f)?;
        next.original_scheduled_to = next.original_scheduled_to.or(f.scheduled_to.clone());
        next.next_scheduled_to = f.scheduled_to.clone();
    }
    let verb = match action {
        Action::Schedule => "campaign.schedule",
        Action::Start => "campaign.start",
        Action::Pause => "campaign.pause",
        Action::Resume => "campaign.resume",
        Action::Cancel => "campaign.cancel",
        Action::Finish => "campaign.finish",
        Action::Fail => "campaign.fail",
    };
    save(store, caller, &current, next, verb, |_| {})
        .await
        .map_err(|e| match e {
            // Moved by a concurrent request: this one lost.
            CommitError::Api(e) if e.status == http::StatusCode::CONFLICT => {
                ApiError::conflict(format!(
                    "the campaign changed while this request ran; it is no longer {}",
                    current.status.as_str()
                ))
            }
            other => other.into(),
        })
}
