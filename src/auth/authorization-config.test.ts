import { describe, it, expect } from 'vitest';
import { parseAuthorizationConfig } from './authorization-config.js';

const head = 'apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n';

describe('AuthorizationConfiguration', () => {
  it('parses a chain with a webhook, its TTLs, failurePolicy and matchConditions', () => {
    const entries = parseAuthorizationConfig(
      head +
        `authorizers:
- type: Webhook
  name: hook
  webhook:
    timeout: 3s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: Deny
    authorizedTTL: 1m
    unauthorizedTTL: 10s
    connectionInfo: {type: KubeConfigFile, kubeConfigFile: /etc/hook.kubeconfig}
    matchConditions:
    - expression: has(request.resourceAttributes)
- {type: Node, name: node}
- {type: RBAC, name: rbac}
`,
    );
    expect(entries.map((e) => e.type)).toEqual(['Webhook', 'Node', 'RBAC']);
    expect(entries[0].webhook).toMatchObject({ timeoutSeconds: 3, authorizedTtlSeconds: 60, unauthorizedTtlSeconds: 10, failurePolicy: 'Deny', kubeConfigFile: '/etc/hook.kubeconfig' });
  });
  it("refuses what kube's validation refuses, with its field paths", () => {
    const bad = (body: string) => {
      try {
        parseAuthorizationConfig(head + body);
      } catch (e: any) {
        return e.message as string;
      }
      return '';
    };
    expect(bad('authorizers: []\n')).toBe('authorizers: Required value: at least one authorization mode must be defined');
    expect(bad('authorizers:\n- {type: RBAC, name: a}\n- {type: RBAC, name: b}\n')).toBe('authorizers[1].type: Duplicate value: "RBAC"');
    expect(bad('authorizers:\n- {type: Foo, name: a}\n')).toContain('authorizers[0].type: Unsupported value: "Foo"');
    expect(bad('authorizers:\n- {type: Webhook, name: a}\n')).toBe('authorizers[0].webhook: Required value: required when type=Webhook');
    const hook = (w: string) => bad(`authorizers:\n- type: Webhook\n  name: a\n  webhook: {${w}}\n`);
    expect(hook('timeout: 40s, subjectAccessReviewVersion: v1, failurePolicy: Deny, authorizedTTL: 1s, unauthorizedTTL: 1s, connectionInfo: {type: KubeConfigFile, kubeConfigFile: /x}')).toBe(
      'authorizers[0].webhook.timeout: Invalid value: "40s": must be > 0s and <= 30s',
    );
    expect(hook('timeout: 1s, subjectAccessReviewVersion: v1, failurePolicy: Maybe, authorizedTTL: 1s, unauthorizedTTL: 1s, connectionInfo: {type: KubeConfigFile, kubeConfigFile: /x}')).toContain('failurePolicy: Unsupported value: "Maybe"');
    expect(
      hook('timeout: 1s, subjectAccessReviewVersion: v1, matchConditionSubjectAccessReviewVersion: v1, failurePolicy: Deny, authorizedTTL: 1s, unauthorizedTTL: 1s, connectionInfo: {type: KubeConfigFile, kubeConfigFile: /x}, matchConditions: [{expression: "request.user +"}]'),
    ).toContain('authorizers[0].webhook.matchConditions[0].expression: Invalid value: "request.user +": compilation failed');
  });
});
