//! The SAM template's API functions, written from what each group declares:
//! its `deployed(...)` (description, DynamoDB actions, queue, files,
//! timeout) and its routes. `infra/template.yaml` holds them between two
//! marker lines, each with its log group and its two alarms; the rest of the
//! template (the table, the queues, the bucket, the workers) is written by
//! hand. A new group is in the template once
//! `UPDATE_INFRA=1 cargo test -p api-tests --test api cdk::` has run.

use std::fmt::Write;

use shared::auth::Need;
use shared::deploy::{Files, Function, Queue};
use shared::http::Group;

pub const BEGIN: &str = "  # ---- The API's functions, generated from each group's `deployed(...)` and\n  \
     # routes (tests/tests/cdk/sam.rs): run `UPDATE_INFRA=1 cargo test -p api-tests\n  \
     # --test api cdk::` after changing them, and do not edit below by hand.\n";
pub const END: &str = "  # ---- End of the generated functions.\n";

/// A logical id's stem: `custom-fields` -> `CustomFields`.
pub fn logical(name: &str) -> String {
    name.split(['-', '_', '.'])
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or(String::new(), |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}

/// A route's event name, from its handler (`tags::list_v1` -> `ListV1`):
/// unique in the function, as handler names are in the group.
fn event_name(operation_id: &str) -> String {
    let handler = operation_id.rsplit(['.', ':']).next().unwrap_or(operation_id);
    logical(handler)
}

/// A YAML scalar, quoted (JSON strings are YAML strings).
fn quoted(text: &str) -> String {
    api_tests::serde_json::to_string(text).expect("a string")
}

/// The template text of a group's function, its log group and its alarms.
pub fn function(group: &Group) -> String {
    let f: &Function = group
        .function()
        .unwrap_or_else(|| panic!("group {} declares no Lambda function", group.name));
    let id = logical(f.binary);
    let behind_a_token = group.routes().iter().any(|r| r.need != Some(Need::Public));
    let mut out = String::new();
    let o = &mut out;
    writeln!(o, "  {id}Function:").unwrap();
    writeln!(o, "    Type: AWS::Serverless::Function").unwrap();
    writeln!(o, "    Metadata:\n      BuildMethod: rust-cargolambda\n      BuildProperties:").unwrap();
    writeln!(o, "        Binary: {}", f.binary).unwrap();
    writeln!(o, "    Properties:").unwrap();
    writeln!(o, "      LoggingConfig: {{ LogGroup: !Ref {id}LogGroup }}").unwrap();
    writeln!(o, "      CodeUri: ../functions/{}", f.binary).unwrap();
    writeln!(o, "      Description: {}", quoted(f.description)).unwrap();
    if let Some(seconds) = f.timeout {
        writeln!(o, "      Timeout: {seconds}").unwrap();
    }
    let mut environment = Vec::new();
    let queue = f.sends.map(|queue| match queue {
        Queue::Jobs => ("CRM_JOB_QUEUE_URL", "JobQueue"),
        Queue::Deliveries => ("CRM_WEBHOOK_QUEUE_URL", "WebhookQueue"),
    });
    if let Some((variable, queue)) = queue {
        environment.push((variable, format!("!Ref {queue}")));
    }
    if f.checkout {
        environment.push(("CRM_CHECKOUT_BASE_URL", "!Ref CheckoutBaseUrl".into()));
    }
    if f.files.is_some() {
        environment.push(("CRM_FILES_BUCKET", "!Ref FilesBucket".into()));
    }
    if !environment.is_empty() {
        writeln!(o, "      Environment:\n        Variables:").unwrap();
        for (variable, value) in environment {
            writeln!(o, "          {variable}: {value}").unwrap();
        }
    }
    let mut statements = String::new();
    let s = &mut statements;
    if !f.actions.is_empty() {
        writeln!(s, "            - Effect: Allow").unwrap();
        writeln!(s, "              Action: [{}]", f.actions.join(", ")).unwrap();
        if f.index {
            writeln!(s, "              Resource:\n                - !GetAtt Table.Arn").unwrap();
            writeln!(s, "                - !Sub \"${{Table.Arn}}/index/gsi1\"").unwrap();
        } else {
            writeln!(s, "              Resource: !GetAtt Table.Arn").unwrap();
        }
    }
    if behind_a_token {
        s.push_str(
            "            # The rate limiter (shared/src/ratelimit.rs) leases its buckets: only\n\
             \x20           # in the workspaces' rate-limit partitions.\n\
             \x20           - Effect: Allow\n\
             \x20             Action: [dynamodb:BatchGetItem, dynamodb:PutItem]\n\
             \x20             Resource: !GetAtt Table.Arn\n\
             \x20             Condition: { \"ForAllValues:StringLike\": { \"dynamodb:LeadingKeys\": [\"W#*#RATE\"] } }\n",
        );
    }
    match f.files {
        None => {}
        Some(Files::Presign) => s.push_str(
            "            # Presigns uploads and downloads (a URL carries its signer's\n\
             \x20           # rights), and sees whether an upload came.\n\
             \x20           - Effect: Allow\n\
             \x20             Action: [s3:GetObject, s3:PutObject]\n\
             \x20             Resource: !Sub \"${FilesBucket.Arn}/bulk/*\"\n\
             \x20           - Effect: Allow\n\
             \x20             Action: s3:ListBucket\n\
             \x20             Resource: !GetAtt FilesBucket.Arn\n\
             \x20             Condition: { StringLike: { \"s3:prefix\": [\"bulk/*\"] } }\n",
        ),
        Some(Files::Work) => panic!(
            "{}: only the job worker works on the files (its block is written by hand)",
            f.binary
        ),
    }
    if queue.is_some() || !statements.is_empty() {
        writeln!(o, "      Policies:").unwrap();
        if let Some((_, queue)) = queue {
            writeln!(o, "        - SQSSendMessagePolicy:\n            QueueName: !GetAtt {queue}.QueueName").unwrap();
        }
        if !statements.is_empty() {
            writeln!(o, "        - Statement:").unwrap();
            o.push_str(&statements);
        }
    }
    writeln!(o, "      Events:").unwrap();
    let mut names = std::collections::BTreeSet::new();
    for route in group.routes() {
        let name = event_name(&route.operation_id);
        // Two handlers of one name in two modules of a group would be one
        // YAML key twice: a template that loads, with a route lost.
        assert!(
            names.insert(name.clone()),
            "{}: two routes' events would both be named {name} ({})",
            f.binary,
            route.operation_id
        );
        writeln!(
            o,
            "        {name}: {{ Type: HttpApi, Properties: {{ ApiId: !Ref HttpApi, Method: {}, Path: {} }} }}",
            route.method,
            quoted(route.path)
        )
        .unwrap();
    }
    let binary = f.binary;
    writeln!(o, "  {id}LogGroup: {{ Type: AWS::Logs::LogGroup, Properties: {{ RetentionInDays: !Ref LogRetentionDays }} }}").unwrap();
    for (alarm, metric, what) in [
        ("Errors", "Errors", "a function error (a panic or a timeout)"),
        ("Throttles", "Throttles", "a throttled invocation"),
    ] {
        writeln!(
            o,
            "  {id}{alarm}Alarm: {{ Type: AWS::CloudWatch::Alarm, Properties: {{ AlarmDescription: \"{binary}: {what} in 5 minutes\", \
             Namespace: AWS/Lambda, MetricName: {metric}, Dimensions: [{{ Name: FunctionName, Value: !Ref {id}Function }}], \
             Statistic: Sum, Period: 300, EvaluationPeriods: 1, Threshold: 1, ComparisonOperator: GreaterThanOrEqualToThreshold, \
             TreatMissingData: notBreaching, AlarmActions: [!Ref AlarmTopic] }} }}"
        )
        .unwrap();
    }
    out
}

/// The generated section: every group's function, in `crm::groups()` order.
pub fn functions(groups: &[Group]) -> String {
    let blocks: Vec<String> = groups.iter().map(function).collect();
    format!("{BEGIN}\n{}{END}", blocks.join("\n"))
}
