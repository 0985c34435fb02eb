/**
 * The one place workflow ids are made. A run's workflow id is its identity: names cannot contain "/"
 * (store/names.ts), so `run/<owner>/<profile>/<task>/<run>` is unambiguous and reads well in the Web UI.
 */
import type { RunIdentity } from '../../workflows/types';

export type { RunIdentity };

export const runWorkflowId = (id: RunIdentity) => `run/${id.owner}/${id.profile}/${id.task}/${id.run}`;
