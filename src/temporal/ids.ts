/**
 * Workflow ids. A run's workflow id is its identity, the same string as its record's _id (defined with the record,
 * store/runs.ts); other workflows' ids are made here.
 */
export { runWorkflowId } from '../contract/constants';
export type { RunIdentity } from '../contract/types';

/** The reconciler's schedule, one per task queue (each deployment reconciles the runs it starts). */
export const reconcileScheduleId = (taskQueue: string) => `reconcile-runs/${taskQueue}`;

/** The retention schedule, one per task queue (it exists only while RUN_RETENTION_DAYS is set). */
export const retentionScheduleId = (taskQueue: string) => `retain-runs/${taskQueue}`;

/** A task's schedule (docs/schedules.md): unique per namespace, and read back as the task and schedule it names. */
export interface TaskScheduleRef {
  owner: string;
  profile: string;
  task: string;
  schedule: string;
}
export const taskScheduleId = (s: TaskScheduleRef) => `schedule/${s.owner}/${s.profile}/${s.task}/${s.schedule}`;
/** The actions of a task's schedule (Temporal appends each action's time to it). */
export const scheduledRunWorkflowId = (s: TaskScheduleRef) => `scheduled-run/${s.owner}/${s.profile}/${s.task}/${s.schedule}`;
