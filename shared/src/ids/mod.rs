//! Identifiers and timestamps.
//!
//! Numeric ids are time-ordered 53-bit integers, safe for JavaScript clients
//! (`Number.MAX_SAFE_INTEGER` is 2^53 - 1) and made without a counter round trip:
//! 41 bits of milliseconds since 2024-01-01 (good until 2093) and 12 bits that
//! start at a random value per process and count up. Two processes can still meet
//! in the same millisecond with the same low bits (1 in 4096), so every create is
//! a conditional put (`attribute_not_exists`) and retries with a fresh id.
//!
//! String ids (API tokens, audit entries, sessions, snapshots) are ULIDs: also
//! time-ordered, so "newest first" is a reverse key-range read.

use std::sync::Mutex;

use chrono::{DateTime, SecondsFormat, Utc};

/// 2024-01-01T00:00:00Z in Unix milliseconds.
const EPOCH_MS: i64 = 1_704_067_200_000;
const SEQ_BITS: u32 = 12;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
/// The largest id a JavaScript client can hold exactly.
pub const MAX_SAFE_ID: u64 = (1 << 53) - 1;
/// Width of a numeric id written into a sort key, so that key order is id order.
pub const ID_WIDTH: usize = 16;

struct Generator {
    last_ms: u64,
    seq: u64,
}

static GENERATOR: Mutex<Generator> = Mutex::new(Generator { last_ms: 0, seq: 0 });

/// A new numeric id, greater than every id this process made before.
pub fn new_id() -> u64 {
    let now = (Utc::now().timestamp_millis() - EPOCH_MS).max(0) as u64;
    let mut g = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    if now > g.last_ms {
        g.last_ms = now;
        g.seq = rand::random::<u64>() & SEQ_MASK & !0xFF; // leave room to count up
    } else {
        g.seq += 1;
        if g.seq > SEQ_MASK {
            // 4096 ids in one millisecond: borrow the next millisecond.
            g.last_ms += 1;
            g.seq = 0;
        }
    }
    ((g.last_ms << SEQ_BITS) | g.seq) & MAX_SAFE_ID
}

static ULIDS: Mutex<ulid::Generator> = Mutex::new(ulid::Generator::new());

/// The range of ids made in `[from, to]`: ids are time-ordered, so a creation
/// window is an id range.
pub fn id_range(from: &Timestamp, to: &Timestamp) -> (u64, u64) {
    let ms = |t: &Timestamp| (t.timestamp_millis() - EPOCH_MS).max(0) as u64;
    let low = (ms(from) << SEQ_BITS).min(MAX_SAFE_ID);
    let high = ((ms(to) << SEQ_BITS) | SEQ_MASK).min(MAX_SAFE_ID);
    (low, high)
}

/// The time an id was made (to the millisecond).
pub fn id_time(id: u64) -> Timestamp {
    DateTime::from_timestamp_millis((id >> SEQ_BITS) as i64 + EPOCH_MS).unwrap_or_default()
}

/// A new string id (ULID, 26 characters), greater than every one this process
/// made before, so that entries written in one millisecond still sort in order.
pub fn new_ulid() -> String {
    // Every request takes one: the lock is held to generate, not to write out.
    let made = ULIDS.lock().unwrap_or_else(|e| e.into_inner()).generate();
    match made {
        Ok(id) => id.to_string(),
        // The random part overflowed within one millisecond: fall back to a fresh one.
        Err(_) => ulid::Ulid::new().to_string(),
    }
}

/// Whether `text` can be a ULID; anything else is an unknown id without a read.
pub fn is_ulid(text: &str) -> bool {
    ulid::Ulid::from_string(text).is_ok()
}

/// A numeric id as it stands in a sort key: zero-padded so that text order is number order.
pub fn padded(id: u64) -> String {
    // By hand: most keys hold one, and `format!`'s padding was most of it.
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(id);
    let mut text = String::with_capacity(ID_WIDTH.max(digits.len()));
    text.extend(std::iter::repeat_n(
        '0',
        ID_WIDTH.saturating_sub(digits.len()),
    ));
    text.push_str(digits);
    text
}

/// Declares a numeric id type: the number itself in the API, the table and
/// the document (serde and the schema are transparent), a type of its own
/// in the code so that two entities' ids cannot be swapped. Attributes
/// (docs, `#[schemars(inline)]`) pass through.
macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident) => {
        $crate::ids::id_type!($(#[$meta])* $name as "id");
    };
    ($(#[$meta:meta])* $name:ident as $param:literal) => {
        #[derive(
            Debug,
            Clone,
            Copy,
            PartialEq,
            Eq,
            Hash,
            PartialOrd,
            Ord,
            serde::Serialize,
            serde::Deserialize,
            schemars::JsonSchema,
        )]
        #[serde(transparent)]
        $(#[$meta])*
        pub struct $name(pub u64);

        /// From a number the outside world gives (a path, a CLI flag, a test).
        impl From<u64> for $name {
            fn from(id: u64) -> Self {
                $name(id)
            }
        }

        impl From<$name> for u64 {
            fn from(id: $name) -> u64 {
                id.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }

        impl $crate::ids::IdType for $name {
            const PATH_PARAM: &'static str = $param;
        }
    };
}

// Invoked where a record's keys are (`crate::keys`), beside its builders.
pub(crate) use id_type;

/// A numeric id type, as [`id_type!`] declares it. Its path parameter
/// (`{id}`, or the name given with `as`) is read by `InPath<ItsType>`
/// (`crate::http::PathParam` is implemented for every one), so a new id
/// type is one declaration, beside its record's key builders in `crate::keys`
/// (a record's id is the part of its key that names it), and nothing in the
/// HTTP layer. The workspace's is here: every layer takes it.
pub trait IdType: From<u64> + Copy {
    const PATH_PARAM: &'static str;
}

id_type!(
    /// A workspace's id: the tenant that every record belongs to.
    // A type of its own so that a workspace id can never be passed where an
    // entity id is expected (or the reverse): the key builders take it
    // first, and no key of a tenant can be built without it.
    WorkspaceId
);

pub(crate) const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The SHA-256 of some bytes, as 64 hex digits (token hashes, idempotency
/// keys and bodies, message contents).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(64);
    for byte in sha2::Sha256::digest(bytes) {
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 0xF)]));
    }
    text
}

/// `n` random base62 characters (5.95 bits each) from the OS-seeded generator.
pub fn random_base62(n: usize) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..n)
        .map(|_| BASE62[rng.random_range(0..BASE62.len())] as char)
        .collect()
}

/// An unguessable code for a link or a handoff: 24 base62 characters, 142 bits.
pub fn unguessable() -> String {
    random_base62(24)
}

/// Whether a text could be an [`unguessable`] code (checked before any read).
pub fn is_unguessable(text: &str) -> bool {
    text.len() == 24 && text.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Seconds since the epoch, for DynamoDB's time to live.
pub fn epoch_seconds(t: &Timestamp) -> i64 {
    t.timestamp()
}

/// Timestamps are RFC 3339 UTC with milliseconds: `2026-11-22T01:48:19.123Z`.
pub type Timestamp = DateTime<Utc>;

mod clock;
pub use clock::{Clock, ManualClock, SystemClock, clock, now, with_clock};

/// `2026-11-22T01:48:19.123Z`: RFC 3339 in UTC, milliseconds truncated, as
/// chrono writes it.
pub fn format_ts(ts: &Timestamp) -> String {
    with_ts_text(ts, str::to_owned)
}

/// `f` of the text of `ts` ([`format_ts`]), without allocating it: written
/// by hand for years 0 to 9999 (chrono's general formatter was a tenth of a
/// GET by id's work), by chrono otherwise.
pub fn with_ts_text<R>(ts: &Timestamp, f: impl FnOnce(&str) -> R) -> R {
    let by_hand = ts_ascii(ts);
    match by_hand.as_ref().map(|text| std::str::from_utf8(text)) {
        Some(Ok(text)) => f(text),
        _ => f(&ts.to_rfc3339_opts(SecondsFormat::Millis, true)),
    }
}

fn ts_ascii(ts: &Timestamp) -> Option<[u8; 24]> {
    use chrono::{Datelike, Timelike};
    // The UTC date and time read once, as chrono keeps them: each accessor
    // of the `DateTime` works out its offset again, and its seconds since
    // the epoch its date again.
    let utc = ts.naive_utc();
    let (date, time) = (utc.date(), utc.time());
    let (year, nanos) = (date.year(), time.nanosecond());
    // A leap second's nanoseconds run past one second: chrono writes `:60`.
    let (Ok(year @ 0..=9999), 0..=999_999_999) = (u32::try_from(year), nanos) else {
        return None;
    };
    let in_day = time.num_seconds_from_midnight();
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let fields = [
        (0, 4, year),
        (5, 2, date.month()),
        (8, 2, date.day()),
        (11, 2, in_day / 3600),
        (14, 2, in_day / 60 % 60),
        (17, 2, in_day % 60),
        (20, 3, nanos / 1_000_000),
    ];
    for (at, width, mut value) in fields {
        for digit in text[at..at + width].iter_mut().rev() {
            *digit = b'0' + (value % 10) as u8;
            value /= 10;
        }
    }
    Some(text)
}

/// The text [`format_ts`] writes (`2026-11-22T01:48:19.123Z`), read without
/// chrono's general RFC 3339 parser: every stored timestamp has this shape
/// and every read of a record reads two or more.
fn parse_canonical(text: &str) -> Option<Timestamp> {
    let b: &[u8; 24] = text.as_bytes().try_into().ok()?;
    let shape = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ];
    if shape.iter().any(|&(at, c)| b[at] != c) {
        return None;
    }
    let number = |from: usize, to: usize| {
        b[from..to].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let date =
        chrono::NaiveDate::from_ymd_opt(number(0, 4)? as i32, number(5, 7)?, number(8, 10)?)?;
    // A leap second (`:60`) is not taken here: chrono's parser reads it.
    let time = chrono::NaiveTime::from_hms_milli_opt(
        number(11, 13)?,
        number(14, 16)?,
        number(17, 19)?,
        number(20, 23)?,
    )?;
    Some(date.and_time(time).and_utc())
}

/// Parses an RFC 3339 date-time, or a plain date (`2026-11-22`, taken as midnight UTC).
pub fn parse_ts(text: &str) -> Option<Timestamp> {
    if let Some(ts) = parse_canonical(text) {
        return Some(ts);
    }
    if let Ok(ts) = DateTime::parse_from_rfc3339(text) {
        return Some(ts.with_timezone(&Utc));
    }
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|dt| dt.and_utc())
}

/// What a client may write for a time, in a query or a body: an RFC 3339
/// date-time or a plain date (midnight UTC). Parsed at the boundary, so a bad
/// value is a 400 naming its parameter before any domain code runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClientTime(pub Timestamp);

/// The one message for a time a client wrote wrong.
pub const BAD_TIME: &str = "must be an RFC 3339 date-time or a date";

impl<'de> serde::Deserialize<'de> for ClientTime {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        // Kept as stored and shown: to the millisecond.
        parse_ts(&text)
            .map(|t| ClientTime(DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)))
            .ok_or_else(|| serde::de::Error::custom(BAD_TIME))
    }
}

impl schemars::JsonSchema for ClientTime {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ClientTime".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // One type and format, which generators map to their date-time
        // type; the date alone is said in words.
        schemars::json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "An RFC 3339 date-time (a date alone is taken as its midnight UTC).",
        })
    }
}

/// The schema of an id written by [`id_string`]: a string of digits.
pub struct IdString;

impl schemars::JsonSchema for IdString {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IdString".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^[0-9]{1,20}$" })
    }
}

/// Serde helper: a numeric id that the API shows as a string (the spec's `id`
/// is a string in every body) and reads from either.
pub mod id_string {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer, I: Copy + Into<u64>>(id: &I, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&(*id).into().to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>, I: From<u64>>(d: D) -> Result<I, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Number(u64),
            Text(String),
        }
        match Either::deserialize(d)? {
            Either::Number(n) => Ok(n.into()),
            Either::Text(t) => t
                .parse::<u64>()
                .map(I::from)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// Serde helpers: timestamps always leave as RFC 3339 with milliseconds.
pub mod ts_format {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ts: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        with_ts_text(ts, |text| s.serialize_str(text))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        Text::deserialize(d).map(|Text(ts)| ts)
    }

    /// A timestamp read from its text where it is (no copy of the string).
    struct Text(Timestamp);

    impl<'de> Deserialize<'de> for Text {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_str(TextVisitor)
        }
    }

    struct TextVisitor;

    impl serde::de::Visitor<'_> for TextVisitor {
        type Value = Text;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string")
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Text, E> {
            parse_ts(text)
                .map(Text)
                .ok_or_else(|| E::custom("must be an RFC 3339 date-time"))
        }
    }

    pub mod option {
        use super::*;

        pub fn serialize<S: Serializer>(ts: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
            match ts {
                Some(ts) => with_ts_text(ts, |text| s.serialize_str(text)),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
            Option::<Text>::deserialize(d).map(|text| text.map(|Text(ts)| ts))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_increasing_and_safe_for_javascript() {
        let ids: Vec<u64> = (0..10_000).map(|_| new_id()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids.iter().all(|&id| id <= MAX_SAFE_ID && id > 0));
        assert!(padded(ids[0]).len() == ID_WIDTH);
    }

    #[test]
    fn an_id_falls_in_the_range_of_its_time() {
        let before = now();
        let id = new_id();
        let after = now();
        let (low, high) = id_range(&before, &after);
        assert!(low <= id && id <= high);
        assert!(id_time(id) >= before && id_time(id) <= after);
        let (_, earlier) = id_range(&before, &(before - chrono::Duration::milliseconds(1)));
        assert!(earlier < id);
    }

    #[test]
    fn ulids_are_increasing() {
        let ids: Vec<String> = (0..10_000).map(|_| new_ulid()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(ids.iter().all(|id| id.len() == 26));
    }

    #[test]
    fn padded_ids_sort_like_numbers() {
        assert!(padded(99) < padded(100));
        assert!(padded(MAX_SAFE_ID).len() == ID_WIDTH);
    }

    #[test]
    fn timestamps_are_written_as_chrono_writes_them() {
        // Years 0 to 9999 by hand, the rest by chrono; both agree with chrono.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let edges = [
            0,
            1,
            -1,
            253_402_300_799_999,
            253_402_300_800_000,
            -62_167_219_200_000,
        ];
        let random =
            (0..20_000).map(|_| (next() % 600_000_000_000_000) as i64 - 300_000_000_000_000);
        for ms in edges.into_iter().chain(random) {
            let Some(ts) = DateTime::from_timestamp_millis(ms) else {
                continue;
            };
            let ts = ts + chrono::Duration::nanoseconds((ms.unsigned_abs() % 1_000_000) as i64);
            assert_eq!(
                format_ts(&ts),
                ts.to_rfc3339_opts(SecondsFormat::Millis, true),
                "{ms}"
            );
        }
    }

    #[test]
    fn timestamps_are_written_and_read_as_chrono_does() {
        use chrono::SecondsFormat;
        // Every day of years 0 to 9999 is too many: a stride that lands on
        // each month, leap days and century years among them.
        let (first, last) = (-62_167_219_200_000_i64, 253_402_300_799_999_i64);
        let mut millis = first;
        while millis <= last {
            let ts = DateTime::from_timestamp_millis(millis).unwrap();
            let chrono_text = ts.to_rfc3339_opts(SecondsFormat::Millis, true);
            assert_eq!(format_ts(&ts), chrono_text);
            assert_eq!(parse_canonical(&chrono_text), Some(ts), "{chrono_text}");
            millis += 86_399_999 * 7 + 12_345;
        }
        for text in [
            "2024-02-29T23:59:59.999Z",
            "2000-02-29T00:00:00.000Z",
            "1970-01-01T00:00:00.000Z",
        ] {
            let ts = parse_ts(text).unwrap();
            assert_eq!(format_ts(&ts), text);
            assert_eq!(
                Some(ts),
                DateTime::parse_from_rfc3339(text).ok().map(|t| t.to_utc())
            );
        }
        // Not the canonical shape: chrono's parser decides.
        for text in [
            "2023-02-29T00:00:00.000Z",
            "2026-13-01T00:00:00.000Z",
            "2026-11-22T24:00:00.000Z",
            "2026-11-22t01:48:19.123z",
            "2026-11-22T01:48:19.1234Z",
            "+026-11-22T01:48:19.123Z",
        ] {
            assert_eq!(parse_canonical(text), None, "{text}");
            assert_eq!(
                parse_ts(text),
                DateTime::parse_from_rfc3339(text).ok().map(|t| t.to_utc()),
                "{text}"
            );
        }
        // A leap second is chrono's to read and to write.
        let leap = parse_ts("2016-12-31T23:59:60.500Z").unwrap();
        assert_eq!(format_ts(&leap), "2016-12-31T23:59:60.500Z");
        #[derive(serde::Deserialize)]
        struct At {
            #[serde(with = "ts_format")]
            at: Timestamp,
            #[serde(with = "ts_format::option", default)]
            until: Option<Timestamp>,
        }
        let at: At = serde_json::from_value(
            serde_json::json!({"at": "2026-11-22T01:48:19.123Z", "until": null}),
        )
        .unwrap();
        assert_eq!(
            (format_ts(&at.at), at.until),
            ("2026-11-22T01:48:19.123Z".to_owned(), None)
        );
        let wrong = serde_json::from_value::<At>(serde_json::json!({"at": 5}))
            .err()
            .unwrap();
        assert!(wrong.to_string().contains("expected a string"), "{wrong}");
        let wrong = serde_json::from_value::<At>(serde_json::json!({"at": "soon"}))
            .err()
            .unwrap();
        assert!(
            wrong.to_string().contains("must be an RFC 3339 date-time"),
            "{wrong}"
        );
    }

    #[test]
    fn timestamps_have_milliseconds_and_z() {
        let ts = parse_ts("2026-11-22T01:48:19.123456+00:00").unwrap();
        assert_eq!(format_ts(&ts), "2026-11-22T01:48:19.123Z");
        assert_eq!(
            format_ts(&parse_ts("2026-11-22").unwrap()),
            "2026-11-22T00:00:00.000Z"
        );
        assert!(parse_ts("yesterday").is_none());
        let now = now();
        assert_eq!(now.timestamp_subsec_nanos() % 1_000_000, 0);
    }
}
