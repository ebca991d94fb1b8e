/**
 * GENERATED from openapi.yaml by `npm run generate`. Do not edit by hand:
 * change openapi.yaml, then run `npm run generate`. CI fails when this file is stale.
 */

import type { operations } from './openapi.js';

/** The lead events, as `components.schemas.EventName` lists them. */
export const EVENT_NAMES = ["lead_create","lead_update"] as const;
export type EventName = (typeof EVENT_NAMES)[number];

/** What happens to a client's webhooks, as `components.schemas.OperationalEventName` lists it. */
export const OPERATIONAL_EVENT_NAMES = ["webhook.failing","webhook.disabled","webhook.recovered","webhook.detached"] as const;
export type OperationalEventName = (typeof OPERATIONAL_EVENT_NAMES)[number];

/** What a webhook can subscribe to (`WebhookEventName`): the lead events, then the operational ones. */
export const WEBHOOK_EVENT_NAMES = [...EVENT_NAMES, ...OPERATIONAL_EVENT_NAMES] as const;
export type WebhookEventName = (typeof WEBHOOK_EVENT_NAMES)[number];

export type SecurityScheme = "apiKey" | "publisherToken" | "adminToken";

/** Each operation's security scheme; null for a public operation. */
export const OPERATION_SECURITY = {
  getAbout: "apiKey",
  getRetention: "apiKey",
  listWebhooks: "apiKey",
  createWebhook: "apiKey",
  getWebhook: "apiKey",
  updateWebhook: "apiKey",
  deleteWebhook: "apiKey",
  listWebhookDeliveries: "apiKey",
  testWebhook: "apiKey",
  retryWebhookDelivery: "apiKey",
  recoverWebhookDeliveries: "apiKey",
  rotateWebhookSecret: "apiKey",
  enableWebhook: "apiKey",
  getHealth: null,
  getReadiness: null,
  listEvents: "apiKey",
  publishEvent: "publisherToken",
  publishEvents: "publisherToken",
  listEventTypes: null,
  listClientOperationalEvents: "apiKey",
  listOperationalEvents: "publisherToken",
  createAccount: "adminToken",
  listAccounts: "adminToken",
  getAccount: "adminToken",
  updateAccount: "adminToken",
  createAccountKey: "adminToken",
  listAccountKeys: "adminToken",
  revokeAccountKey: "adminToken",
  createPortalLink: "adminToken",
  listAuditLog: "adminToken",
  eraseLead: "adminToken",
  openPortalSession: null,
  endPortalSession: "apiKey",
} as const satisfies Record<keyof operations, SecurityScheme | null>;
