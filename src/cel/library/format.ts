// kube's format library (apiserver/pkg/cel/library/format.go): format.named(name) and
// format.<name>() give a Format; Format.validate(string) gives optional.none() for a valid
// value or optional.of(the list of kube's validation messages).
import type { Environment } from '@marcbachmann/cel-js';
import { Optional } from '@marcbachmann/cel-js';
import { def, namespace } from './def.js';
import { dns1123LabelErrors, dns1123SubdomainErrors, dns1035LabelErrors } from '../../registry/validation/field.js';
import { qualifiedNameErrors, labelValueErrors } from '../../registry/validation.js';

export class Format {
  static celTypeName = 'kubernetes.NamedFormat';
  constructor(
    readonly name: string,
    readonly check: (s: string) => string[],
  ) {}
  equals(o: unknown): boolean {
    return o instanceof Format && o.name === this.name;
  }
}

/** kube's maskTrailingDash: a prefix may end in '-' (a generateName) */
const prefix = (f: (s: string) => string[]) => (s: string) => f(s.length > 1 && s.endsWith('-') ? s.slice(0, -1) + 'a' : s);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const FORMATS: Record<string, (s: string) => string[]> = {
  dns1123Label: dns1123LabelErrors,
  dns1123Subdomain: dns1123SubdomainErrors,
  dns1035Label: dns1035LabelErrors,
  qualifiedName: qualifiedNameErrors,
  dns1123LabelPrefix: prefix(dns1123LabelErrors),
  dns1123SubdomainPrefix: prefix(dns1123SubdomainErrors),
  dns1035LabelPrefix: prefix(dns1035LabelErrors),
  labelValue: labelValueErrors,
  uri: (s) => {
    try {
      if (!s.startsWith('/')) new URL(s);
      return [];
    } catch {
      return [`invalid URI: parse "${s}": invalid URI for request`];
    }
  },
  uuid: (s) => (UUID.test(s) ? [] : ['does not match the UUID format']),
  byte: (s) => (/^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0 ? [] : ['invalid base64']),
  date: (s) => (/^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(s)) ? [] : ['invalid date']),
  datetime: (s) => (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s) && !Number.isNaN(Date.parse(s)) ? [] : ['invalid datetime']),
};

export function registerFormat(env: Environment): void {
  env.registerType('Format', Format as any);
  namespace(env, 'format', 'FormatNamespace');
  def(env, 'FormatNamespace.named(string): optional<Format>', (_n: unknown, name: string) =>
    FORMATS[name] ? Optional.of(new Format(name, FORMATS[name])) : Optional.none(),
  );
  for (const [name, check] of Object.entries(FORMATS)) {
    const f = new Format(name, check);
    def(env, `FormatNamespace.${name}(): Format`, () => f);
  }
  def(env, 'Format.validate(string): optional<list<string>>', (f: Format, s: string) => {
    const errs = f.check(s);
    return errs.length ? Optional.of(errs) : Optional.none();
  });
}
