//! Time windows of list filters: the spec's `period` and `date` presets and
//! explicit `from`/`to` pairs, all in UTC. Written once for every list that
//! filters by time (deals today, session reports next).
//!
//! - `today`, `current_month`: from the start of the day or month to now;
//! - `last_month`, `last_year`: the whole previous calendar month or year;
//! - `week`, `last_1h`, `last_3h`, `last_24h`: rolling back 7 days or so many hours;
//! - `month`, `last_3_months`, `year` and the `last_N_months` dates: rolling
//!   back so many calendar months (a year is 12);
//! - `custom`: `periodFrom` and/or `periodTo`.

use chrono::{Datelike, Duration, Months, TimeZone, Utc};
use serde::Deserialize;

use crate::error::{ApiError, ApiResult};
use crate::ids::Timestamp;

/// The `date` presets of the deal list, as the spec spells them (the
/// earlier spellings `last3_months`, `last6_months`, `last12_months` are
/// taken too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DatePreset {
    All,
    CurrentMonth,
    LastMonth,
    #[serde(rename = "last_3_months", alias = "last3_months")]
    Last3Months,
    #[serde(rename = "last_6_months", alias = "last6_months")]
    Last6Months,
    #[serde(rename = "last_12_months", alias = "last12_months")]
    Last12Months,
}

/// The `period` presets of the deal list and the session reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Today,
    Week,
    Month,
    Year,
    LastYear,
    LastMonth,
    #[serde(rename = "last_3_months")]
    Last3Months,
    #[serde(rename = "last_1h")]
    Last1h,
    #[serde(rename = "last_3h")]
    Last3h,
    #[serde(rename = "last_24h")]
    Last24h,
    Custom,
}

/// A time window `[from, to]` in milliseconds since the epoch, either bound open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    pub from: Option<i64>,
    pub to: Option<i64>,
}

fn ms(t: Timestamp) -> Option<i64> {
    Some(t.timestamp_millis())
}

fn day_start(t: Timestamp) -> Timestamp {
    Utc.with_ymd_and_hms(t.year(), t.month(), t.day(), 0, 0, 0)
        .single()
        .unwrap_or(t)
}

fn month_start(t: Timestamp) -> Timestamp {
    Utc.with_ymd_and_hms(t.year(), t.month(), 1, 0, 0, 0)
        .single()
        .unwrap_or(t)
}

fn year_start(t: Timestamp, years_back: i32) -> Timestamp {
    Utc.with_ymd_and_hms(t.year() - years_back, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or(t)
}

impl Window {
    /// No bound at all: every time matches, and so does a missing one.
    pub fn is_open(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }

    /// Whether a time (in milliseconds) falls in the window. A missing time is
    /// only in the open window.
    pub fn holds(&self, ms: Option<i64>) -> bool {
        match ms {
            Some(t) => self.from.is_none_or(|f| t >= f) && self.to.is_none_or(|e| t <= e),
            None => self.is_open(),
        }
    }

    /// Both windows at once: the later start and the earlier end.
    pub fn meet(self, other: Window) -> Window {
        Window {
            from: match (self.from, other.from) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
            to: match (self.to, other.to) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }

    /// From `from` up to now.
    fn since(from: Timestamp, now: Timestamp) -> Window {
        Window {
            from: ms(from),
            to: ms(now),
        }
    }

    /// `[start, end)`: the end's millisecond is outside.
    fn until(start: Timestamp, end: Timestamp) -> Window {
        Window {
            from: ms(start),
            to: Some(end.timestamp_millis() - 1),
        }
    }

    /// The whole calendar month before `now`'s.
    pub fn last_month(now: Timestamp) -> Window {
        let this = month_start(now);
        let last = this.checked_sub_months(Months::new(1)).unwrap_or(this);
        Window::until(last, this)
    }

    /// The window of a `date` preset at `now`.
    pub fn of_date(now: Timestamp, date: DatePreset) -> Window {
        let back = |months| Window::since(months_back(now, months), now);
        match date {
            DatePreset::All => Window::default(),
            DatePreset::CurrentMonth => Window::since(month_start(now), now),
            DatePreset::LastMonth => Window::last_month(now),
            DatePreset::Last3Months => back(3),
            DatePreset::Last6Months => back(6),
            DatePreset::Last12Months => back(12),
        }
    }

    /// The window of a `period` preset at `now`; `custom` takes `periodFrom`
    /// and `periodTo` (at least one).
    pub fn of_period(
        now: Timestamp,
        period: Period,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> ApiResult<Window> {
        let hours = |h| Window::since(now - Duration::hours(h), now);
        Ok(match period {
            Period::Today => Window::since(day_start(now), now),
            Period::Week => Window::since(now - Duration::days(7), now),
            Period::Month => Window::since(months_back(now, 1), now),
            Period::Year => Window::since(months_back(now, 12), now),
            Period::LastYear => Window::until(year_start(now, 1), year_start(now, 0)),
            Period::LastMonth => Window::last_month(now),
            Period::Last3Months => Window::since(months_back(now, 3), now),
            Period::Last1h => hours(1),
            Period::Last3h => hours(3),
            Period::Last24h => hours(24),
            Period::Custom => {
                if from.is_none() && to.is_none() {
                    return Err(ApiError::field(
                        "periodFrom",
                        "period=custom needs periodFrom or periodTo",
                    ));
                }
                Window::between("periodFrom", from, "periodTo", to)?
            }
        })
    }

    /// An explicit pair of bounds, either optional; `to` before `from` is a 400
    /// naming `to_field`.
    pub fn between(
        from_field: &str,
        from: Option<Timestamp>,
        to_field: &str,
        to: Option<Timestamp>,
    ) -> ApiResult<Window> {
        if let (Some(f), Some(t)) = (from, to)
            && t < f
        {
            return Err(ApiError::field(
                to_field,
                format!("must not be before {from_field}"),
            ));
        }
        Ok(Window {
            from: from.map(|t| t.timestamp_millis()),
            to: to.map(|t| t.timestamp_millis()),
        })
    }
}

fn months_back(now: Timestamp, months: u32) -> Timestamp {
    now.checked_sub_months(Months::new(months)).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        crate::ids::parse_ts(text).unwrap()
    }

    fn window(from: &str, to: &str) -> Window {
        Window {
            from: ms(at(from)),
            to: ms(at(to)),
        }
    }

    /// 1 March, just after midnight UTC: the day, month and year boundaries are near.
    const NEW_MONTH: &str = "2026-03-01T00:30:00Z";
    /// 1 January: last month and last year are both in the year before.
    const NEW_YEAR: &str = "2027-01-01T08:00:00Z";

    #[test]
    fn today_starts_at_midnight_utc() {
        let w = Window::of_period(at(NEW_MONTH), Period::Today, None, None).unwrap();
        assert_eq!(w, window("2026-03-01T00:00:00Z", NEW_MONTH));
    }

    #[test]
    fn last_month_is_the_whole_previous_calendar_month() {
        let w = Window::of_period(at(NEW_MONTH), Period::LastMonth, None, None).unwrap();
        assert_eq!(
            w,
            window("2026-02-01T00:00:00Z", "2026-02-28T23:59:59.999Z")
        );
        assert_eq!(Window::of_date(at(NEW_MONTH), DatePreset::LastMonth), w);
        // In January, last month is December of the year before.
        let w = Window::last_month(at(NEW_YEAR));
        assert_eq!(
            w,
            window("2026-12-01T00:00:00Z", "2026-12-31T23:59:59.999Z")
        );
    }

    #[test]
    fn last_year_is_the_whole_previous_calendar_year() {
        let w = Window::of_period(at(NEW_YEAR), Period::LastYear, None, None).unwrap();
        assert_eq!(
            w,
            window("2026-01-01T00:00:00Z", "2026-12-31T23:59:59.999Z")
        );
    }

    #[test]
    fn current_month_starts_on_the_first() {
        let w = Window::of_date(at(NEW_MONTH), DatePreset::CurrentMonth);
        assert_eq!(w, window("2026-03-01T00:00:00Z", NEW_MONTH));
    }

    #[test]
    fn rolling_presets_count_back_from_now() {
        let now = at(NEW_MONTH);
        let cases = [
            (Period::Week, "2026-02-22T00:30:00Z"),
            (Period::Month, "2026-02-01T00:30:00Z"),
            (Period::Last3Months, "2025-12-01T00:30:00Z"),
            (Period::Year, "2025-03-01T00:30:00Z"),
            (Period::Last1h, "2026-02-28T23:30:00Z"),
            (Period::Last3h, "2026-02-28T21:30:00Z"),
            (Period::Last24h, "2026-02-28T00:30:00Z"),
        ];
        for (period, from) in cases {
            let w = Window::of_period(now, period, None, None).unwrap();
            assert_eq!(w, window(from, NEW_MONTH), "{period:?}");
        }
        for (date, from) in [
            (DatePreset::Last3Months, "2025-12-01T00:30:00Z"),
            (DatePreset::Last6Months, "2025-09-01T00:30:00Z"),
            (DatePreset::Last12Months, "2025-03-01T00:30:00Z"),
        ] {
            assert_eq!(
                Window::of_date(now, date),
                window(from, NEW_MONTH),
                "{date:?}"
            );
        }
        assert!(Window::of_date(now, DatePreset::All).is_open());
    }

    #[test]
    fn a_month_back_from_the_31st_lands_on_the_last_day_of_a_short_month() {
        let w = Window::of_period(at("2026-03-31T12:00:00Z"), Period::Month, None, None).unwrap();
        assert_eq!(w.from, ms(at("2026-02-28T12:00:00Z")));
    }

    #[test]
    fn custom_needs_a_bound_and_keeps_the_order() {
        let now = at(NEW_MONTH);
        let err = Window::of_period(now, Period::Custom, None, None).unwrap_err();
        assert_eq!(err.details[0].field, "periodFrom");
        let w = Window::of_period(now, Period::Custom, Some(at("2026-01-01")), None).unwrap();
        assert_eq!((w.from, w.to), (ms(at("2026-01-01")), None));
        let err = Window::of_period(
            now,
            Period::Custom,
            Some(at("2026-02-01")),
            Some(at("2026-01-01")),
        )
        .unwrap_err();
        assert_eq!(err.details[0].field, "periodTo");
    }

    #[test]
    fn windows_meet_at_the_later_start_and_the_earlier_end() {
        let a = window("2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z");
        let b = window("2026-02-01T00:00:00Z", "2026-04-01T00:00:00Z");
        assert_eq!(
            a.meet(b),
            window("2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z")
        );
        assert_eq!(a.meet(Window::default()), a);
    }

    #[test]
    fn a_missing_time_is_only_in_the_open_window() {
        assert!(Window::default().holds(None));
        assert!(!window("2026-01-01", "2026-02-01").holds(None));
        let w = window("2026-01-01", "2026-02-01");
        assert!(w.holds(ms(at("2026-01-01"))));
        assert!(w.holds(ms(at("2026-02-01"))));
        assert!(!w.holds(ms(at("2026-02-01T00:00:00.001Z"))));
    }
}
