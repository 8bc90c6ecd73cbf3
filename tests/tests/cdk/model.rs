//! The stack as both templates must agree on it, read from CDK's synthesized
//! CloudFormation and from the SAM template before its transform.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use api_tests::serde_json::{self, Value, json};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The SAM template as CloudFormation JSON (`!Ref X` as `{"Ref": X}`, ...).
pub fn sam() -> Value {
    let text = std::fs::read_to_string(root().join("infra/template.yaml")).unwrap();
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    to_json(&yaml)
}

pub fn to_json(yaml: &serde_yaml::Value) -> Value {
    use serde_yaml::Value as Y;
    match yaml {
        Y::Null => Value::Null,
        Y::Bool(b) => json!(b),
        Y::Number(n) => serde_json::to_value(n).unwrap(),
        Y::String(s) => json!(s),
        Y::Sequence(items) => Value::Array(items.iter().map(to_json).collect()),
        Y::Mapping(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.as_str().unwrap().to_owned(), to_json(v)))
                .collect(),
        ),
        Y::Tagged(tagged) => {
            let inner = to_json(&tagged.value);
            match tagged.tag.to_string().trim_start_matches('!') {
                "Ref" => json!({ "Ref": inner }),
                "GetAtt" => {
                    let text = inner.as_str().unwrap();
                    let (resource, attribute) = text.split_once('.').unwrap();
                    json!({ "Fn::GetAtt": [resource, attribute] })
                }
                other => json!({ format!("Fn::{other}"): inner }),
            }
        }
    }
}

/// CDK's synthesized template, when `npm run synth` has run.
pub fn cdk() -> Option<Value> {
    let path = root().join("infra/cdk/cdk.out/CrmApi.template.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(serde_json::from_str(&text).unwrap()),
        Err(_) if std::env::var_os("CRM_REQUIRE_CDK").is_some() => {
            panic!(
                "{} is missing: run `npm run synth` in infra/cdk",
                path.display()
            )
        }
        Err(_) => {
            eprintln!("skipped: no CDK synthesis (scripts/test.sh runs it)");
            None
        }
    }
}

/// One function, as both templates must agree on it.
#[derive(Debug, PartialEq, Default)]
pub struct Function {
    pub description: String,
    pub memory: u64,
    pub timeout: u64,
    pub runtime: String,
    pub architecture: String,
    pub tracing: bool,
    pub environment: BTreeMap<String, Value>,
    pub dynamodb_actions: BTreeSet<String>,
    pub reads_index: bool,
    /// The queues it sends to (their logical ids).
    pub sends_to: BTreeSet<String>,
    /// Its S3 actions (`<action> if <condition>`).
    pub s3_actions: BTreeSet<String>,
    pub log_retention: Value,
    /// What invokes it besides routes: a queue or the table's stream, with
    /// the settings of the mapping ([`event_source`]).
    pub event_source: Option<Value>,
    pub routes: BTreeSet<String>,
    pub alarms: BTreeSet<String>,
}

/// The stack, as both templates must agree on it.
#[derive(Debug, PartialEq, Default)]
pub struct Stack {
    pub parameters: BTreeSet<String>,
    pub table: Value,
    pub table_policies: (Value, Value),
    /// Every SQS queue, by logical id.
    pub queues: BTreeMap<String, Value>,
    /// Every S3 bucket and bucket policy, by logical id: their properties.
    pub buckets: BTreeMap<String, Value>,
    pub api_throttling: (Value, Value),
    pub other_alarms: BTreeSet<String>,
    pub functions: BTreeMap<String, Function>,
}

impl Stack {
    /// What both templates write alike: parameters (but CDK's bootstrap
    /// version), the table and the queues.
    fn common(t: &Value) -> Stack {
        let mut stack = Stack {
            parameters: t["Parameters"]
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| *k != "BootstrapVersion")
                .cloned()
                .collect(),
            queues: of_type(t, "AWS::SQS::Queue")
                .map(|(id, _)| (id.clone(), queue_of(t, id)))
                .collect(),
            buckets: of_type(t, "AWS::S3::Bucket")
                .chain(of_type(t, "AWS::S3::BucketPolicy"))
                .map(|(id, r)| (id.clone(), r["Properties"].clone()))
                .collect(),
            ..Stack::default()
        };
        (stack.table, stack.table_policies) = table_of(t);
        stack
    }
}

pub fn resources(template: &Value) -> &serde_json::Map<String, Value> {
    template["Resources"].as_object().unwrap()
}

pub fn of_type<'a>(
    template: &'a Value,
    kind: &'a str,
) -> impl Iterator<Item = (&'a String, &'a Value)> {
    resources(template)
        .iter()
        .filter(move |(_, r)| r["Type"] == kind)
}

pub fn throttling(settings: &Value) -> (Value, Value) {
    (
        settings["ThrottlingRateLimit"].clone(),
        settings["ThrottlingBurstLimit"].clone(),
    )
}

/// The Cargo binary of a function resource (SAM's build metadata, which the CDK app copies).
pub fn binary_of(function: &Value) -> String {
    function["Metadata"]["BuildProperties"]["Binary"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub fn table_of(template: &Value) -> (Value, (Value, Value)) {
    let table = &resources(template)["Table"];
    (
        table["Properties"].clone(),
        (
            table["DeletionPolicy"].clone(),
            table["UpdateReplacePolicy"].clone(),
        ),
    )
}

pub fn queue_of(template: &Value, name: &str) -> Value {
    let mut properties = resources(template)[name]["Properties"].clone();
    // The same target, named the same way in both.
    if let Some(redrive) = properties.get_mut("RedrivePolicy") {
        redrive["deadLetterTargetArn"] = json!(target(&redrive["deadLetterTargetArn"]));
    }
    properties
}

/// The logical id an `!GetAtt X.Attribute` (or `!Ref X`) names.
pub fn target(value: &Value) -> String {
    value["Fn::GetAtt"][0]
        .as_str()
        .or_else(|| value["Ref"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// An event source mapping's settings as both templates write them (SAM's
/// event properties and CloudFormation's mapping use the same names), its
/// source and failure destination by logical id.
pub fn event_source(source: &Value, settings: &Value) -> Value {
    let mut normal = json!({ "source": target(source) });
    for name in [
        "StartingPosition",
        "BatchSize",
        "BisectBatchOnFunctionError",
        "MaximumRetryAttempts",
        "FunctionResponseTypes",
    ] {
        if let Some(value) = settings.get(name) {
            normal[name] = value.clone();
        }
    }
    if let Some(destination) = settings["DestinationConfig"]["OnFailure"].get("Destination") {
        normal["OnFailure"] = json!(target(destination));
    }
    if let Some(filters) = settings["FilterCriteria"]["Filters"].as_array() {
        let patterns: Vec<Value> = filters
            .iter()
            .map(|f| serde_json::from_str(f["Pattern"].as_str().unwrap()).unwrap())
            .collect();
        normal["Filters"] = json!(patterns);
    }
    normal
}

/// "Errors" of a function's alarm, or the metric and dimension of another.
pub fn alarm_key(alarm: &Value) -> (String, String) {
    let p = &alarm["Properties"];
    let target = &p["Dimensions"][0]["Value"];
    let target = target["Ref"]
        .as_str()
        .or_else(|| target["Fn::GetAtt"][0].as_str())
        .unwrap_or_default()
        .to_owned();
    let metric = format!(
        "{}/{} {} >= {}",
        p["Namespace"].as_str().unwrap(),
        p["MetricName"].as_str().unwrap(),
        p["Statistic"].as_str().unwrap(),
        p["Threshold"]
    );
    (target, metric)
}

pub fn dynamodb_of(statements: &[Value], function: &mut Function) {
    for statement in statements {
        let actions: Vec<&str> = match &statement["Action"] {
            Value::String(a) => vec![a.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        // A condition is part of what is allowed: `<action> if <condition>`.
        let condition = match &statement["Condition"] {
            Value::Null => String::new(),
            condition => format!(" if {condition}"),
        };
        for action in actions {
            if action.starts_with("dynamodb:") {
                function
                    .dynamodb_actions
                    .insert(format!("{action}{condition}"));
                function.reads_index |= statement["Resource"].to_string().contains("/index/gsi1");
            }
            if action.starts_with("s3:") {
                function.s3_actions.insert(format!("{action}{condition}"));
            }
            if action == "sqs:SendMessage" {
                function.sends_to.insert(target(&statement["Resource"]));
            }
        }
    }
}

pub fn from_sam(t: &Value) -> Stack {
    let globals = &t["Globals"]["Function"];
    let mut stack = Stack::common(t);
    let api = &resources(t)["HttpApi"]["Properties"]["DefaultRouteSettings"];
    stack.api_throttling = throttling(api);
    let mut binaries = BTreeMap::new();
    for (id, r) in of_type(t, "AWS::Serverless::Function") {
        let p = &r["Properties"];
        let binary = binary_of(r);
        binaries.insert(id.clone(), binary.clone());
        let mut f = Function {
            description: p["Description"].as_str().unwrap().to_owned(),
            memory: p
                .get("MemorySize")
                .unwrap_or(&globals["MemorySize"])
                .as_u64()
                .unwrap(),
            timeout: p
                .get("Timeout")
                .unwrap_or(&globals["Timeout"])
                .as_u64()
                .unwrap(),
            runtime: globals["Runtime"].as_str().unwrap().to_owned(),
            architecture: globals["Architectures"][0].as_str().unwrap().to_owned(),
            tracing: globals["Tracing"] == "Active",
            ..Function::default()
        };
        for vars in [
            &globals["Environment"]["Variables"],
            &p["Environment"]["Variables"],
        ] {
            for (k, v) in vars.as_object().into_iter().flatten() {
                f.environment.insert(k.clone(), v.clone());
            }
        }
        for policy in p["Policies"].as_array().into_iter().flatten() {
            if let Some(queue) = policy.get("SQSSendMessagePolicy") {
                f.sends_to.insert(target(&queue["QueueName"]));
            }
            dynamodb_of(policy["Statement"].as_array().map_or(&[], |v| v), &mut f);
        }
        let group = p["LoggingConfig"]["LogGroup"]["Ref"]
            .as_str()
            .unwrap_or_default();
        f.log_retention = resources(t)
            .get(group)
            .map_or(Value::Null, |g| g["Properties"]["RetentionInDays"].clone());
        for event in p["Events"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(_, e)| e)
        {
            let e = &event["Properties"];
            match event["Type"].as_str() {
                Some("HttpApi") => {
                    f.routes.insert(format!(
                        "{} {}",
                        e["Method"].as_str().unwrap(),
                        e["Path"].as_str().unwrap()
                    ));
                }
                Some("SQS") => f.event_source = Some(event_source(&e["Queue"], e)),
                Some("DynamoDB") => f.event_source = Some(event_source(&e["Stream"], e)),
                _ => {}
            }
        }
        stack.functions.insert(binary, f);
    }
    alarms(t, &binaries, &mut stack);
    stack
}

pub fn from_cdk(t: &Value) -> Stack {
    let mut stack = Stack::common(t);
    let (_, stage) = of_type(t, "AWS::ApiGatewayV2::Stage").next().unwrap();
    let throttle = &stage["Properties"]["DefaultRouteSettings"];
    stack.api_throttling = throttling(throttle);
    let mut binaries = BTreeMap::new();
    let mut roles = BTreeMap::new();
    for (id, r) in of_type(t, "AWS::Lambda::Function") {
        let p = &r["Properties"];
        let binary = binary_of(r);
        binaries.insert(id.clone(), binary.clone());
        roles.insert(
            p["Role"]["Fn::GetAtt"][0].as_str().unwrap().to_owned(),
            binary.clone(),
        );
        let group = p["LoggingConfig"]["LogGroup"]["Ref"]
            .as_str()
            .unwrap_or_default();
        let f = Function {
            description: p["Description"].as_str().unwrap().to_owned(),
            memory: p["MemorySize"].as_u64().unwrap(),
            timeout: p["Timeout"].as_u64().unwrap(),
            runtime: p["Runtime"].as_str().unwrap().to_owned(),
            architecture: p["Architectures"][0].as_str().unwrap().to_owned(),
            tracing: p["TracingConfig"]["Mode"] == "Active",
            environment: p["Environment"]["Variables"]
                .as_object()
                .unwrap()
                .clone()
                .into_iter()
                .collect(),
            log_retention: resources(t)
                .get(group)
                .map_or(Value::Null, |g| g["Properties"]["RetentionInDays"].clone()),
            ..Function::default()
        };
        stack.functions.insert(binary, f);
    }
    for (_, policy) in of_type(t, "AWS::IAM::Policy") {
        let role = policy["Properties"]["Roles"][0]["Ref"].as_str().unwrap();
        let f = stack.functions.get_mut(&roles[role]).unwrap();
        dynamodb_of(
            policy["Properties"]["PolicyDocument"]["Statement"]
                .as_array()
                .unwrap(),
            f,
        );
    }
    let integrations: BTreeMap<&String, &str> = of_type(t, "AWS::ApiGatewayV2::Integration")
        .map(|(id, r)| {
            (
                id,
                r["Properties"]["IntegrationUri"]["Fn::GetAtt"][0]
                    .as_str()
                    .unwrap(),
            )
        })
        .collect();
    for (_, route) in of_type(t, "AWS::ApiGatewayV2::Route") {
        let p = &route["Properties"];
        let integration = p["Target"]["Fn::Join"][1][1]["Ref"]
            .as_str()
            .unwrap()
            .to_owned();
        let binary = &binaries[integrations[&integration]];
        stack
            .functions
            .get_mut(binary)
            .unwrap()
            .routes
            .insert(p["RouteKey"].as_str().unwrap().to_owned());
    }
    for (_, mapping) in of_type(t, "AWS::Lambda::EventSourceMapping") {
        let p = &mapping["Properties"];
        let binary = &binaries[p["FunctionName"]["Ref"].as_str().unwrap()];
        stack.functions.get_mut(binary).unwrap().event_source =
            Some(event_source(&p["EventSourceArn"], p));
    }
    alarms(t, &binaries, &mut stack);
    stack
}

pub fn alarms(t: &Value, binaries: &BTreeMap<String, String>, stack: &mut Stack) {
    for (_, alarm) in of_type(t, "AWS::CloudWatch::Alarm") {
        let (target, metric) = alarm_key(alarm);
        match binaries.get(&target) {
            Some(binary) => {
                stack
                    .functions
                    .get_mut(binary)
                    .unwrap()
                    .alarms
                    .insert(metric);
            }
            None => {
                let target = if target.starts_with("HttpApi") {
                    "HttpApi".to_owned()
                } else {
                    target
                };
                stack.other_alarms.insert(format!("{target}: {metric}"));
            }
        }
        assert!(
            !alarm["Properties"]["AlarmActions"]
                .as_array()
                .unwrap()
                .is_empty(),
            "an alarm that tells no one"
        );
    }
}
