import crypto from 'node:crypto';
import type { Logger } from '../logger';
import type { Models } from '../store/models';

/**
 * How often a profile's tasks are read for a change while some client in this process follows it: a task saved or
 * deleted through any API process reaches the `GET` streams of every process within this bound (docs/mcp.md).
 */
export const TOOLS_POLL_MS = 2_000;

/**
 * One poll per followed profile in this process, shared by its streams: the profile's task names and versions, read
 * every TOOLS_POLL_MS; a change calls every subscriber. The first read only sets what "unchanged" is.
 */
export function createToolWatch(models: Models, logger: Logger, pollMs = TOOLS_POLL_MS) {
  const watches = new Map<string, { listeners: Set<() => void>; timer: NodeJS.Timeout; last?: string }>();

  const fingerprint = async (owner: string, profile: string) => {
    const tasks = await models.Task.find({ owner, profile }, { name: 1, version: 1 }).sort({ name: 1 }).lean<Array<{ name: string; version: number }>>();
    return crypto.createHash('sha1').update(tasks.map((t) => `${t.name}@${t.version}`).join('\n')).digest('base64url');
  };

  return {
    /** Calls `changed` whenever the tools of `owner`'s `profile` change; returns the function that stops it. */
    subscribe(owner: string, profile: string, changed: () => void): () => void {
      const key = `${owner}\n${profile}`;
      let watch = watches.get(key);
      if (!watch) {
        const created: { listeners: Set<() => void>; timer: NodeJS.Timeout; last?: string } = {
          listeners: new Set(),
          timer: setInterval(() => {
            fingerprint(owner, profile).then(
              (now) => {
                const before = created.last;
                created.last = now;
                if (before !== undefined && before !== now) for (const listener of [...created.listeners]) listener();
              },
              (err: unknown) => logger.debug({ err, owner, profile }, 'could not read the tasks of a followed MCP profile; the next poll tries again'),
            );
          }, pollMs),
        };
        void fingerprint(owner, profile).then((now) => (created.last ??= now), () => undefined);
        watches.set(key, created);
        watch = created;
      }
      const joined = watch;
      joined.listeners.add(changed);
      return () => {
        joined.listeners.delete(changed);
        if (joined.listeners.size === 0) {
          clearInterval(joined.timer);
          if (watches.get(key) === joined) watches.delete(key);
        }
      };
    },
  };
}
