// Table printers of apps/v1 and batch/v1 workloads. Column sets, order, priorities and
// cell values follow kube-apiserver 1.33; the descriptions are our own.
import { col, nameCol, ageCol, type KindPrinter } from './types.js';
import { age, boolPtr, formatLabelSelector, formatLabels, int, len, selectorString, since, str, timeOf } from './format.js';
import { humanDuration } from './duration.js';

import { CONTAINERS, IMAGES, desiredReplicas as replicas, name, replicaCountPrinter, templateCells } from './workload.js';

const SELECTOR = col('Selector', 'string', 'Label selector of the pods it manages.', 1);

export const deploymentPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the deployment.'),
    col('Ready', 'string', 'Ready pods out of the desired replicas.'),
    col('Up-to-date', 'string', 'Pods running the latest pod template.'),
    col('Available', 'string', 'Pods available to serve.'),
    ageCol(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  row(o, now) {
    const st = o?.status ?? {};
    const [names, images] = templateCells(o?.spec?.template);
    const sel = selectorString(o?.spec?.selector);
    return {
      cells: [name(o), `${int(st.readyReplicas)}/${replicas(o)}`, int(st.updatedReplicas), int(st.availableReplicas), age(o, now), names, images, sel === null ? '<invalid>' : sel],
    };
  },
};

export const replicaSetPrinter: KindPrinter = replicaCountPrinter('replica set', SELECTOR, formatLabelSelector);

export const statefulSetPrinter: KindPrinter = {
  columns: [nameCol('Name of the stateful set.'), col('Ready', 'string', 'Ready pods out of the desired replicas.'), ageCol(), CONTAINERS, IMAGES],
  row(o, now) {
    const [names, images] = templateCells(o?.spec?.template);
    return { cells: [name(o), `${int(o?.status?.readyReplicas)}/${replicas(o)}`, age(o, now), names, images] };
  },
};

export const daemonSetPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the daemon set.'),
    col('Desired', 'integer', 'Nodes that should run the daemon pod.'),
    col('Current', 'integer', 'Nodes that run at least one daemon pod.'),
    col('Ready', 'integer', 'Nodes whose daemon pod is ready.'),
    col('Up-to-date', 'integer', 'Nodes that run the latest pod template.'),
    col('Available', 'integer', 'Nodes whose daemon pod is available.'),
    col('Node Selector', 'string', 'Node labels the pods are restricted to.'),
    ageCol(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  row(o, now) {
    const st = o?.status ?? {};
    const [names, images] = templateCells(o?.spec?.template);
    return {
      cells: [
        name(o),
        int(st.desiredNumberScheduled),
        int(st.currentNumberScheduled),
        int(st.numberReady),
        int(st.updatedNumberScheduled),
        int(st.numberAvailable),
        formatLabels(o?.spec?.template?.spec?.nodeSelector),
        age(o, now),
        names,
        images,
        formatLabelSelector(o?.spec?.selector),
      ],
    };
  },
};

function jobCondition(conds: any[], type: string): boolean {
  const c = conds.find((x) => x?.type === type);
  return c?.status === 'True';
}

export const jobPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the job.'),
    col('Status', 'string', 'Complete, Failed, Terminating, Suspended, FailureTarget or Running.'),
    col('Completions', 'string', 'Succeeded pods out of the completions wanted.'),
    col('Duration', 'string', 'How long the job ran, or has been running.'),
    ageCol(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  row(o, now) {
    const spec = o?.spec ?? {};
    const st = o?.status ?? {};
    const succeeded = int(st.succeeded);
    let completions: string;
    if (typeof spec.completions === 'number') completions = `${succeeded}/${int(spec.completions)}`;
    else {
      const parallelism = int(spec.parallelism);
      completions = parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
    }
    let duration = '';
    const start = timeOf(st.startTime);
    if (start !== 0) {
      const end = timeOf(st.completionTime);
      duration = humanDuration((end !== 0 ? end : now) - start);
    }
    const conds: any[] = Array.isArray(st.conditions) ? st.conditions : [];
    let status = 'Running';
    if (jobCondition(conds, 'Complete')) status = 'Complete';
    else if (jobCondition(conds, 'Failed')) status = 'Failed';
    else if (o?.metadata?.deletionTimestamp) status = 'Terminating';
    else if (jobCondition(conds, 'Suspended')) status = 'Suspended';
    else if (jobCondition(conds, 'FailureTarget')) status = 'FailureTarget';
    const [names, images] = templateCells(spec.template);
    return { cells: [name(o), status, completions, duration, age(o, now), names, images, formatLabelSelector(spec.selector)] };
  },
};

export const cronJobPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the cron job.'),
    col('Schedule', 'string', 'Cron schedule of the job runs.'),
    col('Timezone', 'string', 'Time zone the schedule is read in.'),
    col('Suspend', 'boolean', 'Whether new runs are held back.'),
    col('Active', 'integer', 'Jobs of this cron job that are running.'),
    col('Last Schedule', 'string', 'Time since a job was last scheduled.'),
    ageCol(),
    CONTAINERS,
    IMAGES,
    SELECTOR,
  ],
  row(o, now) {
    const spec = o?.spec ?? {};
    const last = o?.status?.lastScheduleTime ? since(o.status.lastScheduleTime, now) : '<none>';
    const tpl = spec.jobTemplate?.spec ?? {};
    const [names, images] = templateCells(tpl.template);
    return {
      cells: [name(o), str(spec.schedule), typeof spec.timeZone === 'string' ? spec.timeZone : '<none>', boolPtr(spec.suspend), len(o?.status?.active), last, age(o, now), names, images, formatLabelSelector(tpl.selector)],
    };
  },
};

/**
 * The scale subresource (autoscaling/v1 Scale of deployments, replica sets, stateful sets,
 * replication controllers). Its Name column carries no "name" format, as in kube.
 */
export const scalePrinter: KindPrinter = {
  columns: [col('Name', 'string', 'Name of the scaled object.'), col('Desired', 'integer', 'Replicas wanted.'), col('Available', 'integer', 'Replicas observed.'), ageCol()],
  row: (o, now) => ({ cells: [name(o), int(o?.spec?.replicas), int(o?.status?.replicas), age(o, now)] }),
};
