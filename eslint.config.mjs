import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.data/**', '.venv/**', 'bench/results.json', 'test/fixtures/build/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Only src/config.ts reads process.env.' },
        // On Node 20 such a signal is held process-wide while a listener is on it, and the OpenAI SDK never removes its own.
        { object: 'AbortSignal', property: 'any', message: 'Use linkedAbort (activities/linked-abort.ts): a call’s signal must be collectable.' },
      ],
    },
  },
  {
    files: ['src/config.ts', 'test/helpers/env.ts', 'src/cli/dev.ts', 'bench/**', 'scripts/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    // Workflow code is replayed deterministically inside Temporal's sandbox: no I/O, no SDKs, no src/.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Workflows must not use Node built-ins.' })),
          patterns: [
            { group: ['../src/*', '../src/**', 'src/**'], message: 'Workflows import only types, never src/.', allowTypeImports: true },
            { group: ['../activities', '../activities/*', '../activities/**'], message: 'Workflows import only activity types.', allowTypeImports: true },
            {
              group: ['openai', '@anthropic-ai/*', '@extism/*', 'mongoose', 'mustache', 'koa', '@koa/*', 'pino', 'undici', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'],
              message: 'Workflows must not use SDKs or clients; do it in an activity.',
            },
          ],
        },
      ],
    },
  },
);
