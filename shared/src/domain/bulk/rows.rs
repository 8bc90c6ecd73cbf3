//! Rows of an import file into batch operations, a block at a time.
//!
//! A block is read from the job's checkpoint, always the first byte of a row.
//! A row is taken only when its end is in the block (or the block ends the
//! file): a row cut by the block's end is read whole next time.
//!
//! CSV cells are text; each is typed by the field it maps to, as the
//! object's JSON Schema (the one the API documents) declares it: numbers,
//! booleans, lists (`;` between items) and objects (JSON text). An empty
//! cell is an absent field. JSON lines are taken as typed.

use serde_json::{Map, Value, json};

use super::Format;

/// One row read: its number (1 is the first row of data), its text, and its
/// operation or why it has none.
pub struct Row {
    pub number: u64,
    pub text: String,
    pub operation: Result<Value, String>,
}

/// What a block gave: the rows, and how many of its bytes they (and any
/// header or blank line) took.
pub struct Parsed {
    pub rows: Vec<Row>,
    pub consumed: usize,
}

/// How a cell is typed, by the field's schema.
#[derive(Debug, Clone)]
pub enum Kind {
    Text,
    Number,
    Integer,
    Bool,
    List(Box<Kind>),
    Json,
}

/// The kinds of the top-level fields of a data type's JSON Schema.
pub struct Kinds(Map<String, Value>, Map<String, Value>);

impl Kinds {
    pub fn of(schema: Value) -> Self {
        let properties = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let defs = schema["$defs"].as_object().cloned().unwrap_or_default();
        Self(properties, defs)
    }

    fn kind(&self, field: &str) -> Kind {
        self.0
            .get(field)
            .map_or(Kind::Text, |schema| self.kind_of(schema, 0))
    }

    fn kind_of(&self, schema: &Value, depth: usize) -> Kind {
        if depth > 8 {
            return Kind::Text;
        }
        if let Some(name) = schema["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
        {
            return self
                .1
                .get(name)
                .map_or(Kind::Text, |s| self.kind_of(s, depth + 1));
        }
        for alternatives in ["anyOf", "oneOf"] {
            if let Some(first) = schema[alternatives]
                .as_array()
                .and_then(|all| all.iter().find(|s| s["type"] != "null"))
            {
                return self.kind_of(first, depth + 1);
            }
        }
        let kind = match &schema["type"] {
            Value::String(t) => t.as_str(),
            Value::Array(types) => types
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or("string"),
            _ => "string",
        };
        match kind {
            "number" => Kind::Number,
            "integer" => Kind::Integer,
            "boolean" => Kind::Bool,
            "array" => Kind::List(Box::new(self.kind_of(&schema["items"], depth + 1))),
            "object" => Kind::Json,
            _ => Kind::Text,
        }
    }
}

/// A cell as `kind`; left as text when it is not one (validation then names
/// the field).
fn typed(cell: &str, kind: &Kind) -> Value {
    let text = || Value::String(cell.to_owned());
    match kind {
        Kind::Text => text(),
        Kind::Number => cell
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(text, Value::Number),
        Kind::Integer => cell
            .trim()
            .parse::<i64>()
            .map_or_else(|_| text(), Value::from),
        Kind::Bool => match cell.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Value::Bool(true),
            "false" | "no" | "0" => Value::Bool(false),
            _ => text(),
        },
        Kind::List(item) => Value::Array(
            cell.split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| typed(s, item))
                .collect(),
        ),
        Kind::Json => serde_json::from_str(cell).unwrap_or_else(|_| text()),
    }
}

/// How rows become operations: `{ op, by?, id?, data }`.
pub struct Shape<'a> {
    pub op: &'a str,
    pub by: Option<Value>,
    pub mapping: &'a super::Mapping,
    pub kinds: &'a Kinds,
}

impl Shape<'_> {
    fn operation(&self, fields: Vec<(String, Value)>) -> Result<Value, String> {
        let mut data = Map::new();
        let mut id = None;
        for (name, value) in fields {
            let target = self.mapping.get(&name).cloned().unwrap_or(name);
            if target.is_empty() {
                continue;
            }
            if target == "id" {
                id = Some(value);
                continue;
            }
            let mut at = &mut data;
            let mut parts = target.split('.').peekable();
            while let Some(part) = parts.next() {
                if parts.peek().is_none() {
                    at.insert(part.to_owned(), value);
                    break;
                }
                let next = at
                    .entry(part.to_owned())
                    .or_insert_with(|| Value::Object(Map::new()));
                match next {
                    Value::Object(map) => at = map,
                    _ => return Err(format!("{target}: {part} is a field and an object")),
                }
            }
        }
        let mut op = json!({ "op": self.op, "data": data });
        if let Some(by) = &self.by {
            op["by"] = by.clone();
        }
        if let Some(id) = id {
            op["id"] = id;
        }
        Ok(op)
    }

    fn csv_row(&self, columns: &[String], record: &csv::StringRecord) -> Result<Value, String> {
        if record.len() > columns.len() {
            return Err(format!(
                "the row has {} cells, the header {} columns",
                record.len(),
                columns.len()
            ));
        }
        let fields = columns
            .iter()
            .zip(record.iter())
            .filter(|(_, cell)| !cell.trim().is_empty())
            .map(|(column, cell)| {
                let target = self.mapping.get(column).unwrap_or(column);
                let top = target.split('.').next().unwrap_or_default();
                let kind = if target.contains('.') {
                    Kind::Text
                } else {
                    self.kinds.kind(top)
                };
                (column.clone(), typed(cell.trim(), &kind))
            })
            .collect();
        self.operation(fields)
    }

    fn json_row(&self, line: &str) -> Result<Value, String> {
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => self.operation(map.into_iter().collect()),
            Ok(_) => Err("the line is not a JSON object".to_owned()),
            Err(e) => Err(format!("the line is not JSON: {e}")),
        }
    }
}

/// Up to `most` rows of `block` (from a row's first byte; `at_end`: the block
/// ends the file). `columns` is the CSV header, read from the file's first
/// block when empty. `first` numbers the first row.
pub fn parse(
    format: Format,
    block: &[u8],
    at_end: bool,
    columns: &mut Vec<String>,
    shape: &Shape<'_>,
    first: u64,
    most: usize,
) -> Result<Parsed, String> {
    match format {
        Format::Csv => parse_csv(block, at_end, columns, shape, first, most),
        Format::Jsonl => Ok(parse_jsonl(block, at_end, shape, first, most)),
    }
}

fn parse_csv(
    block: &[u8],
    at_end: bool,
    columns: &mut Vec<String>,
    shape: &Shape<'_>,
    first: u64,
    most: usize,
) -> Result<Parsed, String> {
    let mut consumed = 0;
    if columns.is_empty() {
        // The file's first block: a byte-order mark, then the header.
        if block.starts_with(b"\xEF\xBB\xBF") {
            consumed = 3;
        }
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(&block[consumed..]);
    let mut rows = Vec::new();
    let mut record = csv::StringRecord::new();
    let mut start = 0usize;
    while rows.len() < most {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                // Not UTF-8, or a quote left open at the file's end.
                let end = reader.position().byte() as usize;
                if !at_end && consumed + end >= block.len() {
                    break;
                }
                if columns.is_empty() {
                    return Err(format!("the header row cannot be read: {e}"));
                }
                rows.push(Row {
                    number: first + rows.len() as u64,
                    text: String::from_utf8_lossy(&block[consumed + start..consumed + end])
                        .trim_end()
                        .to_owned(),
                    operation: Err(format!("the row cannot be read: {e}")),
                });
                start = end;
                continue;
            }
        }
        let end = reader.position().byte() as usize;
        // A row that reaches the block's end may go on past it.
        if !at_end && consumed + end >= block.len() {
            break;
        }
        let text = String::from_utf8_lossy(&block[consumed + start..consumed + end])
            .trim_end()
            .to_owned();
        start = end;
        if columns.is_empty() {
            *columns = record.iter().map(|c| c.trim().to_owned()).collect();
            if columns.iter().all(String::is_empty) {
                return Err("the header row names no column".to_owned());
            }
            continue;
        }
        if record.iter().all(|c| c.trim().is_empty()) {
            continue; // a blank line
        }
        rows.push(Row {
            number: first + rows.len() as u64,
            text,
            operation: shape.csv_row(columns, &record),
        });
    }
    Ok(Parsed {
        rows,
        consumed: consumed + start,
    })
}

fn parse_jsonl(block: &[u8], at_end: bool, shape: &Shape<'_>, first: u64, most: usize) -> Parsed {
    let mut rows = Vec::new();
    let mut start = 0;
    while rows.len() < most && start < block.len() {
        let end = match block[start..].iter().position(|b| *b == b'\n') {
            Some(at) => start + at + 1,
            None if at_end => block.len(),
            None => break,
        };
        let line = String::from_utf8_lossy(&block[start..end]);
        let line = line.trim();
        start = end;
        if line.is_empty() {
            continue;
        }
        rows.push(Row {
            number: first + rows.len() as u64,
            text: line.to_owned(),
            operation: shape.json_row(line),
        });
    }
    Parsed {
        rows,
        consumed: start,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape<'a>(mapping: &'a super::super::Mapping, kinds: &'a Kinds) -> Shape<'a> {
        Shape {
            op: "create",
            by: None,
            mapping,
            kinds,
        }
    }

    #[test]
    fn a_row_cut_by_the_block_is_left_for_the_next() {
        let kinds = Kinds::of(json!({"properties": {"value": {"type": ["number", "null"]}}}));
        let mapping = Default::default();
        let file = b"name,value\nAna,12.5\n\"Bo\nB\",3\nCy,4\n";
        let mut columns = Vec::new();
        // Cut in the middle of the quoted row.
        let parsed = parse(
            Format::Csv,
            &file[..25],
            false,
            &mut columns,
            &shape(&mapping, &kinds),
            1,
            100,
        )
        .unwrap();
        assert_eq!(columns, ["name", "value"]);
        assert_eq!(parsed.rows.len(), 1);
        assert_eq!(
            parsed.rows[0].operation.as_ref().unwrap()["data"],
            json!({"name": "Ana", "value": 12.5})
        );
        let rest = &file[parsed.consumed..];
        let parsed = parse(
            Format::Csv,
            rest,
            true,
            &mut columns,
            &shape(&mapping, &kinds),
            2,
            100,
        )
        .unwrap();
        assert_eq!(parsed.rows.len(), 2);
        assert_eq!(
            parsed.rows[0].operation.as_ref().unwrap()["data"]["name"],
            "Bo\nB"
        );
        assert_eq!(parsed.consumed, rest.len());
    }

    #[test]
    fn cells_take_their_fields_types_and_the_mapping() {
        let kinds = Kinds::of(json!({"properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "active": {"anyOf": [{"type": "null"}, {"type": "boolean"}]}
        }}));
        let mapping = [
            ("Plan".to_owned(), "customFields.plan".to_owned()),
            ("skip".to_owned(), String::new()),
        ]
        .into_iter()
        .collect();
        let mut columns = Vec::new();
        let file = b"\xEF\xBB\xBFtags,active,Plan,skip,id\nvip; new,yes,gold,x,7\n";
        let parsed = parse(
            Format::Csv,
            file,
            true,
            &mut columns,
            &shape(&mapping, &kinds),
            1,
            100,
        )
        .unwrap();
        assert_eq!(
            parsed.rows[0].operation.as_ref().unwrap(),
            &json!({"op": "create", "id": "7", "data": {"tags": ["vip", "new"], "active": true, "customFields": {"plan": "gold"}}})
        );
    }

    #[test]
    fn json_lines_wait_for_their_newline() {
        let kinds = Kinds::of(json!({}));
        let mapping = Default::default();
        let mut columns = Vec::new();
        let file = b"{\"name\":\"a\"}\n\n[1]\n{\"name\":";
        let parsed = parse(
            Format::Jsonl,
            file,
            false,
            &mut columns,
            &shape(&mapping, &kinds),
            1,
            100,
        )
        .unwrap();
        assert_eq!(parsed.rows.len(), 2);
        assert!(parsed.rows[1].operation.is_err());
        assert_eq!(parsed.consumed, 18);
    }
}
