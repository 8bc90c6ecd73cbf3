// One Lambda function per resource group, as the code declares them
// (`shared::deploy`: a group's `deployed(...)`, a worker's `function()`).
// infra/functions.json is generated from those declarations
// (`UPDATE_INFRA=1 cargo test -p api-tests --test api cdk::`), and
// tests/tests/cdk.rs holds this app's synthesized stack to the SAM template:
// binaries, settings, environment and DynamoDB actions the same in both.

import { readFileSync } from 'node:fs';
import * as path from 'node:path';

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

export const FUNCTIONS: FunctionSpec[] = JSON.parse(
  readFileSync(path.join(__dirname, '..', '..', 'functions.json'), 'utf8'),
);
