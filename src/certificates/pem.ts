// PEM blocks as Go's encoding/pem reads them: a block is a BEGIN line and the first END line
// after it; when that END names another type the block is skipped and the search goes on
// after its BEGIN line. Scanned with indexOf and a forward-only END position, so a CSR's or
// certificate's text (user input, up to the object size limit) costs time linear in its
// length: a regular expression with a back-reference and a lazy body tried again from every
// BEGIN was quadratic (20,000 unmatched BEGIN lines held the front thread for 1.7 s).

export interface PemBlock {
  type: string;
  /** the text between the BEGIN and END lines (headers, if any, included) */
  body: string;
}

const BEGIN = '-----BEGIN ';
const END = '-----END ';
const DASHES = '-----';
const TYPE = /^[A-Z0-9 ]+$/;

/** The PEM blocks of text, in order (at most `max`). */
export function pemBlocks(text: string, max = Infinity): PemBlock[] {
  const out: PemBlock[] = [];
  let from = 0;
  let end = -2; // the first END at or after `from` (-1: none left)
  while (out.length < max) {
    const b = text.indexOf(BEGIN, from);
    if (b < 0) break;
    const typeEnd = text.indexOf(DASHES, b + BEGIN.length);
    const nl = text.indexOf('\n', b);
    // the BEGIN line: "-----BEGIN TYPE-----" then CRLF or LF
    const type = typeEnd < 0 ? '' : text.slice(b + BEGIN.length, typeEnd);
    let bodyStart = typeEnd + DASHES.length;
    if (text[bodyStart] === '\r') bodyStart++;
    if (typeEnd < 0 || (nl >= 0 && nl < typeEnd) || !TYPE.test(type) || text[bodyStart] !== '\n') {
      from = b + BEGIN.length;
      continue;
    }
    bodyStart++;
    if (end !== -1 && end < bodyStart) end = text.indexOf(END, bodyStart);
    if (end < 0) break; // no END after this BEGIN: none after any later one either
    const trailer = END + type + DASHES;
    if (text.startsWith(trailer, end)) {
      out.push({ type, body: text.slice(bodyStart, end) });
      from = end + trailer.length;
    } else from = b + BEGIN.length;
  }
  return out;
}
