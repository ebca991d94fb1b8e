/**
 * GENERATED from openapi.yaml by `npm run generate`. Do not edit by hand:
 * change openapi.yaml, then run `npm run generate`. CI fails when this file is stale.
 */

export type paths = {
    "/about": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read the account of the calling client
         * @description Returns the account name of the client that the API key identifies. Automation
         *     platforms use it as their connection test and as the label of the connection.
         */
        get: operations["getAbout"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/retention": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * How long leadhooks keeps the calling client's events
         * @description The period after which the client's delivered and failed events are deleted, with their
         *     deliveries and attempts: the one the lead product set for this client
         *     (`PATCH /admin/clients/{clientId}`, `retention`), or else the server's `RETENTION`. The
         *     client portal shows it.
         */
        get: operations["getRetention"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the client's webhooks
         * @description The calling client's attached webhooks, oldest first, a page at a time (100 by default,
         *     which is the default webhook cap: one page holds them all unless the cap was raised).
         *     Detached webhooks are not listed. `status` is `failing` when the most recent delivery
         *     attempt of a lead event to the webhook failed, and `disabled` when every such attempt
         *     failed for so long that deliveries to it were stopped (`disabledAt` and `disabledReason`
         *     say when and why; `POST /webhook/{hookID}/enable` resumes them); `paused` is true while
         *     the webhook is paused (`PATCH /webhook/{hookID}`).
         */
        get: operations["listWebhooks"];
        put?: never;
        /**
         * Attach a webhook
         * @description Subscribes a callback URL to one or more lead events. The response carries the new
         *     webhook's `hookId` (and the same number as `id`, which Zapier's unsubscribe step reads),
         *     and its signing `secret`. The secret is shown only in this response: store it to verify
         *     the `webhook-signature` header of deliveries (Standard Webhooks).
         *
         *     The body must be sent as `application/json`. Duplicate event names are stored once;
         *     unknown extra fields are ignored.
         *
         *     `headers` (optional) are sent with every delivery attempt and test send, for a receiver
         *     behind its own authentication; their values are kept secret (see `WebhookHeaders`).
         *
         *     With an `Idempotency-Key`, a retry of the same request within 24 hours gets this answer
         *     again, the same `hookId` and `secret`, and attaches nothing (see "Safe retries" above).
         */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook/{hookID}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read one webhook
         * @description One of the calling client's webhooks, as `GET /webhook` lists it. A webhook that never
         *     existed, was detached or belongs to another client is answered alike, with 404.
         */
        get: operations["getWebhook"];
        put?: never;
        post?: never;
        /**
         * Detach a webhook
         * @description Detaches one of the calling client's webhooks; nothing is delivered to it afterwards.
         *     A webhook that never existed, was already detached or belongs to another client is
         *     answered alike, with 404.
         */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        /**
         * Change a webhook's url, events, rate or headers, or pause or resume it
         * @description Changes what the body names and leaves the rest as it is: `url`, `events` (the whole list,
         *     replacing the old one; duplicates are stored once), `paused`, `rateLimit`, `headers` (the
         *     whole set, replacing the old one; `null` or `{}` removes them all). Answers with the
         *     webhook as `GET /webhook/{hookID}` shows it afterwards. The secret does not change.
         *
         *     - New `headers` apply to every attempt made from then on, retries of earlier events
         *       included; an attempt already in flight finishes with the old ones.
         *     - A new `events` list applies to the events published from then on; an event published
         *       before was matched against the list of its time. A new `url` applies to every
         *       delivery attempted from then on, retries of earlier events included; an attempt
         *       already in flight finishes at the old one.
         *     - `"paused": true` holds the webhook's deliveries: they wait in the outbox, are not
         *       attempted and do not fail, and new events keep adding to them (an attempt already in
         *       flight finishes). `"paused": false` resumes it: the held deliveries go out in the
         *       order they were published, at the webhook's usual pace (at most 8 in flight, taking
         *       turns with the other webhooks), then new ones as they come. Retries that were
         *       scheduled before the pause are due at once on resume, and go on with their schedule.
         *       A paused webhook still counts against `MAX_WEBHOOKS_PER_CLIENT`, and
         *       `POST /webhook/{hookID}/test` still reaches it.
         *
         *     Input is checked as for `POST /webhook`, with the same words: `Missing data` when there
         *     is no body, the body is not a JSON object, it names none of `url`, `events`, `paused`,
         *     `rateLimit`, `ordered`, `headers` and `filter`, or one it names (but `headers` and
         *     `filter`, which `null` removes) is `null`, `""` or `[]`; `Invalid data: ...` when a field
         *     is present but wrong. Unknown extra fields are ignored. Sent as `application/json` only.
         */
        patch: operations["updateWebhook"];
        trace?: never;
    };
    "/webhook/{hookID}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List recent delivery attempts to a webhook
         * @description The attempts made to deliver events to one of the calling client's webhooks, newest
         *     first, a page at a time: pass the `next` of a page as `before` to get the one after it.
         *     Attempts are kept for the server's retention period (`RETENTION`, 30 days by default),
         *     then deleted with their event once every delivery of the event is settled; the attempts
         *     of a delivery still pending are kept whatever their age.
         */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook/{hookID}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send a test event to a webhook now
         * @description Sends a sample `lead_create` event to the webhook at once, and answers with what the
         *     receiver did: its status code and how long the attempt took, or why no response came.
         *     Platforms use it to check a URL before relying on it.
         *
         *     The request is made exactly as a delivery is: `POST <url>`, the body
         *     `{"type": "lead_create", "timestamp": "<now>", "data": {...}}` with a sample lead
         *     (`{"id": 0, "name": "Jane Doe", "email": "jane.doe@example.com", "test": true}`), signed with
         *     the webhook's secret (Standard Webhooks `webhook-id`, `webhook-timestamp`,
         *     `webhook-signature`), under the same address policy (no private or loopback targets
         *     unless the server allows them), cut off after the delivery timeout (`DELIVERY_TIMEOUT`,
         *     15 s by default), redirects not followed. Its `webhook-id` is a fresh `evt_` id that no
         *     real event has.
         *
         *     A test send is not a delivery: it is not stored, so it does not appear in
         *     `GET /webhook/{hookID}/deliveries`, does not change the webhook's `status`, and is never
         *     retried; a `410` answer does not detach the webhook. It is made whether or not the webhook
         *     is paused or disabled: check the URL of a disabled webhook with it before enabling it again.
         *     The receiver failing or being unreachable is still a 200 here, with the failure in the body.
         */
        post: operations["testWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook/{hookID}/deliveries/{deliveryId}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resend one delivery
         * @description Queues one more attempt of a delivery to one of the calling client's webhooks, due now:
         *     the same event, the same body and the same `webhook-id` header (the event's id), signed
         *     anew, so a receiver that deduplicates on `webhook-id` sees it once. `deliveryId` is the
         *     one the delivery log (`GET /webhook/{hookID}/deliveries`) shows on each attempt. Any
         *     settled delivery may be resent (failed, or delivered: a receiver may have lost it).
         *
         *     The resend is one attempt, made by the delivery worker within the webhook's in-flight
         *     limit like any other, and recorded in the delivery log with `"replay": true`. It is not
         *     retried on the backoff schedule: if it fails, the delivery is `failed` again and can be
         *     resent again. A delivery still pending (its attempts are not over) is answered 409.
         *     Deliveries are kept as long as their event (`RETENTION`, 30 days by default).
         */
        post: operations["retryWebhookDelivery"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook/{hookID}/recover": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resend failed deliveries, or send missed events, of a time range
         * @description Queues one more attempt of every `failed` delivery to one of the calling client's
         *     webhooks whose event was published in the range: at or after `since`, and before `until`
         *     when it is given (`since` is in the range, `until` is not, so ranges that meet do not
         *     overlap; without `until` the range runs to now). Oldest event first, up to 1000 deliveries
         *     a request: when `more` is true, call again with the same body for the next ones (those
         *     queued are pending, no longer failed, so they are not taken twice). Only what the
         *     retention period keeps can be recovered (`RETENTION`, 30 days by default): an older
         *     `since` is accepted and finds nothing older.
         *
         *     They go out at the webhook's normal pace, never as a burst: they are due now, in the order
         *     of their events, and the delivery worker makes no more than 8 attempts to one webhook at
         *     a time, as it does for any backlog, while other webhooks' deliveries are not held up
         *     behind them. Each is one attempt with the same `webhook-id` as before, recorded in the
         *     delivery log with `"replay": true`, and not retried on the backoff schedule.
         *
         *     With `"missed": true`, it sends instead the events the webhook never got a delivery of:
         *     those of the client published in the range while the webhook was disabled (publishing
         *     makes no delivery for a disabled webhook). It creates one delivery to the webhook for each
         *     event of the client, of a type the webhook is subscribed to now, published in the range
         *     and not before the webhook was created, that has no delivery to it at all, oldest first,
         *     up to 1000 a request, with `more` as above. These are first deliveries, never attempted:
         *     they are ordinary deliveries, due now, retried on the backoff schedule like any other,
         *     and logged with `"replay": false`. A second call finds nothing new (those events have
         *     deliveries now). An event of a type the webhook is not subscribed to, or published
         *     before it was created, is never sent; a delivery that failed is resent by a call without
         *     `missed`.
         *
         *     When a webhook is disabled (every attempt failed for `WEBHOOK_DISABLE_AFTER`), its
         *     deliveries still pending become `failed`, and events published while it stays disabled
         *     make no delivery for it: once the receiver is fixed and the webhook enabled again
         *     (`POST /webhook/{hookID}/enable`), a recovery with `since` set to a time before the
         *     trouble began sends the failed deliveries, and one with `"missed": true` the events it
         *     missed. Resends and recoveries are made on a client's request, so they are attempted even
         *     while the webhook is disabled, as test sends are (a missed event's delivery is then
         *     attempted once, and fails for good if that attempt fails, as any delivery to a disabled
         *     webhook does).
         */
        post: operations["recoverWebhookDeliveries"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook/{hookID}/secret/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rotate a webhook's signing secret
         * @description Gives one of the calling client's webhooks a new signing secret and answers with it
         *     (shown only in this answer). The secret it replaces stays valid for a grace period
         *     (`SECRET_ROTATION_GRACE` of the server, 24 hours by default): until
         *     `previousSecretExpiresAt`, every delivery to the webhook carries two signatures in
         *     `webhook-signature`, space-separated, `v1,<signature with the new secret> v1,<signature
         *     with the previous one>`, as the Standard Webhooks specification allows, so a receiver
         *     holding either secret verifies it and can switch at its own pace. After it, deliveries
         *     carry the new signature only.
         *
         *     Rotating again during a grace period keeps only the newest previous secret (the one this
         *     rotation replaces), with a grace period of its own; the one before it stops signing at
         *     once. No body is taken.
         *
         *     With an `Idempotency-Key`, a retry of the same request (same webhook) within 24 hours gets
         *     this answer again and rotates nothing, so a rotation whose answer was lost can be retried
         *     without losing the secret the receiver still holds (see "Safe retries" above).
         */
        post: operations["rotateWebhookSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook/{hookID}/enable": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Enable a disabled webhook again
         * @description Deliveries to a webhook stop when every attempt to it has failed for a sustained period
         *     (`WEBHOOK_DISABLE_AFTER` of the server, 5 days by default; the attempt that stops them
         *     is logged with the outcome `disabled`). Its `status` is then `disabled`, with
         *     `disabledAt` and `disabledReason`, and events published meanwhile are not queued for it.
         *     This operation enables it again: from now on, events published are delivered to it as
         *     before, and its run of failures starts over (another `WEBHOOK_DISABLE_AFTER` of failing
         *     attempts, counted from the next failure, would disable it again).
         *
         *     It answers with the webhook as `GET /webhook/{hookID}` shows it afterwards (`status`
         *     `active`, `disabledAt` and `disabledReason` null). Enabling a webhook that is not
         *     disabled changes nothing and answers the same way. The deliveries that were pending when
         *     it was disabled are `failed`: `POST /webhook/{hookID}/recover` sends them again. Check
         *     the URL first with `POST /webhook/{hookID}/test`, which reaches a disabled webhook too.
         *     No body is taken.
         */
        post: operations["enableWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Liveness
         * @description The process is up and serving. Needs no key.
         */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Readiness
         * @description The database answers and can still make writes durable, so requests can be served. Needs no key.
         */
        get: operations["getReadiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the client's recent events, for polling
         * @description The calling client's events, newest first, a page at a time: pass the `next` of a page as
         *     `before` to get the one after it. Each item is the body its webhooks receive (`type`,
         *     `timestamp`, `data`, the very same values) with the event's `id`, which is the
         *     `webhook-id` of its deliveries: deduplicate on it. Every event published for the client
         *     is listed, whether or not a webhook was subscribed to it. Polling integrations (a Zapier
         *     trigger's sample data) read it, and so can a client whose endpoint was down past the
         *     retry schedule.
         *
         *     Events are kept for the server's retention period (`RETENTION`, 30 days by default), then
         *     deleted, and gone from this list, once every delivery of the event is settled; an event
         *     with a delivery still pending is kept, and listed, whatever its age.
         *
         *     This path's `POST` is the lead system's (publisher token); this `GET` takes the client's
         *     API key, like every client operation.
         */
        get: operations["listEvents"];
        put?: never;
        /**
         * Publish a lead event
         * @description Used by the lead system, with the publisher token of the server's configuration
         *     (`PUBLISHER_TOKEN`); API keys are not accepted here. The event, and one delivery per
         *     active webhook of the client that subscribes to its type, are stored durably before the
         *     202 leaves; delivery then happens in the background, at least once, surviving restarts.
         *     `data` is the lead, stored and delivered exactly as sent: every key is kept, keys named
         *     `__proto__` or `constructor` included.
         *
         *     With an `Idempotency-Key`, a retry of the same request within 24 hours gets this answer
         *     again, the same `eventId`, and stores and delivers nothing more (see "Safe retries" above).
         */
        post: operations["publishEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Publish up to 1,000 lead events at once
         * @description For imports and syncs: what `POST /events` does for each item of `events`, in one
         *     request and one transaction, with the publisher token (`PUBLISHER_TOKEN`).
         *
         *     All or nothing. The batch is checked as a whole first: an item that `POST /events` would
         *     refuse refuses the batch (`400`, naming the item, `events[3].type ...`), and nothing is
         *     stored. A valid batch is stored in one transaction, every event with its deliveries, in
         *     the order given (a listing shows the last as the newest), before the 202 leaves; a
         *     failure stores none of it. The answer holds one result per item, in the same order:
         *     `{"eventId", "deliveries"}`, or `{"error": "Client not found"}` for an item whose
         *     `clientId` names no client, which stored nothing (the others are stored all the same).
         *
         *     With an `Idempotency-Key`, a retry of the same batch within 24 hours gets this answer
         *     again and stores nothing more. The body may be up to `PUBLISHER_BATCH_BODY_LIMIT`.
         */
        post: operations["publishEvents"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events/types": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The event catalogue
         * @description Every event type, with the JSON Schema (2020-12) of the body its deliveries carry and
         *     examples of it, so that a client can build a sample or a field mapping without waiting
         *     for a live event. It is served from the `webhooks` section of this description, each
         *     schema made self-contained (no `$ref`). Items of `GET /events` are these bodies with the
         *     event's `id` added.
         *
         *     Public, like this description itself: it needs no key, and counts against none.
         */
        get: operations["listEventTypes"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events/operational": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The client's operational events, for polling
         * @description What happened to the calling client's webhooks (`webhook.failing`, `webhook.disabled`,
         *     `webhook.recovered`, `webhook.detached`), oldest first: the same events its webhooks
         *     subscribed to them receive, whether or not one is. `eventId` is the `webhook-id` of
         *     their deliveries: deduplicate on it.
         *
         *     Poll it with `after`: pass the `next` of the previous page (the `id` of its last event)
         *     to get the events written since. An empty page answers `next: null`: keep the `after`
         *     you sent. A page shorter than `limit` means there is nothing more for now. Events are
         *     kept for the server's retention period (`RETENTION`, 30 days by default), then deleted.
         */
        get: operations["listClientOperationalEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/operations/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Operational events, for the lead system to poll
         * @description What happened to every client's webhooks that the lead system (the publisher) should
         *     know of, oldest first: the operational events of `OperationalEventName`
         *     (`webhook.failing`, `webhook.disabled`, `webhook.recovered`, `webhook.detached`). Each is
         *     written in the same transaction as what it reports, so none is lost. A client reads its
         *     own at `GET /events/operational`; with `OPERATIONAL_EVENTS_URL` set, the server also
         *     POSTs each one, signed, to that address.
         *
         *     Poll it with `after`: pass the `next` of the previous page (the `id` of its last event)
         *     to get the events written since. An empty page answers `next: null`: keep the `after`
         *     you sent. A page shorter than `limit` means there is nothing more for now. Events are
         *     kept for the server's retention period (`RETENTION`, 30 days by default), then deleted.
         *
         *     Takes the publisher token, as `POST /events` does; API keys are not accepted here.
         */
        get: operations["listOperationalEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/clients": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List clients, oldest first, a page at a time
         * @description Pass the `next` of a page as `after` to get the following one; `next` is null on the last.
         */
        get: operations["listAccounts"];
        put?: never;
        /**
         * Create a client (account) and its first API key
         * @description For the lead product's back end, when a customer signs up. The key is in this answer
         *     only: store it, or hand it to the customer, now. With an `Idempotency-Key`, a retried
         *     sign-up gets the first answer again (the same client and key) and creates nothing.
         */
        post: operations["createAccount"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/clients/{clientId}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The client's id (`clientId`). */
                clientId: components["parameters"]["ClientID"];
            };
            cookie?: never;
        };
        /** One client */
        get: operations["getAccount"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Rename a client, deactivate it and activate it again, or set its retention period
         * @description An inactive client's API keys are refused (`401 Client not found`) and its webhooks receive
         *     nothing: their deliveries wait, and go out once the client is active again. Its keys,
         *     webhooks and history are kept.
         *
         *     `retention` keeps this client's history for a shorter period than the server's
         *     `RETENTION` (a customer's contract may ask for it): the next pass of retention deletes its
         *     delivered and failed events older than that, with their deliveries and attempts. It is at
         *     most `RETENTION`; `null` goes back to it.
         */
        patch: operations["updateAccount"];
        trace?: never;
    };
    "/admin/clients/{clientId}/keys": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The client's id (`clientId`). */
                clientId: components["parameters"]["ClientID"];
            };
            cookie?: never;
        };
        /** A client's API keys, never the keys themselves */
        get: operations["listAccountKeys"];
        put?: never;
        /**
         * Add an API key to a client
         * @description To rotate a key, create one, move the integration to it, then revoke the old one.
         */
        post: operations["createAccountKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/clients/{clientId}/keys/{keyId}": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The client's id (`clientId`). */
                clientId: components["parameters"]["ClientID"];
                /** @description The key's id (`keyId`). */
                keyId: number;
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Revoke a client's key, at once on every server */
        delete: operations["revokeAccountKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/clients/{clientId}/portal-sessions": {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The client's id (`clientId`). */
                clientId: components["parameters"]["ClientID"];
            };
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A link that opens the client portal signed in as this client
         * @description For a button in the lead product's own UI: its back end asks for a link and sends the
         *     customer's browser to it, and the customer never sees an API key. The link's token sits
         *     in the URL's fragment, which a browser sends to no server (no access log, no `Referer`
         *     holds it). It opens the portal once: the page exchanges it (`POST /portal-session`) for a
         *     session of this client that ends at sign-out or at `expiresAt`, whichever comes first. The
         *     link's address is `PUBLIC_URL` of the server's configuration, or, without one, the address
         *     this request came in on.
         *
         *     `branding` sets how the portal looks for this link (see `PortalBrandingSet`). A link
         *     whose logo is its own carries the logo's origin in its query (`?logo=`): the page is
         *     served before its token is exchanged, and its Content-Security-Policy must already let
         *     that one origin's images in. The origins allowed to show the portal in a frame are the
         *     server's setting, `PORTAL_FRAME_ANCESTORS`, for every link alike.
         */
        post: operations["createPortalLink"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/audit-log": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The audit log, newest first, a page at a time
         * @description Every change made to accounts, keys, webhooks, portal links and portal sessions, and every
         *     erasure of a lead, one entry each: who made it (`actor`: the admin token, a client's API
         *     key by its prefix, a portal session by its key's prefix, or the command-line tool), when,
         *     what (`action`, the `clientId` and `targetId` it touched, and the fields it set in
         *     `changes`), and the address the request came from (`ip`, as the server reads it behind
         *     `trustProxy`; null for the command-line tool). An entry never holds a secret: no API key,
         *     signing secret, portal token or custom header value, only a key's prefix and a header's
         *     name; nor a lead's data, only the `leadId` an erasure was asked for. Each entry is written
         *     in the same transaction as its change, so a change is never left unrecorded, but for an
         *     erasure's, written once the erasure is done (it may take more than one transaction while
         *     it waits for an attempt in flight); reading, publishing and delivering write none.
         *
         *     Narrow it to one client with `clientId`, and to a time range with `since` (included) and
         *     `until` (excluded). Pass the `next` of a page as `before` to get the following one, older;
         *     `next` is null on the last. Entries are kept for the server's retention period
         *     (`RETENTION`, 30 days by default), then deleted.
         */
        get: operations["listAuditLog"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/admin/erasures": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Erase everything leadhooks holds of one lead
         * @description For a person's request to have their data erased: everything leadhooks keeps of the lead
         *     published with this `leadId` (`981` and `"981"` name the same lead), within one client
         *     (`clientId`) or in every client (without it). What goes:
         *
         *     - each event's payload (the body its deliveries carry: the lead's data). The event stays
         *       as metadata that holds no personal data (its id, type, time and lead id), marked erased:
         *       `GET /events` lists it with `erased: true` and no `data`, and the delivery logs mark its
         *       attempts `erased: true`.
         *     - its pending deliveries, cancelled: nothing more is sent for the lead, and a delivery of
         *       it waiting its turn behind another of the lead (delivery in order per lead) is cancelled
         *       too, never sent. A resend or recovery of an erased event's delivery is refused.
         *     - the error text of its delivery attempts (it may quote a receiver's redirect address).
         *       leadhooks keeps no request or response body of an attempt.
         *     - the request fingerprint of the answer kept for the `Idempotency-Key` of each publication
         *       that made one of its events: a retry of that publication under the key is then refused
         *       (`422`) and publishes nothing again. The kept answer itself (`eventId`, `deliveries`)
         *       holds none of the lead's data.
         *
         *     The answer comes once nothing is being sent for the lead: an attempt a worker had begun
         *     before the erasure (its request may already be on its way) is waited for, at most the
         *     attempt timeout (`DELIVERY_TIMEOUT`) and a few seconds, and is not followed by another.
         *     From the answer on, no request carrying the lead leaves leadhooks. An event of the lead
         *     published after the erasure is a new one: stop publishing the lead first.
         *
         *     Before the answer, the copies the database keeps in its own files of what was erased go
         *     too (SQLite's write-ahead log, PostgreSQL's old row versions), so the lead's bytes are in
         *     no table file leadhooks writes. PostgreSQL's write-ahead log, archives and backups keep
         *     them on their own schedule (docs/operations.md, "Erasing a lead").
         *
         *     The answer counts what this call erased; a second call for the same lead answers zeros.
         *     Retention deletes the erased events' metadata in its time.
         */
        post: operations["eraseLead"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/portal-session": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Exchange a portal link's token for a session key, once
         * @description What the client portal does with the token of a link made by `createPortalLink`. The
         *     answer's `apiKey` is an API key of the client that works until `expiresAt` (the link's
         *     expiry) or until `DELETE /portal-session`; admin `GET /admin/clients/{clientId}/keys`
         *     lists it with its `expiresAt`. A token is exchanged once: a second exchange, an expired
         *     token or an unknown one is refused, and the words say which. A link of a client made
         *     inactive after the link was made is refused too, and stays unused: a session whose key
         *     would be refused is never opened.
         */
        post: operations["openPortalSession"];
        /**
         * Sign a portal session out, on every server
         * @description Revokes the session key given in `x-api-key`, as the portal's sign-out does. A key that
         *     is not a portal session's (one made by `leadhooks key create` or the admin API) is not
         *     touched: revoke those through the admin API.
         */
        delete: operations["endPortalSession"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
};
export type webhooks = {
    lead_create: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A lead was created
         * @description What leadhooks sends to a webhook subscribed to `lead_create`. Answer with any 2xx within
         *     the delivery timeout (15 s by default); `410 Gone` detaches the webhook.
         */
        post: {
            parameters: {
                query?: never;
                header: {
                    /** @description The event's id; the same on every retry. Deduplicate on it. */
                    "webhook-id": components["parameters"]["WebhookIdHeader"];
                    /** @description Unix time, in seconds, of this attempt. Reject old ones to stop replays. */
                    "webhook-timestamp": components["parameters"]["WebhookTimestampHeader"];
                    /**
                     * @description `v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`. During the
                     *     grace period after a secret rotation, two of them, space-separated: the new secret's first.
                     */
                    "webhook-signature": components["parameters"]["WebhookSignatureHeader"];
                };
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["LeadCreateEvent"];
                };
            };
            responses: {
                /** @description Received. Any 2xx status counts. */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Gone for good; leadhooks detaches the webhook. */
                410: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    lead_update: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A lead was updated
         * @description What leadhooks sends to a webhook subscribed to `lead_update`; as for `lead_create`.
         */
        post: {
            parameters: {
                query?: never;
                header: {
                    /** @description The event's id; the same on every retry. Deduplicate on it. */
                    "webhook-id": components["parameters"]["WebhookIdHeader"];
                    /** @description Unix time, in seconds, of this attempt. Reject old ones to stop replays. */
                    "webhook-timestamp": components["parameters"]["WebhookTimestampHeader"];
                    /**
                     * @description `v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`. During the
                     *     grace period after a secret rotation, two of them, space-separated: the new secret's first.
                     */
                    "webhook-signature": components["parameters"]["WebhookSignatureHeader"];
                };
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["LeadUpdateEvent"];
                };
            };
            responses: {
                /** @description Received. Any 2xx status counts. */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Gone for good; leadhooks detaches the webhook. */
                410: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "webhook.failing": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Another webhook of the client keeps failing
         * @description Written when 5 delivery attempts of lead events in a row to one of the client's webhooks
         *     have failed (any failure: an error status, a redirect, a timeout, no connection), once per
         *     run of failures (attempts of operational events, this one's included, do not count): the
         *     next is written only after a success (`webhook.recovered`) and 5 more failures.
         *     Deliveries to it go on, with retries, until `webhook.disabled`.
         *     Sent to the client's other webhooks subscribed to it (never to the webhook it is about),
         *     signed and retried as lead events are, and to `OPERATIONAL_EVENTS_URL` when the server
         *     has one, signed with `OPERATIONAL_EVENTS_SECRET`.
         */
        post: {
            parameters: {
                query?: never;
                header: {
                    /** @description The event's id; the same on every retry. Deduplicate on it. */
                    "webhook-id": components["parameters"]["WebhookIdHeader"];
                    /** @description Unix time, in seconds, of this attempt. Reject old ones to stop replays. */
                    "webhook-timestamp": components["parameters"]["WebhookTimestampHeader"];
                    /**
                     * @description `v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`. During the
                     *     grace period after a secret rotation, two of them, space-separated: the new secret's first.
                     */
                    "webhook-signature": components["parameters"]["WebhookSignatureHeader"];
                };
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["WebhookFailingEvent"];
                };
            };
            responses: {
                /** @description Received. Any 2xx status counts. */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Gone for good; leadhooks detaches the webhook. */
                410: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "webhook.disabled": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Another webhook of the client was disabled
         * @description Written when every delivery attempt of lead events to one of the client's webhooks had
         *     failed for `WEBHOOK_DISABLE_AFTER` (5 days by default) and deliveries to it stopped;
         *     `reason` is its `disabledReason`. `POST /webhook/{hookID}/enable` resumes it.
         *     Sent to the client's other webhooks subscribed to it (never to the webhook it is about),
         *     signed and retried as lead events are, and to `OPERATIONAL_EVENTS_URL` when the server
         *     has one, signed with `OPERATIONAL_EVENTS_SECRET`.
         */
        post: {
            parameters: {
                query?: never;
                header: {
                    /** @description The event's id; the same on every retry. Deduplicate on it. */
                    "webhook-id": components["parameters"]["WebhookIdHeader"];
                    /** @description Unix time, in seconds, of this attempt. Reject old ones to stop replays. */
                    "webhook-timestamp": components["parameters"]["WebhookTimestampHeader"];
                    /**
                     * @description `v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`. During the
                     *     grace period after a secret rotation, two of them, space-separated: the new secret's first.
                     */
                    "webhook-signature": components["parameters"]["WebhookSignatureHeader"];
                };
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["WebhookDisabledEvent"];
                };
            };
            responses: {
                /** @description Received. Any 2xx status counts. */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Gone for good; leadhooks detaches the webhook. */
                410: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "webhook.recovered": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Another webhook of the client works again
         * @description Written at the first successful delivery attempt of a lead event to a webhook after its
         *     `webhook.failing` (a delivered operational event does not count). A webhook enabled
         *     again after `webhook.disabled` starts afresh: its client enabled it, and no
         *     `webhook.recovered` follows.
         *     Sent to the client's other webhooks subscribed to it (never to the webhook it is about),
         *     signed and retried as lead events are, and to `OPERATIONAL_EVENTS_URL` when the server
         *     has one, signed with `OPERATIONAL_EVENTS_SECRET`.
         */
        post: {
            parameters: {
                query?: never;
                header: {
                    /** @description The event's id; the same on every retry. Deduplicate on it. */
                    "webhook-id": components["parameters"]["WebhookIdHeader"];
                    /** @description Unix time, in seconds, of this attempt. Reject old ones to stop replays. */
                    "webhook-timestamp": components["parameters"]["WebhookTimestampHeader"];
                    /**
                     * @description `v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`. During the
                     *     grace period after a secret rotation, two of them, space-separated: the new secret's first.
                     */
                    "webhook-signature": components["parameters"]["WebhookSignatureHeader"];
                };
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["WebhookRecoveredEvent"];
                };
            };
            responses: {
                /** @description Received. Any 2xx status counts. */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Gone for good; leadhooks detaches the webhook. */
                410: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "webhook.detached": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Another webhook of the client was detached by its receiver
         * @description Written when a delivery attempt to one of the client's webhooks was answered
         *     `410 Gone` and the webhook was detached (REST Hooks; Zapier answers 410 for a Zap that
         *     was turned off): nothing more is delivered to it, and attaching it again is the client's
         *     to do.
         *     Sent to the client's other webhooks subscribed to it (never to the webhook it is about),
         *     signed and retried as lead events are, and to `OPERATIONAL_EVENTS_URL` when the server
         *     has one, signed with `OPERATIONAL_EVENTS_SECRET`.
         */
        post: {
            parameters: {
                query?: never;
                header: {
                    /** @description The event's id; the same on every retry. Deduplicate on it. */
                    "webhook-id": components["parameters"]["WebhookIdHeader"];
                    /** @description Unix time, in seconds, of this attempt. Reject old ones to stop replays. */
                    "webhook-timestamp": components["parameters"]["WebhookTimestampHeader"];
                    /**
                     * @description `v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`. During the
                     *     grace period after a secret rotation, two of them, space-separated: the new secret's first.
                     */
                    "webhook-signature": components["parameters"]["WebhookSignatureHeader"];
                };
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": components["schemas"]["WebhookDetachedEvent"];
                };
            };
            responses: {
                /** @description Received. Any 2xx status counts. */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Gone for good; leadhooks detaches the webhook. */
                410: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
};
export type components = {
    schemas: {
        AccountCreate: {
            name: components["schemas"]["AccountName"];
        };
        /** @description What to change; at least one of `name` and `active`. */
        AccountUpdate: {
            name?: components["schemas"]["AccountName"];
            /** @description False deactivates the client; true activates it again. */
            active?: boolean;
            /**
             * @description How long this client's delivered and failed events are kept, with their deliveries and
             *     attempts, in seconds: at most the server's `RETENTION` (a longer one is refused with
             *     400). `null` removes the client's own period: the server's `RETENTION` applies again.
             */
            retention?: components["schemas"]["RetentionSeconds"] | null;
        };
        /**
         * @description A retention period in seconds (86400 is a day).
         * @example 604800
         */
        RetentionSeconds: number;
        Retention: {
            /**
             * @description Seconds after which the client's delivered and failed events are deleted, with their
             *     deliveries and attempts (a pending delivery's event is kept until it is settled).
             */
            retention: number;
            /** @description True when the lead product set this client's period; false when it is the server's `RETENTION`. */
            own: boolean;
        };
        /**
         * @description The account's name, as `GET /about` answers it.
         * @example Acme Realty
         */
        AccountName: string;
        AccountCreated: {
            clientId: number;
            name: string;
            /** @description The client's first API key, shown this once. */
            apiKey: string;
        };
        Account: {
            clientId: number;
            name: string;
            active: boolean;
            /** Format: date-time */
            createdAt: string;
            /** @description Keys not revoked. */
            activeKeys: number;
            /** @description Webhooks attached (not detached). */
            activeWebhooks: number;
            /** @description The client's own retention period in seconds, as set; null when the server's `RETENTION` applies. */
            retention: number | null;
            /**
             * @description The period retention prunes the client's history by, in seconds: its own, or the
             *     server's `RETENTION` when it has none or when `RETENTION` has since been set shorter.
             */
            retentionApplied: number;
        };
        LeadErasureRequest: {
            leadId: components["schemas"]["LeadId"];
            /** @description Only this client's events of the lead; without it, every client's. */
            clientId?: number;
        };
        LeadErasure: {
            /** @description The lead's id, as text. */
            leadId: string;
            /** @description The client it was erased in; null for every client. */
            clientId: number | null;
            /** @description Events whose payload was erased. */
            events: number;
            /** @description The deliveries of those events (none of them carries the lead any more). */
            deliveries: number;
            /** @description Pending deliveries of the lead cancelled, those waiting their turn included. */
            cancelled: number;
            /** @description Delivery attempts whose error text was erased. */
            attempts: number;
            /** @description Kept Idempotency-Key answers of its publications whose request fingerprint was erased. */
            idempotencyKeys: number;
        };
        AccountPage: {
            clients: components["schemas"]["Account"][];
            /** @description The `after` of the next page; null on the last. */
            next: number | null;
        };
        AccountKeyCreated: {
            keyId: number;
            /** @description The key, shown this once. */
            apiKey: string;
        };
        AccountKey: {
            keyId: number;
            /**
             * @description The key's first 11 characters, to tell keys apart.
             * @example lh_5E_ecKtv
             */
            prefix: string;
            /** Format: date-time */
            createdAt: string;
            /**
             * Format: date-time
             * @description When a request last came with it, to the minute; null if never.
             */
            lastUsedAt: string | null;
            /** Format: date-time */
            revokedAt: string | null;
            /**
             * Format: date-time
             * @description When a portal session's key stops working; null for an ordinary key, which works until revoked.
             */
            expiresAt: string | null;
        };
        AccountKeyList: {
            keys: components["schemas"]["AccountKey"][];
        };
        PortalLinkCreate: {
            /**
             * @description Seconds until the link, and the session it opens, expire (10 minutes by default, at most 24 hours).
             * @default 600
             */
            ttl: number;
            branding?: components["schemas"]["PortalBrandingSet"];
        };
        /**
         * @description How the portal looks when this link opens it, for a lead product that shows it inside
         *     its own pages. Each field left out takes the server's setting (`PORTAL_PRODUCT_NAME`,
         *     `PORTAL_LOGO_URL`, `PORTAL_ACCENT_COLOR`), and without one the portal's own look. The
         *     page writes the name as text and sets the colour as a CSS value it checks again, so
         *     neither can carry markup, script or style.
         * @example {
         *       "productName": "Acme CRM",
         *       "logoUrl": "https://cdn.acme.example/logo.svg",
         *       "accentColor": "#0a7d5a"
         *     }
         */
        PortalBrandingSet: {
            productName?: components["schemas"]["PortalProductName"];
            logoUrl?: components["schemas"]["PortalLogoUrl"];
            accentColor?: components["schemas"]["PortalAccentColor"];
        };
        /**
         * @description The product's name, shown in the portal's header and title in place of leadhooks'. No
         *     control characters, and no invisible formatting characters: the bidirectional controls
         *     (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069), which would turn the text
         *     around the name in the portal's page, nor U+200B, U+2060 to U+2064 and U+FEFF, which show
         *     nothing. The joiners U+200C and U+200D stay allowed: scripts and emoji need them.
         * @example Acme CRM
         */
        PortalProductName: string;
        /**
         * Format: logo-url
         * @description The address of the logo the portal's header shows: an `https` URL without user
         *     information, or `http` on a loopback host (`localhost`, `127.0.0.1`, `[::1]`) for
         *     development and tests. The portal's Content-Security-Policy lets images load from this
         *     address's origin and from no other (its link's address says which, in `?logo=`).
         * @example https://cdn.acme.example/logo.svg
         */
        PortalLogoUrl: string;
        /**
         * @description The colour of the portal's header and main buttons, as `#` and six hex digits; its text is black or white, whichever reads better on it.
         * @example #0a7d5a
         */
        PortalAccentColor: string;
        /** @description The look of the portal for this session, each field from its link or else the server's setting; null where neither sets it. */
        PortalBranding: {
            productName: components["schemas"]["PortalProductName"] | null;
            logoUrl: components["schemas"]["PortalLogoUrl"] | null;
            accentColor: components["schemas"]["PortalAccentColor"] | null;
        };
        PortalLink: {
            /** @description The portal's address with the link's single-use token in its fragment (and, for a logo of the link's own, its origin in `?logo=`). */
            url: string;
            /** Format: date-time */
            expiresAt: string;
        };
        PortalSessionOpen: {
            /** @description The token of the link's fragment (after `#link=`). */
            token: string;
        };
        PortalSession: {
            /** @description The account's name. */
            name: string;
            /** @description The session's key, for `x-api-key`, until `expiresAt` or sign-out. */
            apiKey: string;
            /** Format: date-time */
            expiresAt: string;
            branding: components["schemas"]["PortalBranding"];
        };
        /** @description The one shape of every error response. */
        Error: {
            /**
             * @description What went wrong, for a human to read.
             * @example Client not found
             */
            error: string;
        };
        About: {
            /**
             * @description Account name of the client identified by the API key.
             * @example Acme Realty
             */
            name: string;
        };
        /**
         * @description `x-ratelimit-limit`: requests one API key may make per window (`RATE_LIMIT_PER_KEY`). Sent
         *     with `x-ratelimit-remaining` and `x-ratelimit-reset` on every answer to a request whose
         *     API key was accepted (see "Rate limit" above).
         * @example 600
         */
        RateLimitLimit: number;
        /**
         * @description `x-ratelimit-remaining`: requests left to this API key in the current window, this one
         *     counted, as the answering server knows it. Where several servers share the limit, each
         *     counts as used what the others hold and have not used yet, so the figure may be lower than
         *     what is left (by about an eighth of it per other server at most); it is higher only on a
         *     server's first answers to a key in a window, before it has asked the others' count.
         * @example 599
         */
        RateLimitRemaining: number;
        /**
         * @description `x-ratelimit-reset`: seconds until the current window of this API key ends.
         * @example 42
         */
        RateLimitReset: number;
        /**
         * @description `idempotent-replayed`: sent, as `true`, on an answer replayed from an earlier request with
         *     the same `Idempotency-Key`.
         * @constant
         */
        IdempotentReplayed: "true";
        /**
         * @description A lead event, published by the lead system, that a webhook can subscribe to.
         * @enum {string}
         */
        EventName: "lead_create" | "lead_update";
        /**
         * @description What happened to one of the client's webhooks, that another of its webhooks can subscribe
         *     to (see "Operational events" above). Each is written once, when the webhook's state
         *     changes, never for every attempt: `webhook.failing` when 5 delivery attempts of lead
         *     events to it in a row have failed; `webhook.disabled` when deliveries to it stopped
         *     (`WEBHOOK_DISABLE_AFTER`); `webhook.recovered` at the first successful attempt of a lead
         *     event after `webhook.failing`; `webhook.detached` when its receiver answered `410 Gone`
         *     and it was detached. Attempts of deliveries that carry operational events count toward
         *     none of them but the last, so one never leads to another.
         * @enum {string}
         */
        OperationalEventName: "webhook.failing" | "webhook.disabled" | "webhook.recovered" | "webhook.detached";
        /** @description An event type a webhook can subscribe to, a lead event or an operational event. */
        WebhookEventName: components["schemas"]["EventName"] | components["schemas"]["OperationalEventName"];
        /**
         * Format: http-url
         * @description Absolute http or https URL that deliveries are POSTed to. Format `http-url`: the
         *     pattern checks the shape, and the URL must parse (WHATWG URL) with a host and without
         *     user information: `https://user:password@host/` is refused
         *     (`Invalid data: url must not contain a user name or password`), for a URL is stored,
         *     listed and logged as it is. A receiver knows a delivery is genuine by its signature.
         * @example https://hooks.zapier.com/hooks/standard/123/abc/
         */
        WebhookUrl: string;
        /**
         * @description The events to subscribe to, lead events and operational events (of the client's other
         *     webhooks: `webhook.failing`, ...) alike; duplicates are stored once.
         * @example [
         *       "lead_create",
         *       "lead_update"
         *     ]
         */
        WebhookEvents: components["schemas"]["WebhookEventName"][];
        WebhookCreate: {
            url: components["schemas"]["WebhookUrl"];
            events: components["schemas"]["WebhookEvents"];
            rateLimit?: components["schemas"]["WebhookRateLimit"];
            ordered?: components["schemas"]["WebhookOrdered"];
            headers?: components["schemas"]["WebhookHeaders"];
            filter?: components["schemas"]["LeadFilter"];
        };
        /**
         * @description Whether the events of one lead (those published with the same `leadId`) reach this
         *     webhook one at a time, in the order they were published: `true` unless set otherwise.
         *     `false` sends them in parallel, as events without a `leadId` are, for a receiver that
         *     puts them in order itself (by their `timestamp`) and wants a backlog drained sooner.
         *     Turning it off sends at once the events that were waiting behind an earlier one of
         *     their lead; turning it on orders the events published from then on.
         * @default true
         * @example true
         */
        WebhookOrdered: boolean;
        /**
         * @description Headers sent with every delivery attempt and every test send to the webhook, for a
         *     receiver behind its own authentication (`Authorization: Bearer ...`, `X-Api-Key: ...`):
         *     header name to value. At most 10 headers. A name is an HTTP token (RFC 9110: letters,
         *     digits and ``!#$%&'*+-.^_`|~``) of 1 to 64 characters; names are case-insensitive, so two
         *     may not differ only in case. A value is 1 to 2048 visible ASCII characters, spaces allowed
         *     inside but not at either end: no control character (CR, LF, NUL, tab...) and nothing
         *     outside ASCII. The names leadhooks sets itself or that would break the request are
         *     refused, in any case (`x-reserved-names`, `x-reserved-prefixes`): `Host`,
         *     `Content-Length`, `Content-Type`, `Content-Encoding` (the body is always sent as plain
         *     JSON, so a receiver told otherwise would fail to read it), `Transfer-Encoding`,
         *     `Connection`, `Keep-Alive`, `Upgrade`, `TE`, `Trailer`, `Expect`, `User-Agent`, any
         *     `Proxy-*` and any `Webhook-*` (the Standard Webhooks headers). `null` or `{}`: no headers.
         *
         *     The values are secrets: stored encrypted like the signing secret (with
         *     `SECRET_ENCRYPTION_KEY`), never logged, and never shown again whole (see
         *     `WebhookSummary.headers`).
         * @example {
         *       "Authorization": "Bearer 3f8a0c5e1b7d4a96"
         *     }
         */
        WebhookHeaders: {
            [key: string]: string;
        } | null;
        /**
         * @description The webhook's custom headers (`headers` of `POST /webhook` and `PATCH /webhook/{hookID}`),
         *     by name as they were set, each value masked: `…` and the value's last 4 characters when it
         *     has at least 16 (as dashboards show the last 4 characters of an API key), `…` alone when
         *     it is shorter. A value is never shown whole. `{}` when it has none.
         * @example {
         *       "Authorization": "…4a96"
         *     }
         */
        WebhookHeadersShown: {
            [key: string]: string;
        };
        /**
         * @description Which leads the webhook gets: a published event makes a delivery to it only when its
         *     `data` matches. Without a filter (`null`, or none given) it gets every lead of its events.
         *     A MongoDB-like query over the lead's fields; the keys of one object must all hold:
         *
         *     - `{"campaign": "spring"}`: the field equals the value (a string, number, boolean, `null`,
         *       or a whole object or list). `null` also matches a field that is absent. A field that
         *       holds a list matches when the list equals the value or one of its items does.
         *     - `{"score": {"$gte": 10, "$lt": 20}}`: `$gt`, `$gte`, `$lt`, `$lte` compare numbers
         *       with numbers, and ISO 8601 date-times (`2026-11-01`, `2026-11-01T08:00:00Z`) with
         *       date-times, as instants. A field of another type does not match.
         *     - `{"source": {"$in": ["ads", "seo"]}}`: the field equals one of the list's values.
         *     - `{"phone": {"$exists": true}}`: the field is there (`null` counts), or with `false`, not.
         *     - `{"$and": [...]}`, `{"$or": [...]}`: all, or at least one, of a list of filters;
         *       `{"$not": {...}}`: the filter does not match.
         *     - `"address.country"`: a dotted path reads a field of a nested object (or an item of a
         *       list, by its position: `"tags.0"`).
         *
         *     Checked when set: an unknown operator, a path with an empty name, an operand of the wrong
         *     kind, a number a 64-bit float does not hold exactly (`1e400`, `1234567890123456789`:
         *     write such an id as a string), more levels of nesting than `maxDepth` or more bytes of
         *     JSON than `maxBytes` are refused with `Invalid data: filter ...`, naming what is wrong.
         *     A client's filters together, over all its webhooks not detached, may hold at most
         *     `maxClientBytes` bytes of JSON: a filter that would bring them past it is refused with
         *     `Invalid data: filter would bring the client's filters past <maxClientBytes> bytes of
         *     JSON together`. Each publication runs every filter of its client, at a cost that grows
         *     with the lead's size plus the filters' (never their product); the bounds keep it small.
         * @example {
         *       "campaign": "spring",
         *       "score": {
         *         "$gte": 50
         *       },
         *       "$or": [
         *         {
         *           "address.country": "FR"
         *         },
         *         {
         *           "source": {
         *             "$in": [
         *               "ads",
         *               "seo"
         *             ]
         *           }
         *         }
         *       ]
         *     }
         */
        LeadFilter: {
            [key: string]: unknown;
        } | null;
        /**
         * @description Deliveries per second this webhook gets at most, instead of the server's default
         *     (`DELIVERY_RATE_LIMIT`, 30 unless configured otherwise). Deliveries beyond it wait in the
         *     outbox, in order, and are sent as the rate allows; none fails because of it.
         * @example 10
         */
        WebhookRateLimit: number;
        /**
         * @description What to change; at least one of `url`, `events`, `paused`, `rateLimit`, `ordered`,
         *     `headers` and `filter`. The fields are checked as those of `WebhookCreate`. `headers` replaces the
         *     whole set: the headers it does not name are removed, and `null` or `{}` removes them all;
         *     `filter: null` removes the filter.
         */
        WebhookUpdate: {
            url?: components["schemas"]["WebhookUrl"];
            events?: components["schemas"]["WebhookEvents"];
            /** @description `true` holds the deliveries to the webhook in the outbox; `false` sends them. */
            paused?: boolean;
            rateLimit?: components["schemas"]["WebhookRateLimit"];
            /** @description See `WebhookOrdered`. */
            ordered?: boolean;
            headers?: components["schemas"]["WebhookHeaders"];
            filter?: components["schemas"]["LeadFilter"];
        };
        WebhookCreated: {
            /**
             * @description Identifier of the new webhook, used as `{hookID}` to detach it.
             * @example 42
             */
            hookId: number;
            /**
             * @description The same number as `hookId`, for platforms that read `id`.
             * @example 42
             */
            id: number;
            /**
             * @description The webhook's signing secret in Standard Webhooks form. Shown only in this response
             *     (and in its replays under the same `Idempotency-Key`, for 24 hours).
             * @example whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
             */
            secret: string;
        };
        WebhookSecretRotated: {
            /**
             * @description The webhook whose secret was rotated.
             * @example 42
             */
            hookId: number;
            /**
             * @description The webhook's new signing secret, in Standard Webhooks form. Shown only in this answer
             *     (and in its replays under the same `Idempotency-Key`, for 24 hours).
             * @example whsec_3mD9qfI0aV8d2vZq0m3yJ8kPj6nQyU1x
             */
            secret: string;
            /**
             * Format: date-time
             * @description Until when deliveries are signed with the previous secret as well (ISO 8601).
             * @example 2026-11-23T09:30:00.000Z
             */
            previousSecretExpiresAt: string;
        };
        Health: {
            /** @constant */
            status: "ok";
        };
        WebhookSummary: {
            /** @example 42 */
            hookId: number;
            /** @example https://hooks.zapier.com/hooks/standard/123/abc/ */
            url: string;
            events: components["schemas"]["WebhookEventName"][];
            /**
             * Format: date-time
             * @description When the webhook was attached.
             */
            created: string;
            /**
             * @description `disabled` when deliveries to it were stopped because every attempt of a lead event
             *     failed for `WEBHOOK_DISABLE_AFTER` (see `disabledReason`;
             *     `POST /webhook/{hookID}/enable` resumes them); otherwise `failing` when the most
             *     recent delivery attempt of a lead event to it failed, and `active` when it succeeded
             *     or none was made (attempts of operational events do not count: see "Operational
             *     events" above). Enabling a disabled webhook
             *     makes it `active` until an attempt fails.
             * @enum {string}
             */
            status: "active" | "failing" | "disabled";
            /**
             * @description Whether the webhook is paused (`PATCH /webhook/{hookID}`): its deliveries wait in the
             *     outbox until it is resumed.
             */
            paused: boolean;
            /**
             * @description Deliveries per second the webhook gets at most: its own `rateLimit`, or the server's
             *     default. `null`: no limit (the server's default is `off` and the webhook has none).
             * @example 30
             */
            rateLimit: number | null;
            /** @description Whether a lead's events reach the webhook one at a time, in order (`WebhookOrdered`). */
            ordered: boolean;
            headers: components["schemas"]["WebhookHeadersShown"];
            /**
             * Format: date-time
             * @description When the webhook was disabled; null unless `status` is `disabled`.
             */
            disabledAt: string | null;
            /**
             * @description Why the webhook was disabled, with the last attempt's status or error, such as
             *     `every delivery attempt failed for at least 5 days (last: HTTP 503)`; null unless
             *     `status` is `disabled`.
             */
            disabledReason: string | null;
            /**
             * @description The webhook's filter (`LeadFilter`), as it was set; absent when it has none and gets
             *     every lead of its events.
             * @example {
             *       "campaign": "spring"
             *     }
             */
            filter?: {
                [key: string]: unknown;
            };
        };
        WebhookList: {
            webhooks: components["schemas"]["WebhookSummary"][];
            /** @description Pass as `after` for the next page; null on the last page. */
            next: number | null;
        };
        WebhookTestResult: {
            /** @description The `webhook-id` the test event carried. */
            eventId: string;
            /** @description The receiver's HTTP status; null when no response came. */
            statusCode: number | null;
            /**
             * @description Why no response came (timeout, connection error, blocked address), or a redirect,
             *     which is not followed. Null for any other status.
             */
            error: string | null;
            /** @description How long the attempt took, until the status arrived or it failed. */
            durationMs: number;
            /** @description Whether the receiver answered 2xx, which a delivery would count as received. */
            succeeded: boolean;
        };
        DeliveryAttempt: {
            attemptId: number;
            /**
             * @description The delivery (one event to this webhook) the attempt belongs to; every attempt of it,
             *     retries and resends, has the same. `POST /webhook/{hookID}/deliveries/{deliveryId}/retry`
             *     resends it.
             */
            deliveryId: number;
            /** @description The event delivered, also sent as the `webhook-id` header. */
            eventId: string;
            type: components["schemas"]["WebhookEventName"];
            /** Format: date-time */
            attemptedAt: string;
            /** @description The receiver's HTTP status; null when no response came. */
            statusCode: number | null;
            /**
             * @description Why the attempt failed: no response (timeout, connection error, blocked address), or
             *     a redirect, which is not followed. Null for any other status.
             */
            error: string | null;
            durationMs: number;
            /**
             * @description `succeeded`: a 2xx. `retrying`: failed, another attempt is scheduled. `failed`: failed
             *     and it was the last attempt. `gone`: the receiver answered 410 and the webhook was detached.
             *     `disabled`: failed, and every attempt to the webhook had failed for `WEBHOOK_DISABLE_AFTER`,
             *     so this attempt disabled it: this delivery and the others still pending are `failed`, and
             *     nothing more is delivered until the webhook is enabled again (`POST /webhook/{hookID}/enable`).
             * @enum {string}
             */
            outcome: "succeeded" | "retrying" | "failed" | "gone" | "disabled";
            /**
             * @description True for an attempt asked for by `POST /webhook/{hookID}/deliveries/{deliveryId}/retry`
             *     or `POST /webhook/{hookID}/recover`, false for the attempts of the delivery schedule.
             */
            replay: boolean;
            /**
             * @description Present, and true, when the event's lead was erased (`POST /admin/erasures`): its
             *     payload is gone, and so is the attempt's `error`. Such a delivery cannot be resent.
             * @constant
             */
            erased?: true;
        };
        DeliveryAttemptPage: {
            attempts: components["schemas"]["DeliveryAttempt"][];
            /** @description Pass as `before` for the next page; null on the last page. */
            next: number | null;
        };
        DeliveryRequeued: {
            deliveryId: number;
            /** @description The event resent, the `webhook-id` header of the attempt, as before. */
            eventId: string;
            /**
             * Format: date-time
             * @description When the attempt is due (now); the worker makes it as soon as a slot is free.
             */
            dueAt: string;
        };
        RecoverRequest: {
            /**
             * Format: date-time
             * @description RFC 3339 date-time with a time zone (`Z` or an offset), not in the future: the range
             *     starts here, this instant included.
             * @example 2026-11-22T08:00:00Z
             */
            since: string;
            /**
             * Format: date-time
             * @description RFC 3339 date-time with a time zone, later than `since`: the range ends here, this
             *     instant excluded. Optional: without it, the range runs to now.
             * @example 2026-11-22T09:00:00Z
             */
            until?: string;
            /**
             * @description False, or absent: failed deliveries of events published in the range are sent
             *     again. True: events of the range that the webhook has no delivery of (published while
             *     it was disabled), about leads its filter (if any) wants, are sent to it, each as a
             *     new delivery.
             */
            missed?: boolean;
        };
        RecoverAccepted: {
            /** @description Deliveries queued by this request (failed ones, or new ones of missed events), at most 1000. */
            queued: number;
            /** @description True when more are left in the range; call again with the same body for them. */
            more: boolean;
        };
        /**
         * @description The lead: a JSON object with whatever fields the lead system gives it. leadhooks reads
         *     none of them and passes the object through to the receivers as it was published.
         * @example {
         *       "id": 981,
         *       "name": "Jane Doe",
         *       "email": "jane@example.com",
         *       "tags": [
         *         "buyer"
         *       ]
         *     }
         */
        Lead: {
            [key: string]: unknown;
        };
        /**
         * @description The lead's id in the lead system, as the event was published with it: a string of 1 to 128
         *     characters or an integer from 0 to 2^53 - 1 (`981` and `"981"` name the same lead).
         * @example 981
         * @example lead-7f3a
         */
        LeadId: string | number;
        PublishEvent: {
            /**
             * @description The client (account) whose webhooks receive the event.
             * @example 1
             */
            clientId: number;
            type: components["schemas"]["EventName"];
            data: components["schemas"]["Lead"];
            /**
             * @description The lead the event is about, in the lead system's words: a string of 1 to 128
             *     characters or an integer from 0 to 2^53 - 1 (`981` and `"981"` name the same lead).
             *     Events that carry it are delivered to each webhook in the order they were published,
             *     one lead at a time: the next of a lead's events is not attempted until the one before
             *     it succeeded or was given up (failed for good, cancelled, or its webhook detached by a
             *     `410`). Events of other leads, and events without a `leadId`, are not held up by it.
             *     A webhook may opt out (`ordered: false`, see `WebhookOrdered`). The deliveries' body
             *     carries it, as `GET /events` does.
             */
            leadId?: components["schemas"]["LeadId"];
        };
        PublishEventBatch: {
            events: components["schemas"]["PublishEvent"][];
        };
        EventBatchAccepted: {
            /** @description One result per item of the request's `events`, in the same order. */
            results: (components["schemas"]["EventAccepted"] | components["schemas"]["Error"])[];
        };
        EventAccepted: {
            /** @example evt_2hXKoT3mYbQ9vR1cLs8wPe */
            eventId: string;
            /**
             * @description The number of webhooks the event will be delivered to.
             * @example 2
             */
            deliveries: number;
        };
        /**
         * Format: date-time
         * @description When the event was published.
         * @example 2026-11-22T09:31:00.000Z
         */
        EventTimestamp: string;
        /** @description The body of a delivery, of any event type. */
        LeadEvent: {
            type: components["schemas"]["EventName"];
            timestamp: components["schemas"]["EventTimestamp"];
            data: components["schemas"]["Lead"];
            leadId?: components["schemas"]["LeadId"];
        };
        /**
         * lead_create
         * @description The body of a `lead_create` delivery.
         */
        LeadCreateEvent: {
            /** @constant */
            type: "lead_create";
            timestamp: components["schemas"]["EventTimestamp"];
            data: components["schemas"]["Lead"];
            leadId?: components["schemas"]["LeadId"];
        };
        /**
         * lead_update
         * @description The body of a `lead_update` delivery.
         */
        LeadUpdateEvent: {
            /** @constant */
            type: "lead_update";
            timestamp: components["schemas"]["EventTimestamp"];
            data: components["schemas"]["Lead"];
            leadId?: components["schemas"]["LeadId"];
        };
        /** @description The webhook an operational event is about, and what happened to it. */
        OperationalEventData: {
            /**
             * @description The webhook it is about (another of the client's webhooks than the one receiving it).
             * @example 43
             */
            hookId: number;
            /**
             * @description The client (account) the webhook belongs to.
             * @example 1
             */
            clientId: number;
            /**
             * @description The webhook's URL, as `GET /webhook/{hookID}` shows it.
             * @example https://crm.example.com/leadhooks
             */
            url: string;
            /**
             * @description What happened, in words.
             * @example 5 delivery attempts in a row failed (last: HTTP 503)
             */
            reason: string;
        };
        /** @description The body of an operational event's delivery, of any operational type. */
        OperationalEventBody: {
            type: components["schemas"]["OperationalEventName"];
            timestamp: components["schemas"]["EventTimestamp"];
            data: components["schemas"]["OperationalEventData"];
        };
        /**
         * webhook.failing
         * @description The body of a `webhook.failing` delivery.
         */
        WebhookFailingEvent: {
            /** @constant */
            type: "webhook.failing";
            timestamp: components["schemas"]["EventTimestamp"];
            data: components["schemas"]["OperationalEventData"];
        };
        /**
         * webhook.disabled
         * @description The body of a `webhook.disabled` delivery.
         */
        WebhookDisabledEvent: {
            /** @constant */
            type: "webhook.disabled";
            timestamp: components["schemas"]["EventTimestamp"];
            data: components["schemas"]["OperationalEventData"];
        };
        /**
         * webhook.recovered
         * @description The body of a `webhook.recovered` delivery.
         */
        WebhookRecoveredEvent: {
            /** @constant */
            type: "webhook.recovered";
            timestamp: components["schemas"]["EventTimestamp"];
            data: components["schemas"]["OperationalEventData"];
        };
        /**
         * webhook.detached
         * @description The body of a `webhook.detached` delivery.
         */
        WebhookDetachedEvent: {
            /** @constant */
            type: "webhook.detached";
            timestamp: components["schemas"]["EventTimestamp"];
            data: components["schemas"]["OperationalEventData"];
        };
        /**
         * @description One event of `GET /events`: the body its deliveries carry (`type`, `timestamp`, `data`,
         *     the same values) and the event's `id`; or, once its lead was erased
         *     (`POST /admin/erasures`), its `id`, `type` and `timestamp` alone, with `erased: true`.
         */
        RecentEvent: components["schemas"]["LiveEvent"] | components["schemas"]["ErasedEvent"];
        LiveEvent: {
            id: components["schemas"]["EventId"];
            type: components["schemas"]["EventName"];
            timestamp: components["schemas"]["EventTimestamp"];
            data: components["schemas"]["Lead"];
            leadId?: components["schemas"]["LeadId"];
        };
        /** @description An event whose lead was erased; its payload is gone. */
        ErasedEvent: {
            id: components["schemas"]["EventId"];
            type: components["schemas"]["EventName"];
            timestamp: components["schemas"]["EventTimestamp"];
            /** @constant */
            erased: true;
            /** Format: date-time */
            erasedAt: string;
        };
        /**
         * @description The event's id, sent as the `webhook-id` header of its deliveries.
         * @example evt_5dc4603c2658ea0b1e706b843bb8f7fc
         */
        EventId: string;
        EventPage: {
            events: components["schemas"]["RecentEvent"][];
            /** @description Pass as `before` for the next page; null on the last page. */
            next: number | null;
        };
        EventType: {
            type: components["schemas"]["WebhookEventName"];
            /**
             * @description What happened, in a few words.
             * @example A lead was created
             */
            summary: string;
            /**
             * @description The JSON Schema (2020-12) of the body delivered for this type, self-contained (no
             *     `$ref`): as the `webhooks` section of this description states it.
             */
            schema: {
                [key: string]: unknown;
            };
            /** @description Bodies of this type, as the `webhooks` section gives them. */
            examples: (components["schemas"]["LeadEvent"] | components["schemas"]["OperationalEventBody"])[];
        };
        EventTypeList: {
            types: components["schemas"]["EventType"][];
        };
        OperationalEvent: {
            /**
             * @description The event's place in the feed; pass the last one seen as `after`.
             * @example 7
             */
            id: number;
            type: components["schemas"]["OperationalEventName"];
            /**
             * @description The webhook it is about.
             * @example 43
             */
            hookId: number;
            /**
             * @description The client (account) the webhook belongs to, as `POST /events` names it.
             * @example 1
             */
            clientId: number;
            /**
             * @description What happened, in words: for `webhook.disabled`, the words the client reads in the
             *     webhook's `disabledReason`.
             * @example every delivery attempt failed for at least 5 days (last: HTTP 503)
             */
            reason: string;
            /**
             * Format: date-time
             * @description When it happened.
             */
            createdAt: string;
            /**
             * @description The `webhook-id` of its deliveries to the client's webhooks subscribed to it and to
             *     `OPERATIONAL_EVENTS_URL`: deduplicate on it. Null for an event written before the
             *     server delivered operational events.
             * @example evt_0193a1f2c3d4b5e6f708192a3b4c5d6e
             */
            eventId: string | null;
        };
        AuditLogPage: {
            entries: components["schemas"]["AuditEntry"][];
            /** @description The `entryId` of the page's last entry, to pass as `before`; null on the last page. */
            next: number | null;
        };
        AuditEntry: {
            /** @example 12 */
            entryId: number;
            /**
             * Format: date-time
             * @description When the change was made.
             */
            at: string;
            actor: components["schemas"]["AuditActor"];
            /**
             * @description The address the request came from; null for the command-line tool.
             * @example 203.0.113.7
             */
            ip: string | null;
            action: components["schemas"]["AuditAction"];
            /** @description The client (account) the change was made to; null for a lead erased in every client. */
            clientId: number | null;
            /**
             * @description What the action names: the client's id for `account.*`, the key's `keyId` for `key.*`
             *     and `portal_session.*` (a session is a key), the webhook's `hookId` for `webhook.*`;
             *     null for `portal_link.created` (a link has no id of its own) and `lead.erased` (a lead's
             *     id is the lead product's, in `changes`).
             */
            targetId: number | null;
            /**
             * @description The fields the change set, by name, with their new values as the API shows them,
             *     secrets left out: a key's or a session's `prefix` (never the key), a webhook's `url`,
             *     `events`, `paused`, `rateLimit`, `ordered`, `filter`, and its custom `headers` by name
             *     only (`[]` when they were removed); an account's `name`, `active` and `retention`; a
             *     portal link's and a session's `expiresAt`; a rotated secret's
             *     `previousSecretExpiresAt` (never the secret); an erasure's `leadId` and what it counted
             *     (`events`, `deliveries`, `cancelled`, `attempts`, `idempotencyKeys`), never the lead's
             *     data. `{}` when the action says it all.
             */
            changes: {
                [key: string]: unknown;
            };
        };
        /**
         * @description Who made a change: `admin`, the admin token (`ADMIN_TOKEN`); `apiKey`, a client's API key,
         *     by its id and prefix (`lh_` and the 8 characters `GET /admin/clients/{clientId}/keys`
         *     shows); `portal`, a portal session, by its key's id and prefix; `cli`, the command-line
         *     tool `leadhooks`, run by whoever can read the server's configuration.
         */
        AuditActor: {
            /** @enum {string} */
            kind: "admin" | "apiKey" | "portal" | "cli";
            /** @description The key's `keyId` (`apiKey` and `portal`). */
            keyId?: number;
            /**
             * @description The key's prefix (`apiKey` and `portal`).
             * @example lh_Zr3c1mO2
             */
            prefix?: string;
        };
        /**
         * @description What was done: `account.created`, `account.updated` (renamed, deactivated or reactivated,
         *     or its retention period set: see `changes`); `key.created`, `key.revoked`;
         *     `webhook.created`, `webhook.updated` (any field of `PATCH /webhook/{hookID}`: its URL,
         *     events, pause, rate, order, filter or custom headers), `webhook.enabled`,
         *     `webhook.detached`, `webhook.secret_rotated`; `portal_link.created`,
         *     `portal_session.opened`, `portal_session.ended`; `lead.erased` (`POST /admin/erasures`).
         * @enum {string}
         */
        AuditAction: "account.created" | "account.updated" | "key.created" | "key.revoked" | "webhook.created" | "webhook.updated" | "webhook.enabled" | "webhook.detached" | "webhook.secret_rotated" | "portal_link.created" | "portal_session.opened" | "portal_session.ended" | "lead.erased";
        OperationalEventPage: {
            events: components["schemas"]["OperationalEvent"][];
            /** @description The `id` of the page's last event, to pass as `after`; null for an empty page. */
            next: number | null;
        };
    };
    responses: {
        /** @description The bearer token is missing or wrong, or the server has no `ADMIN_TOKEN` configured. */
        AdminUnauthorized: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /**
         * @description `Missing data`: a body is needed and there is none, it is not a JSON object, or a required
         *     field is absent or empty. `Invalid data: ...`: a parameter or a field does not match this
         *     description, named with what it must be (see "Errors" above).
         */
        AdminInvalid: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description An unexpected failure. Details go to the server's log, never to the caller. */
        AdminInternal: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description No client has this id. */
        AccountNotFound: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /**
         * @description The `x-api-key` header is missing, empty, unknown or revoked. A refused request counts
         *     against no key's rate limit, so this answer carries no `x-ratelimit-*` header.
         */
        Unauthorized: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /**
         * @description Too many requests with this API key in the current window (`RATE_LIMIT_PER_KEY`, 600 a
         *     minute by default); other keys are not affected. Or, before any key is checked, too many
         *     failed authentications from the caller's address (`AUTH_FAILURE_LIMIT`, see
         *     `AuthenticationsLimited`): that answer carries no `x-ratelimit-*` header, since no key
         *     was accepted. Either way, wait `retry-after` seconds.
         */
        RateLimited: {
            headers: {
                /** @description Seconds until the window resets. */
                "retry-after": number;
                /** @description Requests one API key may make per window (absent on the refusal of an address). */
                "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                /** @description Requests left to this key in the current window, here 0 (absent on the refusal of an address). */
                "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                /** @description Seconds until the window resets (absent on the refusal of an address). */
                "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /**
         * @description Too many failed authentications from the caller's address: `AUTH_FAILURE_LIMIT` (20 a
         *     minute by default) wrong API keys, publisher tokens or admin tokens, counted together,
         *     per address (an IPv6 address by its /64), in a window that opens at the first failure.
         *     Until the window ends, the address's requests to the operations that need a credential
         *     are answered with this, before the credential is checked. Only failures count: a missing
         *     credential or a request that passes is not one. A key or token that passed in the window
         *     is still checked and served from a refused address, so that a client sharing its address
         *     (an automation platform's, a NAT, a load balancer's) with a caller that fails keeps
         *     working; one not seen to pass waits for the window to end. Each server process counts on
         *     its own. Wait `retry-after` seconds.
         */
        AuthenticationsLimited: {
            headers: {
                /** @description Seconds until the address's window ends. */
                "retry-after": number;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description The request body is larger than the server accepts. */
        TooLarge: {
            headers: {
                "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description A body was sent with a content type other than JSON. */
        UnsupportedMediaType: {
            headers: {
                "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /**
         * @description An unexpected failure. Details go to the server's log, never to the client. A failure
         *     while the API key was being checked is answered without the `x-ratelimit-*` headers.
         */
        InternalError: {
            headers: {
                "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /**
         * @description The database does not answer: PostgreSQL unreachable, a network to it that carries nothing
         *     (a statement unanswered past its timeouts), or a server still waiting for it at start, which
         *     answers so on every operation rather than 404. A write's outcome is unknown:
         *     PostgreSQL may have committed it just before its answer was lost (a fact of any database).
         *     Retry after `retry-after` with the same `Idempotency-Key`: a write that was kept answers
         *     as it first did, and nothing is made twice; without a key, a retry may make a second
         *     event or webhook. The service recovers by itself when the database is back. The
         *     `x-ratelimit-*` headers come with it when the API key was checked before the database
         *     went away.
         */
        Unavailable: {
            headers: {
                /** @description Seconds to wait before retrying. */
                "retry-after": string;
                "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
    };
    parameters: {
        /** @description The `hookId` returned when the webhook was attached. */
        HookID: number;
        /** @description The `deliveryId` of an attempt in the webhook's delivery log. */
        DeliveryID: number;
        /** @description The client's id (`clientId`). */
        ClientID: number;
        /**
         * @description A key the caller chooses for this request, to retry it safely: a retry with the same key
         *     and the same body within 24 hours gets the first answer again and changes nothing. Keys
         *     are the calling client's own (the publisher's, for `POST /events`). A UUID will do.
         */
        IdempotencyKey: string;
        /** @description The event's id; the same on every retry. Deduplicate on it. */
        WebhookIdHeader: string;
        /** @description Unix time, in seconds, of this attempt. Reject old ones to stop replays. */
        WebhookTimestampHeader: string;
        /**
         * @description `v1,` and the base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}`. During the
         *     grace period after a secret rotation, two of them, space-separated: the new secret's first.
         */
        WebhookSignatureHeader: string;
    };
    requestBodies: never;
    headers: never;
    pathItems: never;
};
export type $defs = Record<string, never>;
export interface operations {
    getAbout: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The account of the client identified by the key. */
            200: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["About"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    getRetention: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The client's retention period. */
            200: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Retention"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    listWebhooks: {
        parameters: {
            query?: {
                /** @description Webhooks per page. */
                limit?: number;
                /** @description The `next` cursor of the previous page; `0`, or absent, starts at the first. */
                after?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of the client's webhooks. */
            200: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookList"];
                };
            };
            /** @description `Invalid data: ...` for a `limit` or `after` out of range. */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description A key the caller chooses for this request, to retry it safely: a retry with the same key
                 *     and the same body within 24 hours gets the first answer again and changes nothing. Keys
                 *     are the calling client's own (the publisher's, for `POST /events`). A UUID will do.
                 */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookCreate"];
            };
        };
        responses: {
            /**
             * @description The webhook is attached. With `idempotent-replayed: true`, this is the answer given to
             *     an earlier request with the same `Idempotency-Key`: nothing new was attached.
             */
            201: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    /** @description `true` on the stored answer of an earlier request with the same `Idempotency-Key`; absent otherwise. */
                    "idempotent-replayed"?: components["schemas"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookCreated"];
                };
            };
            /**
             * @description The body is missing or invalid. `Missing data` when there is no body, the body is not
             *     a JSON object, or `url` or `events` is absent, `null`, `""` or `[]`. `Invalid data: ...`
             *     when a field is present but wrong: `url` not an absolute http(s) URL with a host or
             *     longer than 2048 characters, `events` not an array of `lead_create` / `lead_update`,
             *     `rateLimit` not a whole number from 1 to 1000, `headers` not as `WebhookHeaders` says
             *     (the answer names the header, never its value), `filter` not a valid `LeadFilter`
             *     (`Invalid data: filter ...`, naming the operator or path at fault, or the bound it
             *     passes). `Invalid data: Idempotency-Key ...`
             *     when that header is empty, longer than 255 characters, or holds a character other
             *     than visible ASCII. `Invalid data: JSON may nest ...` when the body nests objects and
             *     arrays more than 64 levels deep (see Errors above).
             */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /**
             * @description `Webhook limit reached`: the client already has as many active webhooks as the server
             *     allows (`MAX_WEBHOOKS_PER_CLIENT`, 100 by default). Detach one first. This answer is
             *     stored under the request's `Idempotency-Key` like a success: retry with a new key.
             *
             *     `Idempotency-Key in use ...`: a request with the same key is still running (in this
             *     process or another). Retry once it has answered, to get its answer.
             */
            409: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    /** @description `true` on the stored answer of an earlier request with the same `Idempotency-Key`; absent otherwise. */
                    "idempotent-replayed"?: components["schemas"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            /**
             * @description The `Idempotency-Key` was used, within the last 24 hours, for a request with another
             *     body. Nothing was done; use a new key for a new request.
             */
            422: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    getWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The `hookId` returned when the webhook was attached. */
                hookID: components["parameters"]["HookID"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The webhook. */
            200: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookSummary"];
                };
            };
            /** @description The hookID is missing, empty, `undefined`, `null` or not a positive integer. */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The calling client has no webhook with this id (never attached, detached, or another client's). */
            404: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The `hookId` returned when the webhook was attached. */
                hookID: components["parameters"]["HookID"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The webhook is detached. The body is empty. */
            204: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /**
             * @description The hookID is missing, empty, `undefined`, `null` or not a positive integer (as
             *     happens when a caller forgets to keep the `hookId` of the creation response).
             */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The calling client has no webhook with this id. */
            404: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    updateWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The `hookId` returned when the webhook was attached. */
                hookID: components["parameters"]["HookID"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookUpdate"];
            };
        };
        responses: {
            /** @description The webhook, changed. */
            200: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookSummary"];
                };
            };
            /**
             * @description `Webhook ID is undefined` for a hookID that is not a positive integer. Then the body:
             *     `Missing data` when there is none, it is not a JSON object, it names none of `url`,
             *     `events`, `paused`, `rateLimit`, `ordered`, `headers` and `filter`, or one it names (but
             *     `headers` and `filter`) is `null`, `""` or `[]`; `Invalid data: ...` when `url` is not an
             *     absolute http(s) URL with a host or longer than 2048 characters, `events` not an array
             *     of `lead_create` / `lead_update`, `paused` not a boolean, `rateLimit` not a whole number
             *     from 1 to 1000, `headers` not as `WebhookHeaders` says (the answer names the header,
             *     never its value), or `filter` not a valid `LeadFilter`. `Invalid data: JSON may nest ...` when
             *     the body nests objects and arrays more than 64 levels deep (see Errors above).
             */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The calling client has no webhook with this id (never attached, detached, or another client's). */
            404: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                /** @description Attempts per page. */
                limit?: number;
                /** @description The `next` cursor of the previous page. */
                before?: number;
            };
            header?: never;
            path: {
                /** @description The `hookId` returned when the webhook was attached. */
                hookID: components["parameters"]["HookID"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of attempts, newest first. */
            200: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeliveryAttemptPage"];
                };
            };
            /**
             * @description `Webhook ID is undefined` for a hookID that is not a positive integer;
             *     `Invalid data: ...` for a `limit` or `before` out of range.
             */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The calling client has no webhook with this id. */
            404: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    testWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The `hookId` returned when the webhook was attached. */
                hookID: components["parameters"]["HookID"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The test event was sent (or could not be); the body says how it went. */
            200: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookTestResult"];
                };
            };
            /** @description The hookID is missing, empty, `undefined`, `null` or not a positive integer. */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The calling client has no webhook with this id (never attached, detached, or another client's). */
            404: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    retryWebhookDelivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The `hookId` returned when the webhook was attached. */
                hookID: components["parameters"]["HookID"];
                /** @description The `deliveryId` of an attempt in the webhook's delivery log. */
                deliveryId: components["parameters"]["DeliveryID"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The attempt is queued, due now. */
            202: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeliveryRequeued"];
                };
            };
            /**
             * @description `Webhook ID is undefined` for a hookID that is not a positive integer;
             *     `Invalid data: deliveryId must be a positive integer` for such a deliveryId.
             */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /**
             * @description `Webhook not found`: the calling client has no webhook with this id (never existed,
             *     detached, or another client's). `Delivery not found`: the webhook has no delivery
             *     with this id (another webhook's, or pruned with its event after the retention period).
             */
            404: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /**
             * @description The delivery is still pending: an attempt is already queued (or in flight). It is made
             *     at its due time; resend it once it has settled. Or `Delivery of an erased lead: there is
             *     nothing left to send`: its lead was erased (`POST /admin/erasures`).
             */
            409: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    recoverWebhookDeliveries: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The `hookId` returned when the webhook was attached. */
                hookID: components["parameters"]["HookID"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RecoverRequest"];
            };
        };
        responses: {
            /** @description The failed deliveries found, or the missed events' new deliveries, are queued. */
            202: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RecoverAccepted"];
                };
            };
            /**
             * @description `Webhook ID is undefined` for a hookID that is not a positive integer. `Missing data`
             *     when there is no body, the body is not a JSON object, or `since` is absent, `null` or
             *     `""`. `Invalid data: ...` when `since` or `until` is not an RFC 3339 date-time with a
             *     time zone, `since` is in the future, `until` is not later than `since`, or `missed` is
             *     not true or false. `Invalid data: JSON may nest ...` when the body nests objects and
             *     arrays more than 64 levels deep (see Errors above).
             */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The calling client has no webhook with this id (never existed, detached, or another client's). */
            404: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    rotateWebhookSecret: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description A key the caller chooses for this request, to retry it safely: a retry with the same key
                 *     and the same body within 24 hours gets the first answer again and changes nothing. Keys
                 *     are the calling client's own (the publisher's, for `POST /events`). A UUID will do.
                 */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path: {
                /** @description The `hookId` returned when the webhook was attached. */
                hookID: components["parameters"]["HookID"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /**
             * @description The webhook signs with the new secret from now on, and with the previous one too until
             *     `previousSecretExpiresAt`. With `idempotent-replayed: true`, this is the answer given to
             *     an earlier request with the same `Idempotency-Key`: nothing was rotated this time.
             */
            200: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    "idempotent-replayed"?: components["schemas"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookSecretRotated"];
                };
            };
            /**
             * @description `Webhook ID is undefined` for a hookID that is not a positive integer;
             *     `Invalid data: ...` for an `Idempotency-Key` that is not one.
             */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The calling client has no webhook with this id. */
            404: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still running; retry later. */
            409: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            /** @description The `Idempotency-Key` was used within 24 hours for another request. */
            422: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    enableWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The `hookId` returned when the webhook was attached. */
                hookID: components["parameters"]["HookID"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The webhook is enabled (or was not disabled). */
            200: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookSummary"];
                };
            };
            /** @description The hookID is missing, empty, `undefined`, `null` or not a positive integer. */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The calling client has no webhook with this id (never attached, detached, or another client's). */
            404: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Alive. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
        };
    };
    getReadiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description The database does not answer, or a failed fsync has stopped its writes. */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listEvents: {
        parameters: {
            query?: {
                /** @description Only events of this type. */
                type?: components["schemas"]["EventName"];
                /** @description Events per page. */
                limit?: number;
                /** @description The `next` cursor of the previous page. */
                before?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of the client's events, newest first. */
            200: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventPage"];
                };
            };
            /**
             * @description `Invalid data: ...` for a `type` that is not an event name, or a `limit` or `before`
             *     out of range.
             */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    publishEvent: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description A key the caller chooses for this request, to retry it safely: a retry with the same key
                 *     and the same body within 24 hours gets the first answer again and changes nothing. Keys
                 *     are the calling client's own (the publisher's, for `POST /events`). A UUID will do.
                 */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PublishEvent"];
            };
        };
        responses: {
            /**
             * @description Accepted and stored; `deliveries` is the number of webhooks it will go to. With
             *     `idempotent-replayed: true`, this is the answer given to an earlier request with the
             *     same `Idempotency-Key`: nothing new was stored or will be delivered.
             */
            202: {
                headers: {
                    /** @description `true` on the stored answer of an earlier request with the same `Idempotency-Key`; absent otherwise. */
                    "idempotent-replayed"?: components["schemas"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventAccepted"];
                };
            };
            /**
             * @description `Missing data` when the body is absent or not a JSON object, or `clientId`, `type` or
             *     `data` is absent or `null`; `Invalid data: ...` when one of them is of the wrong kind,
             *     when the `Idempotency-Key` header is malformed, or when the body nests objects and
             *     arrays more than 64 levels deep (see Errors above).
             */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /**
             * @description The bearer token is missing or wrong, or publishing is disabled because the server has
             *     no `PUBLISHER_TOKEN` configured.
             */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /**
             * @description No client has this `clientId`. Stored under the request's `Idempotency-Key` like a
             *     success.
             */
            404: {
                headers: {
                    /** @description `true` on the stored answer of an earlier request with the same `Idempotency-Key`; absent otherwise. */
                    "idempotent-replayed"?: components["schemas"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /**
             * @description A request with the same `Idempotency-Key` is still running (in this process or
             *     another). Retry once it has answered, to get its answer.
             */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than `PUBLISHER_BODY_LIMIT`. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A body was sent with a content type other than JSON. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /**
             * @description The `Idempotency-Key` was used, within the last 24 hours, for a request with another
             *     body. Nothing was done; use a new key for a new event.
             */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            429: components["responses"]["AuthenticationsLimited"];
            /** @description An unexpected failure. Details go to the server's log, never to the caller. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            503: components["responses"]["Unavailable"];
        };
    };
    publishEvents: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description A key the caller chooses for this request, to retry it safely: a retry with the same key
                 *     and the same body within 24 hours gets the first answer again and changes nothing. Keys
                 *     are the calling client's own (the publisher's, for `POST /events`). A UUID will do.
                 */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PublishEventBatch"];
            };
        };
        responses: {
            /**
             * @description Accepted and stored: one result per item of `events`, in order. With
             *     `idempotent-replayed: true`, the answer given to an earlier request with the same
             *     `Idempotency-Key`: nothing new was stored.
             */
            202: {
                headers: {
                    /** @description `true` on the stored answer of an earlier request with the same `Idempotency-Key`; absent otherwise. */
                    "idempotent-replayed"?: components["schemas"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventBatchAccepted"];
                };
            };
            /**
             * @description `Missing data` when the body is absent, not a JSON object, or `events` is absent,
             *     `null` or empty; `Invalid data: ...` when `events` is not an array of 1 to 1000
             *     items, when an item is not what `POST /events` takes (the message names the item:
             *     `Invalid data: events[3].type must be one of lead_create, lead_update`), or when the
             *     `Idempotency-Key` header is malformed. Nothing is stored.
             */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The bearer token is missing or wrong, or publishing is disabled (no `PUBLISHER_TOKEN`). */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A request with the same `Idempotency-Key` is still running. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than `PUBLISHER_BATCH_BODY_LIMIT`. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A body was sent with a content type other than JSON. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The `Idempotency-Key` was used, within the last 24 hours, for another body. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            429: components["responses"]["AuthenticationsLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    listEventTypes: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The event types, lead events then operational events, in the order of `WebhookEventName`. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventTypeList"];
                };
            };
            500: components["responses"]["InternalError"];
        };
    };
    listClientOperationalEvents: {
        parameters: {
            query?: {
                /** @description The `next` of the previous page; events after it. `0`, or absent, starts the list at the oldest kept. */
                after?: number;
                /** @description Events per page. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of the client's operational events, oldest first. */
            200: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OperationalEventPage"];
                };
            };
            /** @description `Invalid data: ...` for an `after` or `limit` out of range. */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    listOperationalEvents: {
        parameters: {
            query?: {
                /** @description The `next` of the previous page; events after it. `0`, or absent, starts the list at the oldest kept. */
                after?: number;
                /** @description Events per page. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of operational events, oldest first. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OperationalEventPage"];
                };
            };
            /** @description `Invalid data: ...` for an `after` or `limit` out of range. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /**
             * @description The bearer token is missing or wrong, or the server has no `PUBLISHER_TOKEN`
             *     configured.
             */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            429: components["responses"]["AuthenticationsLimited"];
            /** @description An unexpected failure. Details go to the server's log, never to the caller. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            503: components["responses"]["Unavailable"];
        };
    };
    listAccounts: {
        parameters: {
            query?: {
                /** @description The `next` of the previous page; clients after it; `0`, or absent, starts at the first. */
                after?: number;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of clients. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AccountPage"];
                };
            };
            400: components["responses"]["AdminInvalid"];
            401: components["responses"]["AdminUnauthorized"];
            429: components["responses"]["AuthenticationsLimited"];
            500: components["responses"]["AdminInternal"];
            503: components["responses"]["Unavailable"];
        };
    };
    createAccount: {
        parameters: {
            query?: never;
            header?: {
                /**
                 * @description A key the caller chooses for this request, to retry it safely: a retry with the same key
                 *     and the same body within 24 hours gets the first answer again and changes nothing. Keys
                 *     are the calling client's own (the publisher's, for `POST /events`). A UUID will do.
                 */
                "Idempotency-Key"?: components["parameters"]["IdempotencyKey"];
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AccountCreate"];
            };
        };
        responses: {
            /** @description The client, with its first API key (shown once). */
            201: {
                headers: {
                    "idempotent-replayed"?: components["schemas"]["IdempotentReplayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AccountCreated"];
                };
            };
            400: components["responses"]["AdminInvalid"];
            401: components["responses"]["AdminUnauthorized"];
            /** @description A request with the same `Idempotency-Key` is still running; retry once it has answered. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            /** @description The `Idempotency-Key` was used with another body. */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            429: components["responses"]["AuthenticationsLimited"];
            500: components["responses"]["AdminInternal"];
            503: components["responses"]["Unavailable"];
        };
    };
    getAccount: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The client's id (`clientId`). */
                clientId: components["parameters"]["ClientID"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The client. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Account"];
                };
            };
            400: components["responses"]["AdminInvalid"];
            401: components["responses"]["AdminUnauthorized"];
            404: components["responses"]["AccountNotFound"];
            429: components["responses"]["AuthenticationsLimited"];
            500: components["responses"]["AdminInternal"];
            503: components["responses"]["Unavailable"];
        };
    };
    updateAccount: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The client's id (`clientId`). */
                clientId: components["parameters"]["ClientID"];
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AccountUpdate"];
            };
        };
        responses: {
            /** @description The client as it is now. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Account"];
                };
            };
            400: components["responses"]["AdminInvalid"];
            401: components["responses"]["AdminUnauthorized"];
            404: components["responses"]["AccountNotFound"];
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["AuthenticationsLimited"];
            500: components["responses"]["AdminInternal"];
            503: components["responses"]["Unavailable"];
        };
    };
    listAccountKeys: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The client's id (`clientId`). */
                clientId: components["parameters"]["ClientID"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The client's keys, oldest first, revoked ones too. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AccountKeyList"];
                };
            };
            400: components["responses"]["AdminInvalid"];
            401: components["responses"]["AdminUnauthorized"];
            404: components["responses"]["AccountNotFound"];
            429: components["responses"]["AuthenticationsLimited"];
            500: components["responses"]["AdminInternal"];
            503: components["responses"]["Unavailable"];
        };
    };
    createAccountKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The client's id (`clientId`). */
                clientId: components["parameters"]["ClientID"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The new key (shown once). */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AccountKeyCreated"];
                };
            };
            400: components["responses"]["AdminInvalid"];
            401: components["responses"]["AdminUnauthorized"];
            404: components["responses"]["AccountNotFound"];
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["AuthenticationsLimited"];
            500: components["responses"]["AdminInternal"];
            503: components["responses"]["Unavailable"];
        };
    };
    revokeAccountKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The client's id (`clientId`). */
                clientId: components["parameters"]["ClientID"];
                /** @description The key's id (`keyId`). */
                keyId: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Revoked; the next request with the key is refused, on every server. */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            400: components["responses"]["AdminInvalid"];
            401: components["responses"]["AdminUnauthorized"];
            /** @description `Client not found`, or `Key not found` (not one of this client's active keys). */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["AuthenticationsLimited"];
            500: components["responses"]["AdminInternal"];
            503: components["responses"]["Unavailable"];
        };
    };
    createPortalLink: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The client's id (`clientId`). */
                clientId: components["parameters"]["ClientID"];
            };
            cookie?: never;
        };
        /** @description `{}` for a link that expires in 10 minutes. */
        requestBody: {
            content: {
                "application/json": components["schemas"]["PortalLinkCreate"];
            };
        };
        responses: {
            /** @description The link. It works once, until `expiresAt`. */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PortalLink"];
                };
            };
            400: components["responses"]["AdminInvalid"];
            401: components["responses"]["AdminUnauthorized"];
            404: components["responses"]["AccountNotFound"];
            /** @description `Client is inactive`: its keys are refused, and so would its portal session be. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["AuthenticationsLimited"];
            500: components["responses"]["AdminInternal"];
            503: components["responses"]["Unavailable"];
        };
    };
    listAuditLog: {
        parameters: {
            query?: {
                /** @description Only the entries of this client (account). */
                clientId?: number;
                /** @description Only entries written at or after this time (RFC 3339). */
                since?: string;
                /** @description Only entries written before this time (RFC 3339); later than `since`. */
                until?: string;
                /** @description The `next` of the previous page; entries older than it. */
                before?: number;
                /** @description Entries per page. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of entries, newest first. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuditLogPage"];
                };
            };
            /** @description `Invalid data: ...` for a parameter that does not match this description, or an `until` not later than `since`. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["AdminUnauthorized"];
            429: components["responses"]["AuthenticationsLimited"];
            500: components["responses"]["AdminInternal"];
            503: components["responses"]["Unavailable"];
        };
    };
    eraseLead: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["LeadErasureRequest"];
            };
        };
        responses: {
            /** @description What was erased. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LeadErasure"];
                };
            };
            400: components["responses"]["AdminInvalid"];
            401: components["responses"]["AdminUnauthorized"];
            404: components["responses"]["AccountNotFound"];
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["AuthenticationsLimited"];
            500: components["responses"]["AdminInternal"];
            503: components["responses"]["Unavailable"];
        };
    };
    openPortalSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["PortalSessionOpen"];
            };
        };
        responses: {
            /** @description The session. */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PortalSession"];
                };
            };
            /** @description `Invalid data: ...`: the body does not match this description. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /**
             * @description `This portal link was already used`, `This portal link has expired` or
             *     `This portal link is not valid`.
             */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `Client is inactive`: its client was made inactive after the link was made; the link stays unused. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
    endPortalSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The session has ended; its key is refused from now on. */
            204: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `Not a portal session`: the key is an ordinary API key. */
            400: {
                headers: {
                    "x-ratelimit-limit"?: components["schemas"]["RateLimitLimit"];
                    "x-ratelimit-remaining"?: components["schemas"]["RateLimitRemaining"];
                    "x-ratelimit-reset"?: components["schemas"]["RateLimitReset"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            413: components["responses"]["TooLarge"];
            415: components["responses"]["UnsupportedMediaType"];
            429: components["responses"]["RateLimited"];
            500: components["responses"]["InternalError"];
            503: components["responses"]["Unavailable"];
        };
    };
}
