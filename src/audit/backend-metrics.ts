// The audit backends, counted: apiserver_audit_event_total and apiserver_audit_level_total for
// the events handed over, apiserver_audit_error_total for those a backend failed to store
// (kube's audit/metrics.go ObserveEvent, ObservePolicyLevel, HandlePluginError).
//
// Thread ownership: the main thread (the backends run there; other front threads send their
// events to it, src/audit/remote-backend.ts, so each event is counted once for the process).
import type { Backend } from './backend.js';
import type { AuditEvent } from './event.js';
import type { ApiserverMetrics } from '../metrics/apiserver-metrics.js';

/** Counts the events a backend is given; `plugin` names it in apiserver_audit_error_total when it fails. */
export function countedBackend(b: Backend, m: ApiserverMetrics, plugin: string | null): Backend {
  const failed = (events: AuditEvent[], ok: boolean) => {
    if (!ok && plugin) m.auditError(plugin, events.length);
    return ok;
  };
  return {
    process(events) {
      if (!plugin) {
        for (const ev of events) {
          // the level is the request's: counted once, at its last stage
          m.auditEvent(ev.stage === 'ResponseComplete' || ev.stage === 'Panic' ? ev.level : undefined);
        }
      }
      let r: boolean | Promise<boolean>;
      try {
        r = b.process(events);
      } catch (err) {
        if (plugin) m.auditError(plugin, events.length);
        throw err;
      }
      return typeof r === 'boolean' ? failed(events, r) : r.then((ok) => failed(events, ok));
    },
    shutdown: () => b.shutdown(),
  };
}
