import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/**
 * The steps a workflow took, in order, as its history says: each activity it scheduled by type, and each local
 * activity (recorded as a `core_local_activity` marker, whose details name its type) as `local:<type>`.
 */
export function workflowSteps(events: HistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const activity = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (activity) return [activity];
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    const data = marker.details?.data?.payloads?.[0]?.data;
    if (!data) return ['local:?'];
    const { activity_type } = JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type?: string };
    return [`local:${activity_type ?? '?'}`];
  });
}
