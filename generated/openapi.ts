/**
 * GENERATED from openapi.yaml by `npm run generate` (openapi-typescript). Do not edit by hand:
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
    "/webhook": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
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
        get?: never;
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
        patch?: never;
        trace?: never;
    };
};
export type webhooks = Record<string, never>;
export type components = {
    schemas: {
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
         * @description A lead event a webhook can subscribe to.
         * @enum {string}
         */
        EventName: "lead_create" | "lead_update";
        WebhookCreate: {
            /**
             * @description Absolute http or https URL that deliveries are POSTed to.
             * @example https://hooks.zapier.com/hooks/standard/123/abc/
             */
            url: string;
            /**
             * @description The lead events to subscribe to; duplicates are stored once.
             * @example [
             *       "lead_create",
             *       "lead_update"
             *     ]
             */
            events: components["schemas"]["EventName"][];
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
             * @description The webhook's signing secret in Standard Webhooks form. Shown only in this response.
             * @example whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
             */
            secret: string;
        };
    };
    responses: {
        /** @description The `x-api-key` header is missing, empty, unknown or revoked. */
        Unauthorized: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description An unexpected failure. Details go to the server's log, never to the client. */
        InternalError: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
    };
    parameters: never;
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
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["About"];
                };
            };
            401: components["responses"]["Unauthorized"];
            500: components["responses"]["InternalError"];
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookCreate"];
            };
        };
        responses: {
            /** @description The webhook is attached. */
            201: {
                headers: {
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
             *     longer than 2048 characters, `events` not an array of `lead_create` / `lead_update`.
             */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description The body is larger than the server accepts. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body was sent with a content type other than JSON. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            500: components["responses"]["InternalError"];
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The `hookId` returned when the webhook was attached. */
                hookID: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The webhook is detached. The body is empty. */
            204: {
                headers: {
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
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            500: components["responses"]["InternalError"];
        };
    };
}
