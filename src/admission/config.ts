// --admission-control-config-file: kube's AdmissionConfiguration (apiserver.config.k8s.io/v1
// or v1alpha1, YAML or JSON), whose plugins[] give each plugin its configuration inline
// (`configuration`) or in a file (`path`, relative to the configuration file's directory).
// Read once at start (kube's admission.ReadAdmissionConfiguration): a file that cannot be
// read or decoded stops start-up. The two legacy unversioned formats (ImagePolicyWebhook's
// `imagePolicy`, PodNodeSelector's `podNodeSelectorPluginConfig`) are taken as kube takes them.
//
// Thread ownership: none (read at start; the result is immutable).
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';

const GROUP = 'apiserver.config.k8s.io';
const VERSIONS = new Set([`${GROUP}/v1`, `${GROUP}/v1alpha1`]);

export class AdmissionConfigError extends Error {}

function parseText(text: string): unknown {
  // YAML is a superset of JSON: one parser reads both
  return parseYaml(text);
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? `open ${path}: no such file or directory` : code === 'EACCES' ? `open ${path}: permission denied` : (e as Error).message;
    throw new AdmissionConfigError(`failed to read plugin config: unable to read admission control configuration from ${JSON.stringify(path)} [${why}]`);
  }
}

/**
 * The per-plugin configurations of the file at `path` (none: an empty map), each the parsed
 * object of its inline `configuration` or of the file its `path` names; a plugin listed
 * with neither gets undefined.
 */
export function readAdmissionConfiguration(path: string, pluginNames: readonly string[] = []): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (!path) return out;
  const text = readText(path);
  let doc: any;
  try {
    doc = parseText(text);
  } catch (e) {
    throw new AdmissionConfigError(`failed to read plugin config: ${(e as Error).message}`);
  }
  const obj = doc !== null && typeof doc === 'object' && !Array.isArray(doc) ? doc : {};
  const apiVersion = typeof obj.apiVersion === 'string' ? obj.apiVersion : '';
  const kind = typeof obj.kind === 'string' ? obj.kind : '';
  if (!apiVersion || !kind) {
    // the legacy files: the plugins that read an unversioned file read this one
    const legacy = 'imagePolicy' in obj || 'podNodeSelectorPluginConfig' in obj;
    if (!legacy) {
      // (kube's decoder looks for the kind first)
      const missing = !kind ? 'Kind' : 'apiVersion';
      throw new AdmissionConfigError(`failed to read plugin config: Object '${missing}' is missing in '${text.trim()}'`);
    }
    for (const name of pluginNames) if (name === 'ImagePolicyWebhook' || name === 'PodNodeSelector') out.set(name, obj);
    return out;
  }
  if (!VERSIONS.has(apiVersion) || kind !== 'AdmissionConfiguration') {
    throw new AdmissionConfigError(`failed to read plugin config: no kind "${kind}" is registered for version "${apiVersion}" in scheme "k8s.io/apiserver/pkg/server/options/admission.go:42"`);
  }
  const base = dirname(path);
  const plugins = Array.isArray(obj.plugins) ? obj.plugins : [];
  for (const p of plugins) {
    if (p === null || typeof p !== 'object' || typeof p.name !== 'string') continue;
    if (out.has(p.name)) continue; // kube takes the first entry of a name
    if (p.configuration !== undefined && p.configuration !== null) {
      out.set(p.name, p.configuration);
    } else if (typeof p.path === 'string' && p.path !== '') {
      const file = isAbsolute(p.path) ? p.path : join(base === '' ? process.cwd() : base, p.path);
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (e) {
        // kube exits (klog.Fatalf) on a plugin file it cannot open
        throw new AdmissionConfigError(`Couldn't open admission plugin configuration ${file}: ${(e as Error).message}`);
      }
      try {
        out.set(p.name, parseText(text));
      } catch (e) {
        throw new AdmissionConfigError(`failed to read plugin config: ${p.name}: ${(e as Error).message}`);
      }
    } else {
      out.set(p.name, undefined);
    }
  }
  return out;
}
