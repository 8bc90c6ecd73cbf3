//! The table definition (tests and `crm create-table`).

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
};

use super::{DynamoStore, invalid, sdk_error};
use crate::store::*;

/// What the table's stream carries: each item as written. The webhook
/// dispatcher turns new events into deliveries from it, and the messaging side
/// reads new welcome messages (infra/template.yaml declares the same).
pub const STREAM_VIEW: StreamViewType = StreamViewType::NewImage;

/// Whether a table made by [`DynamoStore::create_table`] has its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// As infra/template.yaml declares it ([`STREAM_VIEW`]): `crm create-table`.
    Declared,
    /// None: the test suite's tables. DynamoDB Local keeps every stream
    /// record of every table in memory and slows down with each (three runs
    /// of the events suite on one instance took 59, 198 and 300 s with
    /// streams; 59, 46 and 44 s without), and no test reads a stream.
    Off,
}

impl DynamoStore {
    /// Creates the table, its secondary `indexes` and its stream (tests,
    /// `crm create-table`, with `keys::GSIS`). The same definition stands in
    /// `infra/template.yaml`; a test keeps the two equal.
    pub async fn create_table(&self, indexes: &[Index], stream: Stream) -> Result<(), StoreError> {
        let mut attributes = vec![PK, SK];
        let mut gsis = Vec::new();
        for index in indexes {
            attributes.extend([index.pk, index.sk]);
            gsis.push(
                GlobalSecondaryIndex::builder()
                    .index_name(index.name.unwrap_or_default())
                    .key_schema(key_element(index.pk, KeyType::Hash))
                    .key_schema(key_element(index.sk, KeyType::Range))
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::All)
                            .build(),
                    )
                    .build()
                    .map_err(invalid)?,
            );
        }
        let mut req = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .key_schema(key_element(PK, KeyType::Hash))
            .key_schema(key_element(SK, KeyType::Range))
            .set_global_secondary_indexes(Some(gsis));
        if stream == Stream::Declared {
            req = req.stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(STREAM_VIEW)
                    .build()
                    .map_err(invalid)?,
            );
        }
        for name in attributes {
            req = req.attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(name)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .map_err(invalid)?,
            );
        }
        match req.send().await {
            Ok(_) => Ok(()),
            Err(e) if e.code() == Some("ResourceInUseException") => Ok(()),
            Err(e) => Err(sdk_error(e)),
        }
    }
}

fn key_element(name: &str, key_type: KeyType) -> KeySchemaElement {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .expect("attribute name and key type are set")
}
