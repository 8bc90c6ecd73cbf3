// Synthesizes the stack into cdk.out/. `npm run synth` needs no AWS account and
// no Docker: bundling (cargo lambda build) is skipped unless CRM_CDK_BUNDLE=1,
// which `npx cdk deploy` sets through cdk.json.

import * as path from 'node:path';
import * as cdk from 'aws-cdk-lib';
import { CrmApiStack } from '../lib/stack';

const bundle = process.env.CRM_CDK_BUNDLE === '1';
const app = new cdk.App({
  outdir: process.env.CDK_OUTDIR ?? path.join(__dirname, '..', 'cdk.out'),
  context: bundle ? {} : { 'aws:cdk:bundling-stacks': [] },
});
new CrmApiStack(app, 'CrmApi', {
  description: 'CRM API: one Rust Lambda per resource group behind an HTTP API (/v1 and /v3), one DynamoDB table.',
});
app.synth();
