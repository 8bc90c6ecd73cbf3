//! The metrics of a session, computed from its trails (never taken from the
//! client): see docs/design.md, "Session reports", for the rules and a worked
//! example.

use super::record::{Author, Metrics, SessionTimes, Trail, TrailKind};
use crate::error::{ApiError, ApiResult};
use crate::ids::Timestamp;

fn seconds(from: Timestamp, to: Timestamp) -> f64 {
    ((to - from).num_milliseconds().max(0)) as f64 / 1000.0
}

/// Reads the times off the trails and computes the metrics. Only what happens
/// from the service's start (the last reopening, else the opening) counts; a
/// bot's message is never a reply.
pub fn measure(
    created_at: Timestamp,
    trails: &[Trail],
    reset_on_new_assignment: bool,
) -> ApiResult<(SessionTimes, Metrics)> {
    for pair in trails.windows(2) {
        if pair[1].at < pair[0].at {
            return Err(ApiError::field("trails", "must be in time order"));
        }
    }
    if trails.first().is_some_and(|t| t.at < created_at) {
        return Err(ApiError::field("trails", "must not start before createdAt"));
    }
    // The episode measured: from the last reopening in the trail's order (a
    // `finished` at the very instant of the reopening belongs to the one before).
    let last_reopening = trails.iter().rposition(|t| t.kind == TrailKind::Reopened);
    let reopened_at = last_reopening.map(|i| trails[i].at);
    let start = reopened_at.unwrap_or(created_at);
    let service: Vec<&Trail> = trails[last_reopening.unwrap_or(0)..].iter().collect();
    let assignments: Vec<&&Trail> = service
        .iter()
        .filter(|t| matches!(t.kind, TrailKind::Assigned | TrailKind::Transferred))
        .collect();
    let first_assignment = assignments.first().map(|t| t.at);
    let queued_at = service
        .iter()
        .find(|t| t.kind == TrailKind::Queued)
        .map(|t| t.at);
    let reply = first_assignment.and_then(|assigned| {
        service.iter().find(|t| {
            t.kind == TrailKind::Message && t.from == Some(Author::Operator) && t.at >= assigned
        })
    });
    let finished_at = service
        .iter()
        .rev()
        .find(|t| t.kind == TrailKind::Finished)
        .map(|t| t.at);

    let tme = match (queued_at, first_assignment) {
        (Some(q), Some(a)) if a >= q => Some(seconds(q, a)),
        _ => None,
    };
    let tmp = reply.and_then(|reply| {
        let base = if reset_on_new_assignment {
            assignments
                .iter()
                .rev()
                .find(|a| a.at <= reply.at)
                .map(|a| a.at)
        } else {
            first_assignment
        };
        base.map(|b| seconds(b, reply.at))
    });
    let tma = match (first_assignment, finished_at) {
        (Some(a), Some(f)) if f >= a => Some(seconds(a, f)),
        _ => None,
    };
    let mut operators: Vec<String> = Vec::new();
    let mut groups: Vec<String> = Vec::new();
    let mut bots: Vec<String> = Vec::new();
    for t in trails {
        if let Some(o) = &t.operator_id
            && matches!(t.kind, TrailKind::Assigned | TrailKind::Transferred)
            && !operators.contains(o)
        {
            operators.push(o.clone());
        }
        if let Some(g) = &t.group_id
            && !groups.contains(g)
        {
            groups.push(g.clone());
        }
        if let Some(b) = &t.bot_id
            && !bots.contains(b)
        {
            bots.push(b.clone());
        }
    }
    let times = SessionTimes {
        service_started_at: start,
        queued_at,
        assigned_at: first_assignment,
        first_reply_at: reply.map(|r| r.at),
        finished_at,
        reopened_at,
        operator_id: assignments.last().and_then(|a| a.operator_id.clone()),
        answered_by: reply.and_then(|r| r.operator_id.clone()),
        group_id: trails.iter().rev().find_map(|t| t.group_id.clone()),
        bot_id: trails.iter().rev().find_map(|t| t.bot_id.clone()),
        operators,
        groups,
        bots,
        transferred: trails.iter().any(|t| t.kind == TrailKind::Transferred),
    };
    Ok((times, Metrics { tma, tme, tmp }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> Timestamp {
        crate::ids::parse_ts("2026-03-01T10:00:00Z").unwrap() + chrono::Duration::minutes(minutes)
    }

    fn trail(kind: TrailKind, minutes: i64, operator: Option<&str>, from: Option<Author>) -> Trail {
        Trail {
            kind,
            at: at(minutes),
            operator_id: operator.map(str::to_owned),
            group_id: None,
            bot_id: None,
            from,
        }
    }

    use TrailKind::*;

    /// The worked example of docs/design.md.
    #[test]
    fn metrics_of_a_plain_session() {
        let trails = [
            trail(Bot, 0, None, None),
            trail(Message, 1, None, Some(Author::Bot)),
            trail(Queued, 2, None, None),
            trail(Assigned, 7, Some("ana"), None),
            trail(Message, 9, None, Some(Author::Contact)),
            trail(Message, 10, Some("ana"), Some(Author::Operator)),
            trail(Finished, 37, None, None),
        ];
        let (times, m) = measure(at(0), &trails, false).unwrap();
        assert_eq!(m.tme, Some(300.0), "queued 10:02 until assigned 10:07");
        assert_eq!(
            m.tmp,
            Some(180.0),
            "assigned 10:07 until the first reply 10:10"
        );
        assert_eq!(m.tma, Some(1800.0), "assigned 10:07 until finished 10:37");
        assert_eq!(times.answered_by.as_deref(), Some("ana"));
    }

    #[test]
    fn a_bot_message_is_never_a_reply() {
        let trails = [
            trail(Queued, 0, None, None),
            trail(Assigned, 1, Some("ana"), None),
            trail(Message, 2, None, Some(Author::Bot)),
        ];
        let (_, m) = measure(at(0), &trails, false).unwrap();
        assert_eq!(m.tmp, None);
        assert_eq!(m.tma, None, "not finished");
    }

    #[test]
    fn a_transfer_resets_the_first_response_only_when_asked() {
        let trails = [
            trail(Assigned, 0, Some("ana"), None),
            trail(Transferred, 4, Some("rui"), None),
            trail(Message, 5, Some("rui"), Some(Author::Operator)),
        ];
        let (times, m) = measure(at(0), &trails, false).unwrap();
        assert_eq!(m.tmp, Some(300.0));
        assert_eq!(
            times.answered_by.as_deref(),
            Some("rui"),
            "the time goes to who answered"
        );
        assert_eq!(times.operator_id.as_deref(), Some("rui"));
        let (_, m) = measure(at(0), &trails, true).unwrap();
        assert_eq!(m.tmp, Some(60.0));
    }

    #[test]
    fn a_reopened_session_measures_from_its_reopening() {
        let trails = [
            trail(Queued, 0, None, None),
            trail(Assigned, 10, Some("ana"), None),
            trail(Finished, 20, None, None),
            trail(Reopened, 100, None, None),
            trail(Queued, 100, None, None),
            trail(Assigned, 103, Some("rui"), None),
            trail(Message, 104, Some("rui"), Some(Author::Operator)),
            trail(Finished, 110, None, None),
        ];
        let (times, m) = measure(at(0), &trails, false).unwrap();
        assert_eq!(times.service_started_at, at(100));
        assert_eq!(
            (m.tme, m.tmp, m.tma),
            (Some(180.0), Some(60.0), Some(420.0))
        );
    }

    #[test]
    fn a_finish_at_the_instant_of_the_reopening_belongs_to_the_episode_before() {
        let trails = [
            trail(Assigned, 0, Some("ana"), None),
            trail(Finished, 10, None, None),
            trail(Reopened, 10, None, None),
            trail(Assigned, 12, Some("rui"), None),
        ];
        let (times, m) = measure(at(0), &trails, false).unwrap();
        assert_eq!((times.finished_at, m.tma), (None, None), "open again");
        assert_eq!(times.assigned_at, Some(at(12)));
    }

    #[test]
    fn trails_must_be_in_order() {
        let trails = [
            trail(Assigned, 5, Some("a"), None),
            trail(Queued, 1, None, None),
        ];
        assert!(measure(at(0), &trails, false).is_err());
        assert!(measure(at(10), &[trail(Queued, 1, None, None)], false).is_err());
    }
}
