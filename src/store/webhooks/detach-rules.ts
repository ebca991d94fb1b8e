// What detaching a webhook does to its row, written once for both stores: its client detaches it
// (the webhooks' statements beside this file), or a receiver's 410 Gone does (../deliveries/).

/**
 * What detaching a webhook does to its signing secrets and custom headers, in both stores (an
 * UPDATE's SET list): erased, as nothing is signed or sent with them any more. `secret` is NOT
 * NULL: an empty string.
 */
export const ERASE_SECRETS = "secret = '', previous_secret = NULL, previous_secret_until = NULL, headers = NULL";
