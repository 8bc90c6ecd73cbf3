// One Lambda function per resource group, as infra/template.yaml declares them.
// tests/tests/cdk.rs holds this table against the SAM template: binaries,
// settings, environment and DynamoDB actions must be the same in both.

const READ = ['dynamodb:GetItem', 'dynamodb:Query'];
const WRITE = ['dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'];
const BATCH = ['dynamodb:BatchGetItem'];

export interface FunctionSpec {
  /** The Cargo binary, which is also the group name the OpenAPI document tags its routes with. */
  readonly binary: string;
  readonly description: string;
  /** DynamoDB actions on the table (none: no table access). */
  readonly actions: string[];
  /** Whether the actions extend to the gsi1 index. */
  readonly index?: boolean;
  /** Sends to a queue: background jobs (CRM_JOB_QUEUE_URL) or webhook deliveries (CRM_WEBHOOK_QUEUE_URL). */
  readonly sends?: 'jobs' | 'deliveries';
  /** Gets CRM_CHECKOUT_BASE_URL. */
  readonly checkout?: boolean;
  /** Seconds (10 unless said). */
  readonly timeout?: number;
  /** What invokes it instead of routes: a queue, or the table's stream (new event items). */
  readonly trigger?: 'jobs' | 'deliveries' | 'stream';
  /** Bulk files (CRM_FILES_BUCKET): presigns their URLs, or also reads, writes and removes them. */
  readonly files?: 'presign' | 'work';
}

export const FUNCTIONS: FunctionSpec[] = [
  { binary: 'tags', description: '/v3/tags and /v1/tags', actions: [...READ, ...WRITE] },
  {
    binary: 'contacts', description: '/v3/contacts and /v1/contacts', actions: [...READ, ...BATCH, ...WRITE],
    index: true, sends: 'jobs',
  },
  {
    binary: 'job-worker', description: 'Runs background jobs such as contact imports and bulk imports and exports (SQS)',
    actions: [...READ, ...BATCH, ...WRITE], index: true, timeout: 300, trigger: 'jobs', sends: 'jobs', files: 'work',
  },
  {
    binary: 'bulk', description: '/v3/imports and /v3/exports (bulk files as jobs)',
    actions: [...READ, ...WRITE], sends: 'jobs', files: 'presign',
  },
  { binary: 'deals', description: '/v3/deals', actions: [...READ, ...BATCH, ...WRITE], index: true },
  { binary: 'products', description: '/v3/products', actions: [...READ, ...WRITE] },
  { binary: 'custom-fields', description: '/v3/custom-fields and /v1/custom-fields (reads only)', actions: READ },
  { binary: 'business-hours', description: '/v3/business-hours (reads only)', actions: READ },
  {
    binary: 'dashboards', description: '/v3/dashboards and their snapshots',
    actions: [...READ, 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'], sends: 'jobs',
  },
  {
    binary: 'utility', description: '/v3/time, /v3/test-store, /v3/orders, /v3/redirect-session, /v3/refresh-page',
    actions: [...READ, ...WRITE],
  },
  { binary: 'api-docs', description: '/openapi.json, /docs', actions: [] },
  {
    binary: 'mcp', description: 'POST /mcp: tools for AI agents over the contacts, deals, tags, reports and events routes',
    actions: [...READ, ...BATCH, ...WRITE], index: true, timeout: 12,
  },
  { binary: 'api-tokens', description: '/v3/api-tokens', actions: [...READ, ...WRITE] },
  {
    binary: 'workspaces', description: '/v3/workspaces (info, welcome messages, checkout links, churn reasons, operators)',
    actions: [...READ, ...BATCH, ...WRITE], checkout: true,
  },
  { binary: 'campaigns', description: '/v3/campaigns (the list, drafts, lifecycle, results)', actions: [...READ, ...BATCH, ...WRITE] },
  { binary: 'reports', description: '/v3/reports/sessions (the report, and sessions coming in)', actions: [...READ, ...BATCH, ...WRITE] },
  { binary: 'audit', description: '/v3/audit (reads only)', actions: [...READ, ...BATCH], index: true },
  { binary: 'events', description: '/v3/events (reads only)', actions: READ },
  {
    binary: 'webhooks', description: '/v3/webhooks (endpoints, secrets, delivery logs, replays)',
    actions: [...READ, ...BATCH, ...WRITE], sends: 'deliveries', timeout: 25,
  },
  {
    binary: 'webhook-dispatcher',
    description: 'Queues one webhook delivery per new event and matching endpoint (table stream)',
    actions: [...READ, 'dynamodb:PutItem'], sends: 'deliveries', timeout: 60, trigger: 'stream',
  },
  {
    binary: 'webhook-sender', description: 'Makes webhook deliveries and schedules their retries (SQS)',
    actions: [...READ, ...BATCH, ...WRITE], sends: 'deliveries', timeout: 30, trigger: 'deliveries',
  },
];
