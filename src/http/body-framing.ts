// A request body's framing, read from its headers as Go's net/http reads it, for the uWS
// front end: uWS lets through some framings Go refuses, one of which (conflicting
// Content-Length headers) would let a second request hide in the first one's body. (The
// node:http2 front end's parser refuses them itself.)

/** Go's answer to a request it cannot frame (no Status: its server writes it before any handler). */
const BAD_REQUEST = { status: 400, text: '400 Bad Request' };

/**
 * A body's framing as Go's net/http reads it: the declared length (-1 for chunked), or the
 * status and text it refuses it with. Repeated Content-Length headers (uWS passes them
 * joined by ", ") must agree, as uWS frames the body by the first: otherwise what the later
 * one counts as body would be parsed as a request of its own (request smuggling). A
 * Transfer-Encoding other than chunked is Go's 501.
 */
export function frameOf(contentLength: string | undefined, transferEncoding: string | undefined): number | { status: number; text: string } {
  if (transferEncoding !== undefined) {
    // (with a Content-Length too, uWS closes the connection before the transport sees it)
    return transferEncoding.trim().toLowerCase() === 'chunked' ? -1 : { status: 501, text: 'Unsupported transfer encoding' };
  }
  const values = contentLength!.split(',');
  const first = values[0].trim();
  for (let i = 1; i < values.length; i++) if (values[i].trim() !== first) return BAD_REQUEST;
  // (uWS itself closes the connection on a value that is not a plain number)
  return /^[0-9]{1,15}$/.test(first) ? Number(first) : BAD_REQUEST;
}
