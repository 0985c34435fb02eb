import { expect } from 'chai';
import { getStack } from '../helpers/stack';
import { signedIn } from '../helpers/api';

/** A task's `settings.priority` on both path families (docs/fairness.md). */
describe('tasks: settings.priority', () => {
  const variants = () => {
    const { config } = getStack();
    return [
      { variant: 'A', path: (task: string) => `/api/profiles/~/default/tasks/${task}-a`, body: { runner: 'openai', openai: { prompt: 'Say {{ text }}', model: config.VARIANT_A_MODEL } } },
      { variant: 'B', path: (task: string) => `/api/tasks/~/default/${task}-b`, body: { runner: 'anthropic', anthropic: { prompt: 'Say {{ text }}', model: 'test-model' } } },
    ].map((v) => ({ ...v, key: 'sk-test-key-0123456789abcdef' }));
  };

  it('stores the priority with the task and shows it in reads; a task without one reads as before', async () => {
    const { api } = await signedIn('prio');
    for (const { variant, path, body, key } of variants()) {
      const saved = await api.put(path('high'), { ...body, settings: { key, priority: 1 } });
      expect(saved.status, saved.text).to.equal(201);
      expect(saved.body.settings, variant).to.deep.equal({ key_set: true, priority: 1 });
      expect((await api.get(path('high'))).body.settings, variant).to.deep.equal({ key_set: true, priority: 1 });

      const plain = await api.put(path('plain'), { ...body, settings: { key } });
      expect(plain.status, plain.text).to.equal(201);
      expect(plain.body.settings, variant).to.deep.equal({ key_set: true });

      // A save replaces it, as it does limits (the key, left out, is kept): the task is back to the default.
      const cleared = await api.put(path('high'), body);
      expect(cleared.status, cleared.text).to.equal(200);
      expect(cleared.body.settings, variant).to.deep.equal({ key_set: true });
    }
  });

  it('takes it in the short form too', async () => {
    const { api } = await signedIn('prio');
    const saved = await api.put('/api/tasks/~/default/short', { provider: 'anthropic', prompt: 'Say {{ text }}', settings: { key: 'sk-test-key-0123456789abcdef', priority: 5 } });
    expect(saved.status, saved.text).to.equal(201);
    expect(saved.body.settings).to.deep.equal({ key_set: true, priority: 5 });
  });

  it('answers 400 naming settings.priority for 0, 6, 2.5 and "high", and keeps nothing', async () => {
    const { api } = await signedIn('prio');
    for (const { variant, path, body, key } of variants()) {
      for (const priority of [0, 6, 2.5, 'high']) {
        const res = await api.put(path('bad'), { ...body, settings: { key, priority } });
        expect(res.status, `${variant} ${priority}: ${res.text}`).to.equal(400);
        expect(res.body.error.code).to.equal('invalid_request');
        expect(res.body.error.message, `${variant} ${priority}`).to.equal('settings.priority: expected a whole number from 1 (highest) to 5 (lowest)');
      }
      expect((await api.get(path('bad'))).status, variant).to.equal(404);
    }
  });
});
