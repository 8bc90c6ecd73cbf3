// The CRM API stack: the same resources as infra/template.yaml (SAM), for teams
// that deploy with CDK. Routes come from docs/openapi.json, which is generated
// from the Routers, so no route can be served without a route here;
// tests/tests/cdk.rs compares the synthesized template with the SAM one.

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as cdk from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { RustFunction } from 'cargo-lambda-cdk';
import { Construct } from 'constructs';
import { FUNCTIONS } from './functions';

const ROOT = path.join(__dirname, '..', '..', '..');

/** (METHOD, path) of every operation, by group (the operation's tag). */
function routesByGroup(): Map<string, [string, string][]> {
  const document = JSON.parse(readFileSync(path.join(ROOT, 'docs', 'openapi.json'), 'utf8'));
  const routes = new Map<string, [string, string][]>();
  for (const [route, item] of Object.entries<Record<string, { tags: string[] }>>(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const group = operation.tags[0];
      routes.set(group, [...(routes.get(group) ?? []), [method.toUpperCase(), route]]);
    }
  }
  return routes;
}

export class CrmApiStack extends cdk.Stack {
  constructor(scope: Construct, id: string, props?: cdk.StackProps) {
    super(scope, id, props);
    // Lets the table's DeletionPolicy follow a parameter (as in the SAM template).
    this.addTransform('AWS::LanguageExtensions');

    const logLevel = new cdk.CfnParameter(this, 'LogLevel', {
      type: 'String', default: 'info', description: 'RUST_LOG of every function.',
    });
    const rateLimit = new cdk.CfnParameter(this, 'ThrottlingRateLimit', {
      type: 'Number', default: 200, description: 'Steady requests per second of the API before it answers 429.',
    });
    const burstLimit = new cdk.CfnParameter(this, 'ThrottlingBurstLimit', {
      type: 'Number', default: 400, description: 'Burst of requests of the API before it answers 429.',
    });
    const checkoutBaseUrl = new cdk.CfnParameter(this, 'CheckoutBaseUrl', {
      type: 'String', default: 'https://checkout.example.com/c',
      description: 'Where checkout links point (the code is appended).',
    });
    const tableDeletionPolicy = new cdk.CfnParameter(this, 'TableDeletionPolicy', {
      type: 'String', default: 'Retain', allowedValues: ['Retain', 'Delete'],
      description: 'What happens to the table (and its data) when the stack is deleted.',
    });
    const logRetentionDays = new cdk.CfnParameter(this, 'LogRetentionDays', {
      type: 'Number', default: 30, description: 'Days the functions\' logs are kept.',
    });
    const shardedFrom = new cdk.CfnParameter(this, 'ShardedFrom', {
      type: 'String', default: '',
      description: 'CRM_SHARDED_FROM, an RFC 3339 time from which each workspace\'s audit entries, '
        + 'event log, contacts, deals, tags, products and webhook deliveries spread over 8 '
        + 'partitions. Empty at first; set it once, at least an hour after the deploy that '
        + 'carries it, to a time after that deploy, and never change it.',
    });
    const writeBudget = new cdk.CfnParameter(this, 'WriteBudget', {
      type: 'String', default: '12000/1s', allowedPattern: '^[0-9]+/[0-9]+s$',
      description: 'CRM_WRITE_BUDGET, the items each workspace\'s writes may put in the table per '
        + 'window, API and background jobs together (a transaction counts at least 10). '
        + 'Past it an API write is a 429; an import waits for it.',
    });

    const table = new dynamodb.CfnTable(this, 'Table', {
      billingMode: 'PAY_PER_REQUEST',
      attributeDefinitions: ['pk', 'sk', 'gsi1pk', 'gsi1sk'].map((name) => ({ attributeName: name, attributeType: 'S' })),
      keySchema: [{ attributeName: 'pk', keyType: 'HASH' }, { attributeName: 'sk', keyType: 'RANGE' }],
      globalSecondaryIndexes: [{
        indexName: 'gsi1',
        keySchema: [{ attributeName: 'gsi1pk', keyType: 'HASH' }, { attributeName: 'gsi1sk', keyType: 'RANGE' }],
        projection: { projectionType: 'ALL' },
      }],
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      sseSpecification: { sseEnabled: true },
      timeToLiveSpecification: { attributeName: 'ttl', enabled: true },
      streamSpecification: { streamViewType: 'NEW_IMAGE' },
    });
    table.cfnOptions.deletionPolicy = cdk.CfnDeletionPolicy.RETAIN;
    table.addOverride('DeletionPolicy', tableDeletionPolicy.valueAsString);
    table.addOverride('UpdateReplacePolicy', tableDeletionPolicy.valueAsString);
    table.overrideLogicalId('Table');

    const deadLetters = new sqs.CfnQueue(this, 'JobDeadLetterQueue', {
      messageRetentionPeriod: 1209600, sqsManagedSseEnabled: true,
    });
    deadLetters.overrideLogicalId('JobDeadLetterQueue');
    const jobs = new sqs.CfnQueue(this, 'JobQueue', {
      visibilityTimeout: 1800,
      sqsManagedSseEnabled: true,
      redrivePolicy: { deadLetterTargetArn: deadLetters.attrArn, maxReceiveCount: 5 },
    });
    jobs.overrideLogicalId('JobQueue');
    const jobQueue = sqs.Queue.fromQueueAttributes(this, 'Jobs', { queueArn: jobs.attrArn, queueUrl: jobs.ref });

    // Webhooks: the stream feeds the dispatcher, which queues deliveries for the sender.
    const webhookDeadLetters = new sqs.CfnQueue(this, 'WebhookDeadLetterQueue', {
      messageRetentionPeriod: 1209600, sqsManagedSseEnabled: true,
    });
    webhookDeadLetters.overrideLogicalId('WebhookDeadLetterQueue');
    const webhooks = new sqs.CfnQueue(this, 'WebhookQueue', {
      visibilityTimeout: 180,
      sqsManagedSseEnabled: true,
      redrivePolicy: { deadLetterTargetArn: webhookDeadLetters.attrArn, maxReceiveCount: 5 },
    });
    webhooks.overrideLogicalId('WebhookQueue');
    const deliveryQueue = sqs.Queue.fromQueueAttributes(this, 'Deliveries', {
      queueArn: webhooks.attrArn, queueUrl: webhooks.ref,
    });
    const webhookDeadLetterQueue = sqs.Queue.fromQueueAttributes(this, 'WebhookDeadLetters', {
      queueArn: webhookDeadLetters.attrArn, queueUrl: webhookDeadLetters.ref,
    });
    const queues = { jobs: { cfn: jobs, queue: jobQueue }, deliveries: { cfn: webhooks, queue: deliveryQueue } };

    // Bulk import and export files: encrypted, never public, gone after 7 days.
    const files = new s3.CfnBucket(this, 'FilesBucket', {
      bucketEncryption: {
        serverSideEncryptionConfiguration: [{ serverSideEncryptionByDefault: { sseAlgorithm: 'AES256' } }],
      },
      publicAccessBlockConfiguration: {
        blockPublicAcls: true, blockPublicPolicy: true, ignorePublicAcls: true, restrictPublicBuckets: true,
      },
      ownershipControls: { rules: [{ objectOwnership: 'BucketOwnerEnforced' }] },
      lifecycleConfiguration: {
        rules: [{
          id: 'ExpireBulkFiles', status: 'Enabled', prefix: 'bulk/', expirationInDays: 7,
          abortIncompleteMultipartUpload: { daysAfterInitiation: 1 },
        }],
      },
    });
    files.overrideLogicalId('FilesBucket');
    const filesPolicy = new s3.CfnBucketPolicy(this, 'FilesBucketPolicy', {
      bucket: files.ref,
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{
          Effect: 'Deny', Principal: '*', Action: 's3:*',
          Resource: [files.attrArn, cdk.Fn.sub('${FilesBucket.Arn}/*')],
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }],
      },
    });
    filesPolicy.overrideLogicalId('FilesBucketPolicy');

    const api = new apigw.HttpApi(this, 'HttpApi', { createDefaultStage: false });
    new apigw.HttpStage(this, 'DefaultStage', {
      httpApi: api, stageName: '$default', autoDeploy: true,
      throttle: { rateLimit: rateLimit.valueAsNumber, burstLimit: burstLimit.valueAsNumber },
    });

    const alarms = new sns.Topic(this, 'AlarmTopic');
    const notify = new actions.SnsAction(alarms);
    const alarm = (id: string, metric: cloudwatch.IMetric, description: string) =>
      new cloudwatch.Alarm(this, id, {
        metric, threshold: 1, evaluationPeriods: 1, alarmDescription: description,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }).addAlarmAction(notify);

    const routes = routesByGroup();
    for (const spec of FUNCTIONS) {
      const name = spec.binary.split('-').map((w) => w[0].toUpperCase() + w.slice(1)).join('');
      const logGroup = new logs.CfnLogGroup(this, `${name}LogGroup`, { retentionInDays: logRetentionDays.valueAsNumber });
      const environment: Record<string, string> = {
        CRM_TABLE: table.ref, RUST_LOG: logLevel.valueAsString, CRM_SHARDED_FROM: shardedFrom.valueAsString,
        CRM_WRITE_BUDGET: writeBudget.valueAsString,
      };
      if (spec.sends === 'jobs') environment.CRM_JOB_QUEUE_URL = jobs.ref;
      if (spec.sends === 'deliveries') environment.CRM_WEBHOOK_QUEUE_URL = webhooks.ref;
      if (spec.checkout) environment.CRM_CHECKOUT_BASE_URL = checkoutBaseUrl.valueAsString;
      if (spec.files) environment.CRM_FILES_BUCKET = files.ref;
      const fn = new RustFunction(this, `${name}Function`, {
        // The function's own crate, not the workspace root: cargo-lambda-cdk runs
        // `cargo lambda build --bin <binary>` in this manifest's folder, and at
        // the root cargo sees only the default member (cli). tests/tests/build.rs.
        manifestPath: path.join(ROOT, 'functions', spec.binary, 'Cargo.toml'),
        binaryName: spec.binary,
        // CRM_CDK_PROFILE=dev: the bundling check of .ci/run, built in debug.
        bundling: { architecture: lambda.Architecture.ARM_64, profile: process.env.CRM_CDK_PROFILE ?? 'release' },
        description: spec.description,
        memorySize: 256,
        timeout: cdk.Duration.seconds(spec.timeout ?? 10),
        tracing: lambda.Tracing.ACTIVE,
        loggingFormat: lambda.LoggingFormat.JSON,
        logGroup: logs.LogGroup.fromLogGroupName(this, `${name}Logs`, logGroup.ref),
        environment,
      });
      (fn.node.defaultChild as lambda.CfnFunction).addMetadata('BuildProperties', { Binary: spec.binary });
      if (spec.actions.length > 0) {
        const resources = [table.attrArn, ...(spec.index ? [`${table.attrArn}/index/gsi1`] : [])];
        fn.addToRolePolicy(new iam.PolicyStatement({ actions: spec.actions, resources }));
      }
      if (spec.actions.length > 0 && routes.has(spec.binary)) {
        // The rate limiter (shared/src/ratelimit.rs) leases its buckets: only
        // in the workspaces' rate-limit partitions.
        fn.addToRolePolicy(new iam.PolicyStatement({
          actions: ['dynamodb:BatchGetItem', 'dynamodb:PutItem'],
          resources: [table.attrArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['W#*#RATE'] } },
        }));
      }
      if (spec.sends) queues[spec.sends].queue.grantSendMessages(fn);
      if (spec.files) {
        const work = spec.files === 'work' ? ['s3:DeleteObject', 's3:AbortMultipartUpload'] : [];
        fn.addToRolePolicy(new iam.PolicyStatement({
          actions: ['s3:GetObject', 's3:PutObject', ...work], resources: [`${files.attrArn}/bulk/*`],
        }));
        // Without it, S3 answers 403 instead of 404 for a file not there.
        fn.addToRolePolicy(new iam.PolicyStatement({
          actions: ['s3:ListBucket'], resources: [files.attrArn],
          conditions: { StringLike: { 's3:prefix': ['bulk/*'] } },
        }));
      }
      if (spec.trigger === 'jobs') {
        fn.addEventSource(new SqsEventSource(jobQueue, { batchSize: 5, reportBatchItemFailures: true }));
      }
      if (spec.trigger === 'deliveries') {
        fn.addEventSource(new SqsEventSource(deliveryQueue, { batchSize: 10, reportBatchItemFailures: true }));
      }
      if (spec.trigger === 'stream') {
        // As SAM's DynamoDB event: the managed policy reads the stream.
        fn.role?.addManagedPolicy(
          iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaDynamoDBExecutionRole'));
        webhookDeadLetterQueue.grantSendMessages(fn);
        new lambda.CfnEventSourceMapping(this, `${name}Stream`, {
          functionName: fn.functionName,
          eventSourceArn: table.attrStreamArn,
          startingPosition: 'TRIM_HORIZON',
          batchSize: 100,
          bisectBatchOnFunctionError: true,
          maximumRetryAttempts: 50,
          functionResponseTypes: ['ReportBatchItemFailures'],
          destinationConfig: { onFailure: { destination: webhookDeadLetters.attrArn } },
          filterCriteria: {
            filters: [{ pattern: '{"eventName": ["INSERT"], "dynamodb": {"NewImage": {"_type": {"S": ["Event"]}}}}' }],
          },
        });
      }
      const integration = new HttpLambdaIntegration(`${name}Integration`, fn);
      for (const [method, route] of routes.get(spec.binary) ?? []) {
        api.addRoutes({ path: route, methods: [method as apigw.HttpMethod], integration });
      }
      alarm(`${name}ErrorsAlarm`, fn.metricErrors({ period: cdk.Duration.minutes(5), statistic: 'Sum' }),
        `${spec.binary}: a function error (a panic or a timeout) in 5 minutes`);
      alarm(`${name}ThrottlesAlarm`, fn.metricThrottles({ period: cdk.Duration.minutes(5), statistic: 'Sum' }),
        `${spec.binary}: a throttled invocation in 5 minutes`);
    }

    alarm('JobDeadLettersAlarm', new cloudwatch.Metric({
      namespace: 'AWS/SQS', metricName: 'ApproximateNumberOfMessagesVisible',
      dimensionsMap: { QueueName: deadLetters.attrQueueName }, statistic: 'Maximum', period: cdk.Duration.minutes(5),
    }), 'A background job failed five times and waits in the dead-letter queue');
    alarm('WebhookDeadLettersAlarm', new cloudwatch.Metric({
      namespace: 'AWS/SQS', metricName: 'ApproximateNumberOfMessagesVisible',
      dimensionsMap: { QueueName: webhookDeadLetters.attrQueueName }, statistic: 'Maximum', period: cdk.Duration.minutes(5),
    }), 'A webhook delivery message or a stream batch failed its retries and waits in the dead-letter queue');
    new cloudwatch.Alarm(this, 'Api5xxAlarm', {
      metric: new cloudwatch.Metric({
        namespace: 'AWS/ApiGateway', metricName: '5xx', dimensionsMap: { ApiId: api.apiId },
        statistic: 'Sum', period: cdk.Duration.minutes(5),
      }),
      threshold: 5, evaluationPeriods: 1,
      alarmDescription: 'The API answered 5xx five times or more in 5 minutes',
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }).addAlarmAction(notify);

    new cdk.CfnOutput(this, 'ApiUrl', { description: 'Base address of /v1 and /v3', value: api.apiEndpoint });
    new cdk.CfnOutput(this, 'FilesBucketName', {
      description: 'The S3 bucket of bulk import and export files (CRM_FILES_BUCKET)', value: files.ref,
    });
    new cdk.CfnOutput(this, 'TableName', { description: 'The DynamoDB table (CRM_TABLE for `crm bootstrap`)', value: table.ref });
    new cdk.CfnOutput(this, 'TableStreamArn', { description: 'The table\'s stream, for the messaging side', value: table.attrStreamArn });
    new cdk.CfnOutput(this, 'JobDeadLetterQueueUrl', { description: 'Job messages that failed five times', value: deadLetters.ref });
    new cdk.CfnOutput(this, 'WebhookDeadLetterQueueUrl', {
      description: 'Webhook delivery messages and stream batches that failed their retries', value: webhookDeadLetters.ref,
    });
    new cdk.CfnOutput(this, 'AlarmTopicArn', { description: 'Subscribe to it to hear of alarms', value: alarms.topicArn });
  }
}
