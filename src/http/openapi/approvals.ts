import { z } from 'zod';
import { approvalsQuery, approvalsView } from '../routes/approvals/schema';
import { errors, user } from './common';
import type { Operation } from './operation';

/** Pending approvals across runs (docs/runs.md, "Approvals across runs"). */
export function approvalOperations(): Operation[] {
  return [
    {
      method: 'get',
      path: '/api/approvals/{user}',
      summary: 'Tool calls waiting for a decision, across runs',
      description:
        'Every run of the user that is `pending` on a tool call needing approval, oldest ask first; `?profile=` and `?task=` narrow it. Decide one with `POST <run_url>/approvals/<id>`. Clients skip a `kind` they do not know.',
      tags: ['runs'],
      session: true,
      params: { path: z.object({ user }), query: approvalsQuery },
      responses: {
        200: {
          description: 'The pending approvals',
          schema: approvalsView,
          examples: {
            one: {
              summary: 'One tool call waiting',
              value: {
                approvals: [
                  {
                    run_url: 'http://127.0.0.1:8080/api/runs/alice/default/greet/first',
                    kind: 'approval',
                    id: '4f6c1b9e-2d3a-4c8b-9e1f-0a7b6c5d4e3f',
                    tool: 'hello__greet',
                    arguments: { name: 'Ann' },
                    asked_at: '2026-11-27T09:15:02.481Z',
                  },
                ],
              },
            },
          },
        },
        ...errors({ 400: 'A bad `profile` or `task`', 404: 'Another user' }),
      },
    },
  ];
}
