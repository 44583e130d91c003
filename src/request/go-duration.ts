// Go's time.ParseDuration, for values clients send (the ?timeout= of a request): the same
// accepted forms ("1m30s", "-1.5h", "300ms", "2us", "2µs", a bare "0") and the same error
// texts, which kube-apiserver puts into its 400 answer.
//
// Thread ownership: none (pure functions).

/** nanoseconds per unit, as Go's unitMap */
const UNIT_NS: Record<string, number> = { ns: 1, us: 1e3, 'µs': 1e3, 'μs': 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** Go's strconv.Quote for the texts these errors carry (printable input is quoted as is). */
function quote(s: string): string {
  return JSON.stringify(s);
}

export class DurationError extends Error {}

/** The duration in seconds; throws a DurationError with Go's message for what Go refuses. */
export function parseGoDuration(s: string): number {
  const orig = s;
  let neg = false;
  if (s !== '' && (s[0] === '-' || s[0] === '+')) {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw new DurationError(`time: invalid duration ${quote(orig)}`);
  let totalNs = 0;
  while (s !== '') {
    // the number: digits, then perhaps a fraction; at least one digit in all
    let i = 0;
    while (i < s.length && s.charCodeAt(i) >= 48 && s.charCodeAt(i) <= 57) i++;
    const intPart = s.slice(0, i);
    let frac = '';
    if (i < s.length && s[i] === '.') {
      let j = i + 1;
      while (j < s.length && s.charCodeAt(j) >= 48 && s.charCodeAt(j) <= 57) j++;
      frac = s.slice(i + 1, j);
      i = j;
      if (intPart === '' && frac === '') throw new DurationError(`time: invalid duration ${quote(orig)}`);
    } else if (intPart === '') throw new DurationError(`time: invalid duration ${quote(orig)}`);
    s = s.slice(i);
    // the unit: everything up to the next digit or '.'
    let u = 0;
    while (u < s.length && s[u] !== '.' && !(s.charCodeAt(u) >= 48 && s.charCodeAt(u) <= 57)) u++;
    if (u === 0) throw new DurationError(`time: missing unit in duration ${quote(orig)}`);
    const unit = s.slice(0, u);
    const per = UNIT_NS[unit];
    if (per === undefined) throw new DurationError(`time: unknown unit ${quote(unit)} in duration ${quote(orig)}`);
    s = s.slice(u);
    totalNs += Number(intPart || '0') * per + (frac ? Number(`0.${frac}`) * per : 0);
    // Go's int64 nanoseconds overflow past about 292 years
    if (totalNs > 9223372036854775807) throw new DurationError(`time: invalid duration ${quote(orig)}`);
  }
  const seconds = totalNs / 1e9;
  return neg ? -seconds : seconds;
}
