import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];
/** What the workflow sandbox and the contract must not import. */
const sdks = ['openai', '@anthropic-ai/*', '@extism/*', 'mongoose', 'mustache', 'koa', '@koa/*', 'pino', 'undici', '@temporalio/client', '@temporalio/worker', '@temporalio/activity'];

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.data/**', '.venv/**', 'bench/results.json', 'test/fixtures/build/**', 'console/dist/**', 'console/generated/**', 'console/src/api/schema.d.ts'] },
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
    files: ['src/config.ts', 'test/helpers/env.ts', 'src/cli/dev.ts', 'src/cli/cluster.ts', 'bench/**', 'scripts/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    // Workflow code is replayed deterministically inside Temporal's sandbox: no I/O, no SDKs, nothing of src/ but the
    // contract (src/contract/, which needs no Node).
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Workflows must not use Node built-ins.' })),
          patterns: [
            { regex: '^(\\.\\./)+src/(?!contract/)', message: 'Workflows import the contract (src/contract/) and types, never the rest of src/.', allowTypeImports: true },
            { group: ['../activities', '../activities/*', '../activities/**'], message: 'Workflows import only activity types.', allowTypeImports: true },
            { group: sdks, message: 'Workflows must not use SDKs or clients; do it in an activity.' },
          ],
        },
      ],
    },
  },
  {
    // The contract is imported by the workflow sandbox, the activities, the store and the API: no Node, no clients, and
    // nothing of the project's but itself.
    files: ['src/contract/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'The contract must not use Node built-ins.' })),
          patterns: [
            { group: ['../*', '../**', '!./*'], message: 'The contract imports nothing of the project but itself.' },
            { group: sdks, message: 'The contract must not use SDKs or clients.' },
          ],
        },
      ],
    },
  },
  {
    // The store and the API take the run's types and messages from the contract, never from workflows/ (which imports
    // activity types, so that would make an import circle).
    files: ['src/store/**/*.ts', 'src/http/**/*.ts', 'src/runs/**/*.ts', 'src/temporal/**/*.ts', 'activities/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/workflows', '**/workflows/*', '**/workflows/**'], message: 'Import the contract (src/contract/), not workflows/.' }] },
      ],
    },
  },
);
