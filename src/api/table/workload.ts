// Pieces that the printers of pod-template workloads share (replica sets, replication
// controllers, deployments, stateful sets, daemon sets, jobs, cron jobs, pod templates):
// the name cell, the wide Containers and Images columns, and the replica-count printer of
// replica sets and replication controllers, which kube prints alike but for the selector.
import { col, nameCol, ageCol, type KindPrinter, type TableColumn } from './types.js';
import { age, containerCells, int, str } from './format.js';

export const name = (o: any): string => str(o?.metadata?.name);

/** Replica counts default to 1 when spec.replicas is unset (apps/v1 and core/v1 alike). */
export const desiredReplicas = (o: any): number => (typeof o?.spec?.replicas === 'number' ? int(o.spec.replicas) : 1);

export const CONTAINERS = col('Containers', 'string', 'Names of the containers of the pod template.', 1);
export const IMAGES = col('Images', 'string', 'Images of the containers of the pod template.', 1);

/** The Containers and Images cells of a pod template (spec.template of most workloads). */
export function templateCells(template: any): [string, string] {
  return containerCells(template?.spec?.containers);
}

/**
 * Name, Desired, Current, Ready, Age, then the wide Containers, Images and Selector:
 * replica sets select by label selector, replication controllers by a plain label map.
 */
export function replicaCountPrinter(noun: string, selector: TableColumn, selectorCell: (sel: unknown) => string): KindPrinter {
  return {
    columns: [
      nameCol(`Name of the ${noun}.`),
      col('Desired', 'integer', 'Replicas wanted.'),
      col('Current', 'integer', 'Replicas that exist.'),
      col('Ready', 'integer', 'Replicas that are ready.'),
      ageCol(),
      CONTAINERS,
      IMAGES,
      selector,
    ],
    row(o, now) {
      const st = o?.status ?? {};
      const [names, images] = templateCells(o?.spec?.template);
      return { cells: [name(o), desiredReplicas(o), int(st.replicas), int(st.readyReplicas), age(o, now), names, images, selectorCell(o?.spec?.selector)] };
    },
  };
}
