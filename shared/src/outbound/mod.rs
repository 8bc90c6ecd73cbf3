//! Requests this service makes to addresses its users give it: webhook
//! deliveries. The parts that know no resource: the settings, the Standard
//! Webhooks signature ([`sign`]), which addresses may be reached
//! ([`target`]), and one POST that reads at most 4 KB of the answer
//! ([`post`]).

pub mod post;
pub mod sign;
pub mod target;

use std::time::Duration;

/// How deliveries are made, from the environment (defaults in brackets):
///
/// | Variable | Meaning |
/// |---|---|
/// | `CRM_WEBHOOK_SCHEDULE` | the waits between attempts, `5s,5m,30m,2h,5h,10h,14h,20h,24h` (ten attempts over about three days) |
/// | `CRM_WEBHOOK_TIMEOUT` | how long an attempt may take, connection included (`15s`) |
/// | `CRM_WEBHOOK_CONCURRENCY` | deliveries to one endpoint at a time (`4`) |
/// | `CRM_WEBHOOK_DISABLE_AFTER` | an endpoint failing every attempt this long is disabled (`5d`) |
/// | `CRM_WEBHOOK_ALLOW_PRIVATE` | `1`: `http` and private addresses too (local development only; `crm serve --webhooks-to-private`) |
#[derive(Debug, Clone)]
pub struct Settings {
    pub schedule: Vec<Duration>,
    pub timeout: Duration,
    pub concurrency: u32,
    pub disable_after: Duration,
    pub allow_private: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            schedule: parse_durations(DEFAULT_SCHEDULE).unwrap_or_default(),
            timeout: Duration::from_secs(15),
            concurrency: 4,
            disable_after: Duration::from_secs(5 * 24 * 3600),
            allow_private: false,
        }
    }
}

/// The waits after the first attempt, after the second...: about three days.
pub const DEFAULT_SCHEDULE: &str = "5s,5m,30m,2h,5h,10h,14h,20h,24h";

impl Settings {
    /// From the environment; a value that does not parse keeps its default
    /// (and says so in the log).
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut settings = Self::default();
        let durations = |name: &str| {
            let raw = var(name)?;
            let parsed = parse_durations(&raw);
            if parsed.is_none() {
                tracing::warn!(name, value = %raw, "not a list of durations (`5s,5m,2h`); the default holds");
            }
            parsed
        };
        if let Some(schedule) = durations("CRM_WEBHOOK_SCHEDULE") {
            settings.schedule = schedule;
        }
        if let Some([timeout]) = durations("CRM_WEBHOOK_TIMEOUT").as_deref() {
            settings.timeout = *timeout;
        }
        if let Some([after]) = durations("CRM_WEBHOOK_DISABLE_AFTER").as_deref() {
            settings.disable_after = *after;
        }
        if let Some(n) = var("CRM_WEBHOOK_CONCURRENCY").and_then(|n| n.parse().ok()) {
            settings.concurrency = n;
        }
        settings.concurrency = settings.concurrency.clamp(1, 64);
        settings.allow_private = var("CRM_WEBHOOK_ALLOW_PRIVATE").is_some_and(|v| v == "1");
        settings
    }

    /// The wait before attempt `next` (2 is the first retry), with ±10%
    /// jitter so that the retries of one outage do not all come at once;
    /// `None`: no attempts left.
    pub fn wait_before(&self, next: u32) -> Option<Duration> {
        let base = *self.schedule.get(next.checked_sub(2)? as usize)?;
        let jitter = rand::random_range(0.9..1.1);
        Some(base.mul_f64(jitter))
    }

    /// Attempts in all: the first and one per wait.
    pub fn attempts(&self) -> u32 {
        self.schedule.len() as u32 + 1
    }
}

/// `5s,5m,30m,2h,1d,250ms`: a comma-separated list of durations.
pub fn parse_durations(raw: &str) -> Option<Vec<Duration>> {
    raw.split(',')
        .map(|part| parse_duration(part.trim()))
        .collect()
}

fn parse_duration(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok()?;
    let ms = match unit {
        "ms" => n,
        "s" => n.checked_mul(1000)?,
        "m" => n.checked_mul(60_000)?,
        "h" => n.checked_mul(3_600_000)?,
        "d" => n.checked_mul(86_400_000)?,
        _ => return None,
    };
    Some(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_schedule_spans_about_three_days() {
        let s = Settings::default();
        assert_eq!(s.attempts(), 10);
        let total: Duration = s.schedule.iter().sum();
        assert!((70..=80).contains(&(total.as_secs() / 3600)), "{total:?}");
        assert!(s.wait_before(1).is_none() && s.wait_before(11).is_none());
        let second = s.wait_before(2).unwrap().as_millis();
        assert!((4500..=5500).contains(&second), "{second}");
    }

    #[test]
    fn durations_parse_in_every_unit_and_refuse_the_rest() {
        assert_eq!(
            parse_durations("250ms,5s,2m,1h,1d"),
            Some(vec![
                Duration::from_millis(250),
                Duration::from_secs(5),
                Duration::from_secs(120),
                Duration::from_secs(3600),
                Duration::from_secs(86_400)
            ])
        );
        for bad in ["", "5", "s", "5x", "5s,,1m", "-5s"] {
            assert_eq!(parse_durations(bad), None, "{bad}");
        }
    }
}
