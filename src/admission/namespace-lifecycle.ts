// NamespaceLifecycle (kube's apiserver/pkg/admission/plugin/namespace/lifecycle): a create in
// a namespace that does not exist is a 404 for the namespace, one in a namespace being
// terminated a 403 with the NamespaceTerminating cause; the immortal namespaces (default,
// kube-system, kube-public) may not be deleted. First of kube's chain.
//
// Thread ownership: the front thread; reads the namespaces' cache.
import { errors, StatusError } from '../errors.js';
import { AdmissionPlugin, type Attributes, type ObjectSource } from './plugin.js';
import { UNDELETABLE } from '../registry/namespace-lifecycle.js';

export class NamespaceLifecycleAdmission extends AdmissionPlugin {
  readonly name = 'NamespaceLifecycle';

  /**
   * `lookup`: catches this thread's namespace cache up with storage, for a namespace the
   * cache lacks (one another front thread or replica just created), as kube's plugin asks
   * storage when its informer lacks the namespace.
   */
  constructor(
    objects: ObjectSource,
    private readonly lookup?: () => Promise<void>,
  ) {
    super(objects);
  }

  handles(a: Attributes): boolean {
    if (a.operation === 'DELETE') return a.groupResource.resource === 'namespaces' && a.groupResource.group === '';
    // (the server's subresource creates, eviction, binding and tokens, are not checked here;
    // nor access reviews, as kube: their answer would tell whether the namespace exists)
    return a.operation === 'CREATE' && a.info.namespaced && a.subresource === '' && !(a.groupResource.resource === 'localsubjectaccessreviews' && a.groupResource.group === 'authorization.k8s.io');
  }

  override admit(a: Attributes): void | Promise<void> {
    if (a.operation === 'DELETE') {
      if (UNDELETABLE.has(a.name)) throw errors.forbidden(a.groupResource, a.name, `namespaces "${a.name}" is forbidden: this namespace may not be deleted`);
      return;
    }
    if (this.objects.get('namespaces', '', a.namespace) === undefined && this.lookup) {
      return this.lookup().then(() => this.check(a));
    }
    this.check(a);
  }

  private check(a: Attributes): void {
    const ns = a.namespace;
    const nsObj = this.objects.get('namespaces', '', ns);
    if (!nsObj) throw errors.notFound({ group: '', resource: 'namespaces' }, ns);
    if (nsObj.status?.phase === 'Terminating' || nsObj.metadata?.deletionTimestamp) {
      const info = a.info;
      const name = a.obj?.metadata?.name ?? a.name;
      throw new StatusError(403, 'Forbidden', `${info.resource}${info.group ? '.' + info.group : ''} "${name}" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`, {
        name,
        ...(info.group ? { group: info.group } : {}),
        kind: info.resource,
        causes: [{ reason: 'NamespaceTerminating', message: `namespace ${ns} is being terminated`, field: 'metadata.namespace' }],
      });
    }
  }
}
