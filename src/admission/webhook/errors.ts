// The two ways a webhook call goes wrong, as kube's util/webhook/error.go tells them apart:
// the call itself failed (transport, TLS, a bad response: the hook's failurePolicy decides),
// or the webhook answered and denied (always a rejection). Each carries the Status that the
// metrics label with its code.
//
// Thread ownership: none (values).
import { StatusError, goQuote } from '../../errors.js';

/** kube's ErrCallingWebhook. `status` is what the metrics count (kube's Status field). */
export class CallingWebhookError extends Error {
  constructor(
    readonly webhook: string,
    /** the reason, as Go's error text ("failed to call webhook: Post ...") */
    readonly reason: string | undefined,
    readonly status: StatusError,
  ) {
    super(reason !== undefined ? `failed calling webhook ${goQuote(webhook)}: ${reason}` : `failed calling webhook ${goQuote(webhook)}; no further details available`);
  }
}

/** kube's ErrWebhookRejection: the webhook said no. */
export class WebhookRejection extends Error {
  constructor(readonly status: StatusError) {
    super(status.message);
  }
}
