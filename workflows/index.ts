export { ping } from './ping';
export { runTask } from './run-task';
export { reconcileRuns } from './reconcile';
export { retainRuns } from './retention';
export { deliverWebhook } from './webhook-delivery';
export { scheduledRun } from './scheduled-run';
export { runEval } from './eval';
