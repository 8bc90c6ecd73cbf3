//! What a record of the log holds: one request's effects, each item's engine
//! key and its bytes after the request, or a mark that it was deleted.

const DELETED: u32 = u32::MAX;

/// The effects of one commit, in the order they were made. `off` collects
/// nothing (a store in memory, a migration).
pub(crate) struct Batch(Option<Vec<u8>>);

impl Batch {
    pub fn on() -> Self {
        Self(Some(Vec::new()))
    }

    pub fn off() -> Self {
        Self(None)
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        if let Some(out) = &mut self.0 {
            push(out, key);
            push(out, value);
        }
    }

    pub fn delete(&mut self, key: &[u8]) {
        if let Some(out) = &mut self.0 {
            push(out, key);
            out.extend_from_slice(&DELETED.to_le_bytes());
        }
    }

    /// Bytes of its record's payload.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.payload().len()
    }

    pub(super) fn payload(&self) -> &[u8] {
        self.0.as_deref().unwrap_or_default()
    }
}

fn push(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// One effect of a record: an item's engine key and its bytes, or `None`
/// when it was deleted.
pub(in crate::store::embedded) type Effect<'a> = (&'a [u8], Option<&'a [u8]>);

/// The effects of a record's payload; `None` if it does not parse (it passed
/// its checksum, so only a bug would make it so).
pub(in crate::store::embedded) fn effects(mut payload: &[u8]) -> Option<Vec<Effect<'_>>> {
    fn take<'a>(input: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = input.split_at_checked(n)?;
        *input = rest;
        Some(head)
    }
    fn length(input: &mut &[u8]) -> Option<u32> {
        Some(u32::from_le_bytes(take(input, 4)?.try_into().ok()?))
    }
    let mut out = Vec::new();
    while !payload.is_empty() {
        let key_len = length(&mut payload)?;
        let key = take(&mut payload, key_len as usize)?;
        let value = match length(&mut payload)? {
            DELETED => None,
            n => Some(take(&mut payload, n as usize)?),
        };
        out.push((key, value));
    }
    Some(out)
}
