//! The deal's rules, as a function of the deal before a change (none for a
//! create), the deal as the body leaves it, the won/lost date the body gave
//! (`Patch::Clear`: cleared) and the time: no store, no clock.

use super::record::{DealFields, DealStatus};
use crate::error::{ApiError, ApiResult};
use crate::ids::Timestamp;
use crate::patch::Patch;

/// Applies the rules to `deal` (the body applied to `before`), or refuses it.
pub(super) fn settle(
    deal: &mut DealFields,
    before: Option<&DealFields>,
    won_lost_date: Patch<Timestamp>,
    now: Timestamp,
) -> ApiResult<()> {
    stamp_won_lost(deal, before, won_lost_date, now)?;
    keep_lost_reasons_on_lost(deal, before)?;
    count_time_in_stage(deal, before, now);
    Ok(())
}

/// Won and lost are stamped (with the date the body gives, or now when the
/// status changes); open clears the stamp, and an open deal given one is
/// refused.
fn stamp_won_lost(
    deal: &mut DealFields,
    before: Option<&DealFields>,
    given: Patch<Timestamp>,
    now: Timestamp,
) -> ApiResult<()> {
    let status_changed = before.is_none_or(|b| b.status != deal.status);
    match deal.status {
        DealStatus::Open => {
            if given.as_value().is_some() {
                return Err(ApiError::field(
                    "wonLostDate",
                    "an open deal has no won/lost date",
                ));
            }
            deal.won_lost_date = None;
        }
        DealStatus::Won | DealStatus::Lost => {
            match given {
                Patch::Set(date) => deal.won_lost_date = Some(date),
                // Cleared on a won or lost deal: stamped anew.
                Patch::Clear => deal.won_lost_date = Some(now),
                Patch::Keep if status_changed => deal.won_lost_date = Some(now),
                Patch::Keep => {}
            }
        }
    }
    Ok(())
}

/// Lost reasons belong to lost deals: leaving lost clears them, and setting
/// them on a deal that is not lost is refused.
fn keep_lost_reasons_on_lost(deal: &mut DealFields, before: Option<&DealFields>) -> ApiResult<()> {
    if deal.status == DealStatus::Lost {
        return Ok(());
    }
    let leaving_lost = before.is_some_and(|b| b.status == DealStatus::Lost);
    let sets = |now_set: bool, changed: bool| now_set && changed && !leaving_lost;
    let reason_set = sets(
        deal.lost_reason.is_some(),
        before.is_none_or(|b| b.lost_reason != deal.lost_reason),
    );
    let obs_set = sets(
        deal.lost_reason_obs.is_some(),
        before.is_none_or(|b| b.lost_reason_obs != deal.lost_reason_obs),
    );
    if reason_set || obs_set {
        return Err(ApiError::field(
            "lostReason",
            "only a lost deal has lost reasons",
        ));
    }
    deal.lost_reason = None;
    deal.lost_reason_obs = None;
    Ok(())
}

/// A stage change stamps `lastStageChanged` and adds the time spent in the
/// stage left (milliseconds) to `timeInStage`.
fn count_time_in_stage(deal: &mut DealFields, before: Option<&DealFields>, now: Timestamp) {
    if let Some(b) = before
        && b.stage_id != deal.stage_id
    {
        let entered = b.last_stage_changed.unwrap_or(now);
        *deal.time_in_stage.entry(b.stage_id.clone()).or_default() +=
            (now - entered).num_milliseconds().max(0);
        deal.last_stage_changed = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::deals::DealContact;
    use chrono::Duration;

    fn at(ms: i64) -> Timestamp {
        chrono::DateTime::from_timestamp_millis(1_800_000_000_000 + ms).unwrap()
    }

    fn deal(status: DealStatus, stage: &str) -> DealFields {
        DealFields {
            legacy_id: None,
            name: "Plan".into(),
            value: 10.0,
            status,
            contact: DealContact {
                id: crate::keys::ContactId(1),
                name: None,
                avatar: None,
                phone: None,
                email: None,
                created_at: at(0),
                is_private: false,
            },
            operator_id: 7,
            group_id: 1,
            pipeline_id: "p".into(),
            stage_id: stage.into(),
            origin: "site".into(),
            tag_ids: vec![],
            lost_reason: None,
            lost_reason_obs: None,
            products: vec![],
            won_lost_date: None,
            due_date: None,
            last_stage_changed: Some(at(0)),
            conversation: None,
            campaign: None,
            author_type: None,
            author_id: None,
            position: None,
            focused_counts: None,
            comments: None,
            tasks: None,
            time_in_stage: Default::default(),
            custom_fields: None,
            context: None,
        }
    }

    #[test]
    fn won_and_lost_are_stamped_and_open_clears_the_stamp() {
        let open = deal(DealStatus::Open, "s1");
        let mut won = deal(DealStatus::Won, "s1");
        settle(&mut won, Some(&open), Patch::Keep, at(5)).unwrap();
        assert_eq!(won.won_lost_date, Some(at(5)));
        // Unchanged status: the stamp stays.
        let mut still = won.clone();
        settle(&mut still, Some(&won), Patch::Keep, at(9)).unwrap();
        assert_eq!(still.won_lost_date, Some(at(5)));
        // A given date wins; reopening clears it.
        let mut dated = deal(DealStatus::Lost, "s1");
        settle(&mut dated, Some(&open), Patch::Set(at(1)), at(9)).unwrap();
        assert_eq!(dated.won_lost_date, Some(at(1)));
        let mut reopened = deal(DealStatus::Open, "s1");
        reopened.won_lost_date = dated.won_lost_date;
        settle(&mut reopened, Some(&dated), Patch::Keep, at(9)).unwrap();
        assert_eq!(reopened.won_lost_date, None);
        let mut refused = deal(DealStatus::Open, "s1");
        let error = settle(&mut refused, None, Patch::Set(at(1)), at(9)).unwrap_err();
        assert_eq!(error.details[0].field, "wonLostDate");
    }

    #[test]
    fn lost_reasons_live_on_lost_deals_only() {
        let mut lost = deal(DealStatus::Lost, "s1");
        lost.lost_reason = Some(vec!["price".into()]);
        settle(&mut lost, None, Patch::Keep, at(1)).unwrap();
        assert_eq!(lost.lost_reason.as_deref(), Some(&["price".to_owned()][..]));
        // Leaving lost clears them, even as the body still carries them.
        let mut reopened = lost.clone();
        reopened.status = DealStatus::Open;
        settle(&mut reopened, Some(&lost), Patch::Keep, at(2)).unwrap();
        assert_eq!(
            (reopened.lost_reason, reopened.lost_reason_obs),
            (None, None)
        );
        // Setting one on an open deal is refused.
        let open = deal(DealStatus::Open, "s1");
        let mut given = open.clone();
        given.lost_reason_obs = Some("too dear".into());
        let error = settle(&mut given, Some(&open), Patch::Keep, at(3)).unwrap_err();
        assert_eq!(error.details[0].field, "lostReason");
    }

    #[test]
    fn stage_changes_add_up_the_time_spent() {
        let start = deal(DealStatus::Open, "s1");
        let mut moved = deal(DealStatus::Open, "s2");
        settle(&mut moved, Some(&start), Patch::Keep, at(30)).unwrap();
        assert_eq!(moved.time_in_stage["s1"], 30);
        assert_eq!(moved.last_stage_changed, Some(at(30)));
        let mut back = moved.clone();
        back.stage_id = "s1".into();
        settle(&mut back, Some(&moved), Patch::Keep, at(40)).unwrap();
        let mut again = back.clone();
        again.stage_id = "s2".into();
        settle(&mut again, Some(&back), Patch::Keep, at(45)).unwrap();
        assert_eq!(again.time_in_stage["s1"], 35);
        assert_eq!(again.time_in_stage["s2"], 10);
        // No stage change: nothing counted, nothing stamped.
        let mut same = again.clone();
        same.name = "Renamed".into();
        settle(
            &mut same,
            Some(&again),
            Patch::Keep,
            at(99) + Duration::hours(1),
        )
        .unwrap();
        assert_eq!(
            (same.time_in_stage, same.last_stage_changed),
            (again.time_in_stage, again.last_stage_changed)
        );
    }
}
