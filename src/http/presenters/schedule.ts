import { z } from 'zod';
import type { TaskSchedule } from '../../temporal/task-schedules';
import { timestamp } from './timestamp';

const timing = {
  cron: z.string().optional(),
  every: z.string().optional(),
  timezone: z.string().optional().meta({ description: 'With cron only' }),
  paused: z.boolean(),
};
const tail = {
  next_action_times: z.array(timestamp).meta({ description: 'The next three; none while paused' }),
  recent_runs: z.array(z.object({ name: z.string(), url: z.url(), scheduled_at: timestamp })),
  created_at: timestamp,
  modified_at: timestamp.meta({ description: 'Its last PUT; its creation until then' }),
};

/** A schedule on a Variant A path: its trigger data is `parameters` (the OpenAPI document's `ScheduleA`). */
export const scheduleViewA = z.object({ name: z.string(), ...timing, parameters: z.record(z.string(), z.string()), ...tail }).meta({ id: 'ScheduleA' });
/** A schedule on a Variant B path: its trigger data is `payload` (the OpenAPI document's `ScheduleB`). */
export const scheduleViewB = z.object({ name: z.string(), ...timing, payload: z.record(z.string(), z.unknown()), ...tail }).meta({ id: 'ScheduleB' });
export type ScheduleView = z.infer<typeof scheduleViewA> | z.infer<typeof scheduleViewB>;

/**
 * A schedule as its reads answer (docs/schedules.md). `data` names its trigger data as the path's variant does
 * (`parameters` on Variant A paths, `payload` on Variant B paths); `runUrl` gives a recent run's URL on that path.
 */
export function presentSchedule(s: TaskSchedule, data: 'parameters' | 'payload', runUrl: (run: string) => string): ScheduleView {
  const head = {
    name: s.name,
    ...(s.cron !== undefined ? { cron: s.cron, timezone: s.timezone ?? 'UTC' } : { every: s.every }),
    paused: s.paused,
  };
  const rest = {
    next_action_times: s.nextActionTimes.map((d) => d.toISOString()),
    recent_runs: s.recentRuns.map((r) => ({ name: r.run, url: runUrl(r.run), scheduled_at: r.scheduledAt.toISOString() })),
    created_at: s.createdAt.toISOString(),
    modified_at: s.modifiedAt.toISOString(),
  };
  // Variant A's trigger data was parsed as a flat map of strings (routes/schedules/schema.ts) and stored as it came.
  return data === 'parameters' ? { ...head, parameters: s.payload as Record<string, string>, ...rest } : { ...head, payload: s.payload, ...rest };
}
